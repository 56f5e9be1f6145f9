"""``mpslint review``: a pull-request review bot (GitHub "create a review" payloads, optional posting)."""
