"""``python -m mpslint`` (what lintrunner's ``command`` and pre-commit can call without a console script)."""

from mpslint.cli import main

if __name__ == "__main__":
    main()
