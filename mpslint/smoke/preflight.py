"""What a smoke run needs before it starts: a missing dependency is an error that names what to install,
never a `skipped` outcome (`skipped` is for what a kernel cannot be run for).

    problems = missing_dependencies(backend)   # [] when the run can start
"""
from __future__ import annotations

INSTALL_ALL = "pip install 'mpslint[smoke]' torch"


class SmokeEnvironmentError(RuntimeError):
    """The smoke runner cannot run at all here (a dependency is missing or unusable)."""


class SmokeRunError(RuntimeError):
    """The smoke runner itself failed on some files (an internal error, not a property of the kernels)."""


def torch_problem() -> str | None:
    """torch (inputs and CPU references) and its numpy bridge (buffer bytes), or why not."""
    try:
        import torch
    except Exception as e:                # ImportError, or a broken install raising anything
        return (f"torch is not importable ({type(e).__name__}: {e}); smoke runs build their inputs and CPU "
                "references with it: pip install torch")
    try:
        torch.zeros(1).numpy()
    except Exception as e:
        return (f"torch cannot hand tensors to numpy ({type(e).__name__}: {e}); smoke runs need numpy: "
                "pip install numpy")
    return None


def missing_dependencies(backend) -> list[str]:
    """Every reason the run cannot start on `backend` (empty when it can)."""
    out = []
    why = backend.unavailable()
    if why:
        out.append(why)
    t = torch_problem()
    if t:
        out.append(t)
    return out


def environment_message(problems: list[str]) -> str:
    return ("mpslint smoke cannot run: " + "; ".join(problems) +
            f" (everything a host-emulated run needs: {INSTALL_ALL})")
