"""Reporters turn findings into text; they never decide what is a finding."""

from __future__ import annotations

from collections.abc import Callable

FORMATS: dict[str, str] = {
    "text": "mpslint.reporters.text",
    "json": "mpslint.reporters.json_",
}


def get_reporter(name: str) -> Callable:
    import importlib

    return importlib.import_module(FORMATS[name]).render
