"""What PyTorch's device-independent code does before it calls a backend's dispatch stub.

A function registered with ``REGISTER_DISPATCH(stub, &fn)`` is called by core ATen (``stub(device, ...)``), code that
is not in the MPS tree mpslint reads. Some of those callers return before the stub when the input is empty, so an
MPS implementation of the stub never sees an empty tensor; host rules that ask "can an empty tensor reach this
launch?" (MPS110) would otherwise have to assume it can.

Each entry was read in PyTorch's sources (the function named is the only caller of the stub there) and holds for
every release with an MPS registration of that stub. Keep it short and exact: a stub missing here is judged as
reachable with any input, which is the safe default.
"""

from __future__ import annotations

# stub -> (core caller, the check it makes before calling the stub)
EMPTY_CHECKED_STUBS: dict[str, tuple[str, str]] = {
    # aten/src/ATen/native/BatchLinearAlgebra.cpp, TORCH_IMPL_FUNC(linalg_cholesky_ex_out):
    #   if (L.numel() == 0) { info.zero_(); return; }  ...  cholesky_stub(L.device().type(), L, info, upper);
    "cholesky_stub": ("linalg_cholesky_ex_out", "L.numel() == 0"),
}


# stub -> (core check, index of the stub implementation's tensor parameter that check makes square in its last two
# dimensions). aten/src/ATen/native/BatchLinearAlgebra.cpp, TORCH_META_FUNC(linalg_cholesky_ex):
#   at::native::squareCheckInputs(A, "linalg.cholesky"); ... set_output_strided(0, A_shape, ...)   (L has A's shape)
SQUARE_INPUT_STUBS: dict[str, tuple[str, int]] = {
    "cholesky_stub": ("squareCheckInputs(A) in linalg_cholesky_ex's meta function; L has A's shape", 0),
}


def square_inputs(stubs: set[str]) -> set[int]:
    """Parameter indices every stub in ``stubs`` is called with a square matrix (batch) at. Empty for no stub."""
    got = [{SQUARE_INPUT_STUBS[s][1]} if s in SQUARE_INPUT_STUBS else set() for s in stubs]
    return set.intersection(*got) if got else set()


def empty_checked_by_core(stubs: set[str]) -> bool:
    """Every stub in ``stubs`` (those a function is registered on) is called by core code only with non-empty
    input. False for an empty set: a function registered nowhere gets no such guarantee."""
    return bool(stubs) and all(s in EMPTY_CHECKED_STUBS for s in stubs)
