"""``mpslint audit``: where each op of native_functions.yaml stands between MPSGraph and native Metal.

classify.py decides, model.py holds the data, render_*.py print it (from plain dicts, so a report read back
from JSON renders the same), compare.py diffs two reports, cli.py is the click command. ``--history``: history.py audits each revision of a
git range read through gitread.py (git plumbing, no checkout); render_history.py prints it.
"""

from .classify import AuditError, run_audit  # noqa: F401
from .model import CLASSES, FAMILY_CLASSES, SCHEMA_VERSION  # noqa: F401
