"""Op families of native_functions.yaml and where each overload's MPS path goes.

Shared by the DSP rules and the migration auditor.
"""

from __future__ import annotations

from dataclasses import dataclass

from .facts.native_functions import NativeFunctions, Overload
from .graph import Route, mps_route


@dataclass(frozen=True)
class OverloadRoute:
    overload: Overload
    route: Route

    @property
    def own_mps(self) -> bool:
        """The MPS key is written on this overload itself (not reached through structured_delegate)."""
        return self.overload.group_for("MPS") is not None


def family_routes(natives: NativeFunctions) -> dict[str, list[OverloadRoute]]:
    fams: dict[str, list[OverloadRoute]] = {}
    for ov in natives.overloads:
        fams.setdefault(ov.family, []).append(OverloadRoute(ov, mps_route(ov, natives.by_name)))
    return fams


def shared_non_mps_kernel(ov: Overload) -> str | None:
    """The kernel CPU and CUDA share on this overload, which MPS could join (None for per-device kernels)."""
    cpu, cuda = ov.group_for("CPU"), ov.group_for("CUDA")
    if cpu is None or cuda is None or "MPS" in cpu.keys or cpu.kernel != cuda.kernel:
        return None
    return cpu.kernel


def leftovers(routes: list[OverloadRoute]) -> tuple[list[OverloadRoute], list[OverloadRoute]]:
    """(leftover MPS-specific overloads, migrated siblings) of one family; empty when not half-migrated."""
    shared = [r for r in routes if r.route.kind == "shared"]
    specific = [r for r in routes if r.route.kind == "mps_specific" and r.own_mps and shared_non_mps_kernel(r.overload)]
    if not shared or not specific:
        return [], []
    return specific, shared
