from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def torch_root() -> Path | None:
    """The installed torch wheel's site-packages directory, or None (tests using it skip)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).parent


@pytest.fixture(scope="session")
def torch_site() -> Path:
    root = torch_root()
    if root is None or not (root / "torchgen/packaged/ATen/native/native_functions.yaml").is_file():
        pytest.skip("torch (with torchgen) is not installed")
    return root


@pytest.fixture(scope="session")
def real_tree(torch_site: Path, tmp_path_factory) -> Path:
    """A PyTorch-shaped tree assembled from the wheel: the real yaml, c10/metal headers and mps headers."""
    base = tmp_path_factory.mktemp("real")
    native = base / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(torch_site / "torchgen/packaged/ATen/native/native_functions.yaml", native)
    shutil.copytree(torch_site / "torch/include/ATen/native/mps", native / "mps")
    shutil.copytree(torch_site / "torch/include/c10/metal", base / "c10/metal")
    common = torch_site / "torch/testing/_internal/common_mps.py"
    if common.is_file():
        (base / "torch/testing/_internal").mkdir(parents=True)
        shutil.copy(common, base / "torch/testing/_internal")
    return base


@pytest.fixture(autouse=True)
def _no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    os.environ.pop("GITHUB_STEP_SUMMARY", None)
