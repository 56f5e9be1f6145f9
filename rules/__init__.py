"""mpslint rules: one module per rule; each module docstring is the rule's documentation page."""
