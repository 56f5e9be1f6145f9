"""Coverage-guided fuzzing of mpslint's reading, masking and facts with atheris (libFuzzer for Python).

    pip install atheris
    python bench/fuzz_atheris.py -max_total_time=600 -artifact_prefix=bench/fuzz-crashes/ /tmp/mpslint-corpus fixtures/aten/src/ATen/native/mps

libFuzzer reads the seed inputs from the directories given (the fixtures are a good start; the first one is
also where it keeps the new interesting inputs it finds) and mutates them, guided by the coverage of the
instrumented ``mpslint`` modules.  Each input is linted as every kind of file (Metal, host, yaml,
common_mps.py) through the same checks as bench/fuzz.py (``check_input``: reading, masking invariants,
``project.file_facts``); set ``MPSLINT_ATHERIS_FULL=1`` to add the graph, every rule and the reporters on the
fixture project.  An exception is a crash: libFuzzer writes the input to ``<artifact_prefix>crash-<sha1>``
(replay it with ``python bench/fuzz_atheris.py that-file``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent

with atheris.instrument_imports(include=["mpslint"]):
    import mpslint.facts.cpp  # noqa: F401
    import mpslint.facts.host  # noqa: F401
    import mpslint.facts.macros  # noqa: F401
    import mpslint.facts.metal  # noqa: F401
    import mpslint.facts.native_functions  # noqa: F401
    import mpslint.facts.python_src  # noqa: F401
    import mpslint.masking  # noqa: F401
    import mpslint.project  # noqa: F401

_spec = importlib.util.spec_from_file_location("mpslint_bench_fuzz", HERE / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz
_spec.loader.exec_module(fuzz)

FULL = os.environ.get("MPSLINT_ATHERIS_FULL") == "1"
TARGETS = [
    ("aten/src/ATen/native/mps/kernels/UnaryKernel.metal", "metal"),
    ("aten/src/ATen/native/mps/operations/UnaryKernel.mm", "host"),
    ("aten/src/ATen/native/native_functions.yaml", "yaml"),
    ("aten/testing/common_mps.py", "common_mps"),
]


def test_one_input(data: bytes) -> None:
    for path, kind in TARGETS:
        fuzz.check_input(path, kind, data, full=FULL)


def main() -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
