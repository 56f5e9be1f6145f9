"""Where a file lives: inside a PyTorch checkout ("pytorch") or in an out-of-tree extension ("extension").

PyTorch's conventions (its ``ceil_div`` helpers, ``IF_CONSTEXPR``, dispatch stubs, the yaml and the xfail
lists) hold only inside PyTorch; hazards hold everywhere. Each rule says where it applies
(``Rule.contexts``) and the engine drops a rule's findings in files of another context.

Detection, per file, first answer wins:

1. ``[tool.mpslint] context = "pytorch" | "extension"`` (the configuration) decides for every file;
2. the path: under ``aten/src/ATen``, ``c10/metal`` or an installed ``include/ATen/native``, or some
   directory above the file holds ``aten/src/ATen`` and ``c10`` or ``torch`` (a PyTorch checkout: its
   ``test/`` and ``torch/`` too)
   -> pytorch; ``native_functions.yaml`` and ``common_mps.py`` are PyTorch's own files -> pytorch;
3. an extension's includes: any ``<torch/...>`` header (``<torch/extension.h>``, ``<torch/library.h>``,
   ``<torch/version.h>``, ``<torch/csrc/...>``), ExecuTorch's headers -> extension (torchao's ATen op
   includes ``ATen/native/mps/OperationUtils.h`` *and* ``torch/library.h``: it is an extension);
3b. operators registered in a library of its own (`TORCH_LIBRARY_IMPL(torchvision, MPS, m)`,
   `STABLE_TORCH_LIBRARY_IMPL(...)`, `TORCH_LIBRARY(myext, m)`): PyTorch registers MPS kernels of its own
   namespaces only (``aten``, ``prims``, ``quantized``, ...) -> extension (torchvision's MPS ops include only
   ``ATen/native/mps/OperationUtils.h`` and register ``torchvision::nms``);
4. PyTorch-internal includes (``ATen/native/...``, ``c10/metal/...``) -> pytorch: PyTorch's own file
   linted outside its checkout (a copy, a patch under review); but a header with only this signal that the
   project's extension files include, and no PyTorch file does, is the extension's (torchvision's
   ``mps_kernels.h``);
5. the public MPS API or an own metallib: calls into ``at::mps::`` / ``torch::mps::``,
   ``newLibraryWithData:`` / ``newLibraryWithURL:`` / ``newLibraryWithSource:`` / ``newLibraryWithFile:``
   -> extension;
6. no signal (a lone ``.metal`` with only ``<metal_stdlib>``, a helper header, Python with a
   ``compile_shader`` source): the file takes the context most signalled files of the project have
   (ties and projects without any signal: extension).

Why a file without any signal is an extension: inside PyTorch every file is found by rule 2 (mpslint
walks up to the checkout for the yaml the same way), so a file that reaches rule 6 was linted outside any
PyTorch checkout, where PyTorch's headers (``c10/metal/common.h``, ``OperationUtils.h``) are not on the
include path and advice built on them cannot be followed. The cost is asymmetric: calling an extension
file "pytorch" gives advice the author cannot use; calling a stray PyTorch file "extension" only
withholds convention findings (hazards are reported in both).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .project import Project

PYTORCH = "pytorch"
EXTENSION = "extension"
CONTEXTS = (PYTORCH, EXTENSION)
DEFAULT = EXTENSION  # a file with no signal in a project with no signal (see the module docstring)

# any public torch header (`torch/extension.h`, `torch/library.h`, `torch/version.h`, ...): PyTorch's ATen code
# never includes them outside a checkout, where rule 2 has already placed it
_EXT_INCLUDES = ("torch/", "executorch/")
_PYTORCH_INCLUDES = ("ATen/native/", "c10/metal/")
_PUBLIC_MPS_API = ("at::mps::", "torch::mps::")
_OWN_METALLIB = {"newLibraryWithData", "newLibraryWithURL", "newLibraryWithSource", "newLibraryWithFile"}
_PYTORCH_KINDS = {"yaml", "common_mps"}
_LIBRARY_MACROS = {"TORCH_LIBRARY", "TORCH_LIBRARY_IMPL", "TORCH_LIBRARY_FRAGMENT", "STABLE_TORCH_LIBRARY", "STABLE_TORCH_LIBRARY_IMPL", "STABLE_TORCH_LIBRARY_FRAGMENT"}
# the operator namespaces PyTorch itself registers kernels in
_CORE_NAMESPACES = {"aten", "prims", "quantized", "_quantized", "sparse", "mkldnn", "_test", "c10d", "_c10d_functional", "profiler", "inductor", "_inductor_test", "mps", "_"}


@dataclass(frozen=True)
class Detected:
    context: str
    reason: str  # what decided it, for --statistics and the docs


def _has_run(parts: tuple[str, ...], run: tuple[str, ...]) -> bool:
    n = len(run)
    return any(parts[i : i + n] == run for i in range(len(parts) - n + 1))


def _checkout_above(directory: str, memo: dict[str, bool] | None = None) -> bool:
    """Some directory at or above ``directory`` is a PyTorch checkout: it holds ``aten/src/ATen`` and
    ``c10`` or ``torch`` (a tree with only ``aten/src/ATen``, like mpslint's own fixtures, is not one)."""
    if memo is not None and directory in memo:
        return memo[directory]
    d = Path(directory)
    found = False
    for anc in [d, *d.parents]:
        try:
            if (anc / "aten" / "src" / "ATen").is_dir() and ((anc / "c10").is_dir() or (anc / "torch").is_dir()):
                found = True
                break
        except OSError:
            break
    if memo is not None:
        memo[directory] = found
    return found


def path_signal(path: str, fs_path: str | None = None, memo: dict[str, bool] | None = None) -> str | None:
    """"pytorch" when the path (or the filesystem above it) places the file inside PyTorch."""
    for p in {path, fs_path or path}:
        parts = PurePath(p).parts
        if _has_run(parts, ("aten", "src", "ATen")) or _has_run(parts, ("c10", "metal")) or _has_run(parts, ("include", "ATen", "native")):
            return "path under PyTorch's sources"
    real = fs_path or path
    if os.path.isabs(real) and _checkout_above(str(Path(real).parent), memo):
        return "inside a PyTorch checkout"
    return None


def _includes(facts) -> list[str]:
    """The headers a file names: host facts hold ``Include``s, Metal facts strings (no facts module is
    imported here: a warm run from the cache loads no parser)."""
    out: list[str] = []
    for m in facts if isinstance(facts, (list, tuple)) else [facts]:
        for inc in getattr(m, "includes", ()) or ():
            out.append(inc if isinstance(inc, str) else inc.header)
    return out


def _calls(facts):
    for fn in getattr(facts, "functions", ()) or ():
        yield from fn.calls


def _own_library(facts) -> str | None:
    """The namespace of an operator library the file registers in, when it is not one of PyTorch's own."""
    for fn in getattr(facts, "functions", ()) or ():
        if fn.name in _LIBRARY_MACROS and fn.params:
            ns = (fn.params[0].type or fn.params[0].name or "").strip()
            if ns and ns.isidentifier() and ns not in _CORE_NAMESPACES:
                return ns
    return None


def file_signal(path: str, facts, fs_path: str | None = None, kind: str | None = None, memo: dict[str, bool] | None = None) -> Detected | None:
    """Rules 2-5 of the module docstring; None when nothing in the file or its path says where it lives."""
    where = path_signal(path, fs_path, memo)
    if where:
        return Detected(PYTORCH, where)
    if kind in _PYTORCH_KINDS:
        return Detected(PYTORCH, "PyTorch's own file kind")
    includes = _includes(facts)
    ext = next((h for h in includes if h.startswith(_EXT_INCLUDES)), None)
    if ext:
        return Detected(EXTENSION, f"includes <{ext}>")
    lib = _own_library(facts)
    if lib:
        return Detected(EXTENSION, f"registers operators of its own library `{lib}`")
    internal = next((h for h in includes if h.startswith(_PYTORCH_INCLUDES)), None)
    if internal:
        return Detected(PYTORCH, f"includes <{internal}>")
    for call in _calls(facts):
        if call.callee.startswith(_PUBLIC_MPS_API):
            return Detected(EXTENSION, "calls the public at::mps/torch::mps API")
        if call.message_send and call.name in _OWN_METALLIB:
            return Detected(EXTENSION, "loads its own metallib")
    return None


def detect_context(path: str, facts, config_override: str | None = None, fs_path: str | None = None, kind: str | None = None) -> str:
    """The context of one file on its own: the override, else its signal, else the default (extension)."""
    if config_override in CONTEXTS:
        return config_override
    d = file_signal(path, facts, fs_path, kind)
    return d.context if d else DEFAULT


def _facts_of(project: "Project", path: str):
    if path in project.hosts:
        return project.hosts[path]
    if path in project.pythons:
        return project.pythons[path]
    return project.metals.get(path)


def project_contexts(project: "Project", config_override: str | None = None) -> dict[str, Detected]:
    """Every file's context (rules 1-6), computed once per project and override."""
    key = config_override
    cached = project.contexts_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    out: dict[str, Detected] = {}
    if config_override in CONTEXTS:
        out = {p: Detected(config_override, "configuration") for p in project.sources}
    else:
        fs_paths = project.fs_paths
        pending = []
        memo: dict[str, bool] = {}  # directory -> a checkout above it (one walk per directory and run)
        for path, src in project.sources.items():
            d = file_signal(path, _facts_of(project, path), fs_paths.get(path), src.kind, memo)
            if d is None:
                pending.append(path)
            else:
                out[path] = d
        _headers_follow_includers(project, out)
        votes = Counter(d.context for p, d in out.items() if project.sources[p].kind not in _PYTORCH_KINDS)
        inherited = PYTORCH if votes[PYTORCH] > votes[EXTENSION] else EXTENSION
        reason = f"no signal; the project's files are mostly {inherited}" if votes else "no signal (default)"
        for path in pending:
            out[path] = Detected(inherited, reason)
    project.contexts_cache = (key, out)
    return out


def _headers_follow_includers(project: "Project", out: dict[str, Detected]) -> None:
    """A header placed in PyTorch only by its PyTorch-internal includes (rule 4) that the project's extension
    files include, and no PyTorch file does, is the extension's own header (torchvision's ``mps_kernels.h``
    includes ``OperationUtils.h`` and holds the Metal source its ops compile)."""
    weak = [p for p, d in out.items() if d.context == PYTORCH and d.reason.startswith("includes <") and PurePath(p).suffix in (".h", ".hpp", ".cuh")]
    if not weak:
        return
    includers: dict[str, set[str]] = {}
    for path, d in out.items():
        for inc in _includes(_facts_of(project, path)):
            includers.setdefault(PurePath(inc).name, set()).add(d.context)
    for p in weak:
        by = includers.get(PurePath(p).name)
        if by == {EXTENSION}:
            out[p] = Detected(EXTENSION, "a header the project's extension files include")


def file_context(project: "Project", path: str, config_override: str | None = None) -> str:
    """The context of ``path`` in ``project`` (a path the project does not hold: the default)."""
    d = project_contexts(project, config_override if config_override is not None else project.context_override).get(path)
    return d.context if d else DEFAULT


def context_counts(project: "Project") -> dict[str, Counter]:
    """For --statistics: per context, how many linted files and why."""
    out: dict[str, Counter] = {}
    for path, d in sorted(project_contexts(project, project.context_override).items()):
        if path in project.linted:
            out.setdefault(d.context, Counter())[d.reason] += 1
    return out
