"""Session fixtures for the smoke-runner tests: one build cache and the fixture reports, computed once."""
from __future__ import annotations

from pathlib import Path

import pytest

from _smoke_helpers import FIXTURES, custom_references


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("smoke-cache")


@pytest.fixture(scope="session")
def good_report(smoke_cache):
    from mpslint.smoke.api import SmokeOptions, run_smoke
    refs = custom_references()
    return run_smoke(sorted((FIXTURES / "good").glob("*.metal")),
                     SmokeOptions(backend="host", jobs=2, timeout=5, cache_dir=smoke_cache, reference_for=refs.get))


@pytest.fixture(scope="session")
def bad_report(smoke_cache):
    from mpslint.smoke.api import SmokeOptions, run_smoke
    return run_smoke(sorted((FIXTURES / "bad").glob("*.metal")),
                     SmokeOptions(backend="host", jobs=2, timeout=1.5, cache_dir=smoke_cache))
