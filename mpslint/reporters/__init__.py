"""Reporters turn findings into text; they never decide what is a finding."""

from __future__ import annotations

from collections.abc import Callable

FORMATS: dict[str, str] = {
    "text": "mpslint.reporters.text",
    "json": "mpslint.reporters.json_",
    "jsonl": "mpslint.reporters.jsonl",
    "sarif": "mpslint.reporters.sarif",
    "github": "mpslint.reporters.github",
    "lintrunner": "mpslint.reporters.lintrunner",
    "rdjson": "mpslint.reporters.rdjson",
    "rdjsonl": "mpslint.reporters.rdjsonl",
    "junit": "mpslint.reporters.junit",
}


def get_reporter(name: str) -> Callable:
    import importlib

    return importlib.import_module(FORMATS[name]).render
