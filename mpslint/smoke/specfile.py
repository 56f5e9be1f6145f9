"""TOML launch specs: how to launch a kernel that no registration template describes, kept outside the
kernel's file (a spec library for PyTorch's kernels ships in `mpslint/smoke/specs/`; `--specs PATH` and
`[tool.mpslint] smoke-specs` add more).  An inline `mpslint-smoke:` comment in the .metal file wins.

    [[kernel]]
    name = "cumsum_{T}"                  # a host name; `*` and `{T}`/`{U}` (any Metal dtype name) are patterns,
                                         # `{K:u32|u64}` one of the listed words
    # cases = { K = { u32 = { I = "uint" }, u64 = { I = "ulong" } } }   # more placeholders per matched word
    variant = "rows"                     # several [[kernel]] tables of one name are several launches
    vars = { R = 6, C = 37 }             # names usable in every expression below
    grid = ["C", "R"]                    # threads (dispatchThreads) ...
    # groups = [4]                       # ... or threadgroups (dispatchThreadgroups)
    group = [32, 1]
    tgmem = [1024]                       # bytes of each [[threadgroup(n)]] argument, in order
    reference = "block_sum"              # optional: a named reference (reference.py / the reference_for hook)
    atol = 1e-5                          # optional tolerances (default: per dtype)
    rtol = 1e-5

    [[kernel.buffer]]                    # one table per [[buffer(n)]] parameter
    index = 0
    name = "x"
    dtype = "{T}"
    shape = ["R", "C"]                   # a buffer; sizes may use vars and numel/shape/strides/ndim of buffers
    init = "rand(-1, 1)"                 # zeros | ones | range | fill(v) | rand(lo, hi) | randint(lo, hi)
                                         # | randperm(k): each run of k elements a permutation of 0..k-1
                                         # | sorted(lo, hi, k): rand, ascending within each run of k

    [[kernel.buffer]]
    index = 1
    name = "out"
    dtype = "{T}"
    shape = ["R", "C"]
    out = true                           # read back and compared ...
    expect = "torch.cumsum(x, 1)"        # ... with this torch expression over the buffers' initial values
    compare = "[:, :]"                   # optional: the part of the output compared

    [[kernel.buffer]]
    index = 2
    name = "n"
    dtype = "uint"
    value = "C"                          # a scalar (constant T& / T by value)

    [[kernel.buffer]]
    index = 3
    name = "params"                      # a `constant` parameter struct, fields by name, in declaration order
    fields = [{ name = "sizes", type = "long[4]", value = "shape(x) + [1, 1]" },
              { name = "ndim", type = "uint", value = "ndim(x)" }]

A named `reference` receives the initial tensors of all buffers (index order) and returns the expected
tensors of the `out` buffers (index order); an `expect` expression gives one buffer's expected value.
"""
from __future__ import annotations

import fnmatch
import hashlib
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import dtypes, specexpr
from .spec import MAX_SPEC_BYTES, SpecArg, SpecError, make_tensor

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# complex32 (half2) buffers are made with torch, which warns on every one of them
warnings.filterwarnings("ignore", message="ComplexHalf support is experimental")
_PLACEHOLDER = re.compile(r"\{([A-Z]\w*)(?::([\w|]+))?\}")
_VEC = re.compile(r"^(float|half|int|uint|long|ulong|short|ushort|char|uchar|bool|bfloat)([234])$")
_ARRAY = re.compile(r"^(\w+)\[(\d+)\]$")
_KERNEL_KEYS = {"name", "variant", "vars", "grid", "groups", "group", "tgmem", "reference", "atol", "rtol",
                "buffer", "large", "note", "cases"}
_BUFFER_KEYS = {"index", "name", "dtype", "shape", "init", "out", "expect", "compare", "value", "fields", "note"}


@dataclass
class BufferDecl:
    index: int
    name: str
    dtype: str = ""
    shape: list = field(default_factory=list)
    init: str = ""
    out: bool = False
    expect: str = ""
    compare: str = ""
    value: object = None
    fields: list = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "struct" if self.fields else "scalar" if self.value is not None else "buffer"


@dataclass
class KernelDecl:
    name: str
    source: str                     # "path:kernel #n", for messages
    variant: str = ""
    vars: dict = field(default_factory=dict)
    grid: list = field(default_factory=list)
    mode: int = 0                   # 0: grid counts threads, 1: threadgroups
    group: list = field(default_factory=lambda: [1])
    tgmem: list = field(default_factory=list)
    reference: str = ""
    atol: float | None = None
    rtol: float | None = None
    buffers: list = field(default_factory=list)
    large: dict = field(default_factory=dict)
    cases: dict = field(default_factory=dict)   # placeholder -> its value -> more bindings ({I} = "uint", ...)
    error: str = ""

    def pattern(self) -> re.Pattern:
        out, pos = [], 0
        for m in _PLACEHOLDER.finditer(self.name):
            out.append(_glob(self.name[pos:m.start()]))
            alts = m.group(2).split("|") if m.group(2) else dtypes.NAMES
            out.append(f"(?P<{m.group(1)}>{'|'.join(re.escape(a) for a in alts)})")
            pos = m.end()
        out.append(_glob(self.name[pos:]))
        return re.compile("^" + "".join(out) + "$")

    def match(self, host_name: str) -> dict | None:
        m = self.pattern().match(host_name)
        if m is None:
            return None
        b = m.groupdict()
        for key, value in list(b.items()):
            b.update({k: str(v) for k, v in self.cases.get(key, {}).get(value, {}).items()})
        return b


def _glob(s: str) -> str:
    return fnmatch.translate(s)[4:-3] if s else ""   # "(?s:...)\\Z" -> the body


class SpecFileError(ValueError):
    pass


def load_file(path: Path) -> list[KernelDecl]:
    """Every [[kernel]] of a TOML spec file; a malformed table becomes a KernelDecl with `error` set."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise SpecFileError(f"{path}: cannot read the spec file: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecFileError(f"{path}: invalid TOML: {e}") from None
    kernels = data.get("kernel", [])
    if not isinstance(kernels, list):
        raise SpecFileError(f"{path}: `kernel` must be an array of tables ([[kernel]])")
    return [_kernel(k, f"{path}: [[kernel]] #{i + 1}") for i, k in enumerate(kernels)]


def _kernel(k, where: str) -> KernelDecl:
    if not isinstance(k, dict) or not isinstance(k.get("name"), str) or not k["name"]:
        return KernelDecl("", where, error=f"{where}: a [[kernel]] needs a `name`")
    d = KernelDecl(k["name"], f"{where} ({k['name']})")
    try:
        unknown = set(k) - _KERNEL_KEYS
        if unknown:
            raise SpecError(f"unknown keys {', '.join(sorted(unknown))}")
        if ("grid" in k) == ("groups" in k):
            raise SpecError("give exactly one of `grid` (threads) or `groups` (threadgroups)")
        d.variant = str(k.get("variant", ""))
        d.vars = dict(k.get("vars", {}))
        d.grid = _list(k.get("grid", k.get("groups")))
        d.mode = 1 if "groups" in k else 0
        d.group = _list(k.get("group", [1]))
        d.tgmem = k.get("tgmem", [])
        if not isinstance(d.tgmem, list):
            raise SpecError("`tgmem` is a list of byte sizes")
        d.reference = str(k.get("reference", ""))
        d.atol = float(k["atol"]) if "atol" in k else None
        d.rtol = float(k["rtol"]) if "rtol" in k else None
        d.large = dict(k.get("large", {}))
        d.cases = dict(k.get("cases", {}))
        seen = set()
        for b in k.get("buffer", []):
            bd = _buffer(b)
            if bd.index in seen:
                raise SpecError(f"buffer({bd.index}) is declared twice")
            seen.add(bd.index)
            d.buffers.append(bd)
        d.buffers.sort(key=lambda b: b.index)
    except (SpecError, TypeError, ValueError) as e:
        d.error = f"{d.source}: {e}"
    return d


def _list(v) -> list:
    if isinstance(v, (int, str)):
        return [v]
    if not isinstance(v, list) or not 1 <= len(v) <= 3:
        raise SpecError(f"expected 1 to 3 sizes, got {v!r}")
    return v


def _buffer(b) -> BufferDecl:
    if not isinstance(b, dict) or not isinstance(b.get("index"), int) or not isinstance(b.get("name"), str):
        raise SpecError(f"a [[kernel.buffer]] needs an integer `index` and a `name`: {b!r}")
    unknown = set(b) - _BUFFER_KEYS
    if unknown:
        raise SpecError(f"buffer({b['index']}): unknown keys {', '.join(sorted(unknown))}")
    bd = BufferDecl(b["index"], b["name"], str(b.get("dtype", "")), list(b.get("shape", [])), str(b.get("init", "")),
                    bool(b.get("out", False)), str(b.get("expect", "")), str(b.get("compare", "")), b.get("value"),
                    list(b.get("fields", [])))
    kinds = sum(x for x in (bool(bd.shape), bd.value is not None, bool(bd.fields)))
    if kinds != 1:
        raise SpecError(f"buffer({bd.index}) `{bd.name}`: give exactly one of `shape`, `value` or `fields`")
    if bd.kind != "struct" and not bd.dtype:
        raise SpecError(f"buffer({bd.index}) `{bd.name}` needs a `dtype`")
    return bd


# ---------------------------------------------------------------- struct layout
def field_layout(type_name: str) -> tuple[str, int, int, int]:
    """(scalar dtype, element count, byte size, alignment) of a struct field type: a scalar (`uint`), a
    vector (`uint3`: 16 bytes, aligned like 4 lanes, as in Metal) or an array (`long[4]`)."""
    t = type_name.strip()
    am = _ARRAY.match(t)
    if am:
        base, n = field_layout(am.group(1)), int(am.group(2))
        scalar, lanes, size, align = base
        return scalar, lanes * n, size * n, align
    vm = _VEC.match(t)
    if vm:
        d = dtypes.lookup(vm.group(1))
        lanes = int(vm.group(2))
        slots = 4 if lanes == 3 else lanes
        return d.name, lanes, d.size * slots, d.size * slots
    d = dtypes.lookup(t)
    if d is None or d.kind == "complex":
        raise SpecError(f"unknown field type `{type_name}`")
    return d.name, 1, d.size, d.size


def pack_struct(fields: list, env: dict, bindings: dict | None = None) -> bytes:
    import torch
    out = bytearray()
    max_align = 1
    for f in fields:
        if not isinstance(f, dict) or "name" not in f or "type" not in f:
            raise SpecError(f"a struct field needs `name` and `type`: {f!r}")
        f = {**f, "type": _subst(str(f["type"]), bindings or {})}
        scalar, n, size, align = field_layout(f["type"])
        max_align = max(max_align, align)
        out += bytes((-len(out)) % align)
        v = specexpr.size(f.get("value", 0), env)
        vals = list(v) if isinstance(v, (list, tuple)) else [v]
        if _VEC.match(f["type"].strip()) and len(vals) == 1:
            vals = vals * n
        if len(vals) > n:
            raise SpecError(f"field `{f['name']}` ({f['type']}) holds {n} values, got {len(vals)}")
        vals = vals + [0] * (n - len(vals))
        d = dtypes.lookup(scalar)
        t = torch.tensor(vals, dtype=torch.float64 if d.kind == "float" else torch.int64).to(dtypes.to_torch(d))
        raw = t.view(torch.uint8).numpy().tobytes()
        vm = _VEC.match(f["type"].strip())
        if vm and int(vm.group(2)) == 3:
            raw += bytes(d.size)                            # the fourth (padding) lane
        elif _ARRAY.match(f["type"].strip()) and _VEC.match(_ARRAY.match(f["type"].strip()).group(1)):
            raise SpecError("arrays of vectors are not supported in spec structs")
        out += raw
        assert len(raw) == size, (f, len(raw), size)
    out += bytes((-len(out)) % max_align)
    return bytes(out)


# ---------------------------------------------------------------- library lookup
BUILTIN_DIR = Path(__file__).resolve().parent / "specs"


@dataclass
class SpecLibrary:
    """Spec files in lookup order: --specs, [tool.mpslint] smoke-specs, then the shipped library."""
    files: list = field(default_factory=list)        # (path, [KernelDecl])
    errors: list = field(default_factory=list)       # unreadable / invalid files

    @classmethod
    def load(cls, paths: list, builtin: bool = True) -> "SpecLibrary":
        lib = cls()
        for p in _expand(paths) + (sorted(BUILTIN_DIR.glob("*.toml")) if builtin and BUILTIN_DIR.is_dir() else []):
            try:
                lib.files.append((p, load_file(p)))
            except SpecFileError as e:
                lib.errors.append(str(e))
        return lib

    def lookup(self, host_name: str) -> list[tuple[KernelDecl, dict]]:
        """Every [[kernel]] of the first file with a match (exact names before patterns), with the bindings."""
        for _path, decls in self.files:
            exact = [(d, {}) for d in decls if d.name == host_name]
            if exact:
                return exact
            found = []
            for d in decls:
                if not d.name:
                    continue
                b = d.match(host_name)
                if b is not None:
                    found.append((d, b))
            if found:
                return found
        return []


def _expand(paths: list) -> list[Path]:
    out = []
    for p in paths or []:
        p = Path(p)
        if p.is_dir():
            out.extend(sorted(p.rglob("*.toml")))
        else:
            out.append(p)
    return out


# ---------------------------------------------------------------- planning
@dataclass
class SpecOutput:
    index: int
    dtype: str
    shape: tuple
    select: object = None           # index object applied to the decoded output (the compared part)
    name: str = ""


def _init_args(init: str, env: dict) -> str:
    """`sorted(0, 60, E)`: the arguments of an init may be size expressions over vars (evaluated here)."""
    m = re.match(r"\s*(\w+)\((.*)\)\s*$", init)
    if not m or not m.group(2).strip():
        return init
    args = []
    for a in m.group(2).split(","):
        try:
            float(a)
            args.append(a.strip())
        except ValueError:
            args.append(repr(specexpr.size(a.strip(), env)))
    return f"{m.group(1)}({', '.join(args)})"


def _subst(text: str, bindings: dict) -> str:
    return _PLACEHOLDER.sub(lambda m: bindings.get(m.group(1), m.group(0)), text)



def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "little") & 0x7FFFFFFFFFFFFFFF


# large-index runs: a buffer bigger than this is mapped sparse (address space only) instead of being made
LARGE_DENSE_LIMIT = 64 * 1024 * 1024


def plan(entry: dict, decl: KernelDecl, bindings: dict, hook=None, large: bool = False):
    """A launch.Variant for `entry` from one [[kernel]] table (skip set, with the reason, on a spec error).
    large: the sizes of the table's [kernel.large] vars, big buffers mapped sparse, nothing compared."""
    import torch
    from .launch import Variant, tensor_bytes
    from .reference import Reference, resolve
    from .runner import BufferSpec, LaunchSpec
    host = entry["host_name"]
    v = Variant(host, decl.reference or host, "", "spec" + (f"/{decl.variant}" if decl.variant else ""),
                entry.get("path", ""), int(entry.get("line", 1)))
    if decl.error:
        v.skip = f"spec error: {decl.error}"
        return v
    try:
        env: dict = dict(bindings)      # the name's placeholders, as strings (`int(P)` in a size)
        for k, val in {**decl.vars, **(decl.large.get("vars", {}) if large else {})}.items():
            env[k] = specexpr.size(val, env)
        params = {p["role"]: p for p in entry.get("params", []) if 0 <= p["role"] < 1000}
        declared = {b.index for b in decl.buffers}
        missing = sorted(set(params) - declared)
        if missing:
            raise SpecError(f"the kernel's buffer({missing[0]}) is not bound by the spec")
        extra = sorted(declared - set(params))
        if extra and params:
            raise SpecError(f"the spec binds buffer({extra[0]}), which the kernel does not have")
        g = torch.Generator().manual_seed(_seed(host, decl.variant, "toml"))
        tensors, outs, datas = [], [], {}
        sparse: dict = {}            # buffer index -> (nbytes, element size, name)
        total = 0
        for b in decl.buffers:
            if b.kind == "struct":
                continue
            dt = dtypes.lookup(_subst(b.dtype, bindings))
            if dt is None:
                raise SpecError(f"buffer({b.index}) `{b.name}`: unknown dtype `{_subst(b.dtype, bindings)}`")
            if b.kind == "scalar":
                val = specexpr.size(b.value, env)
                t = torch.tensor([val], dtype=torch.float64 if dt.kind == "float" else torch.int64).to(
                    dtypes.to_torch(dt))
                env[b.name] = val
            else:
                shape = [int(x) for x in specexpr.size(b.shape, env)]
                n = 1
                for s in shape:
                    n *= s
                if large and n * dt.size > LARGE_DENSE_LIMIT:
                    env[b.name] = torch.empty(shape, dtype=dtypes.to_torch(dt), device="meta")
                    sparse[b.index] = (n * dt.size, dt.size, b.name)
                    continue
                total += n * dt.size
                if total > MAX_SPEC_BYTES:
                    raise SpecError(f"buffers of {total} bytes exceed the smoke run's limit of {MAX_SPEC_BYTES} "
                                    "bytes (large-index runs map their buffers sparse instead)")
                init = b.init or ("zeros" if b.out else "rand(-1,1)" if dt.kind in ("float", "complex")
                                  else "randint(0,1)" if dt.kind == "bool" else "randint(-10,10)")
                t = make_tensor(SpecArg(b.index, dt.name, n, _init_args(init, env)), g).reshape(shape)
                env[b.name] = t
                if b.out and not large:
                    sel = specexpr.slice_of(b.compare, env) if b.compare else None
                    outs.append(SpecOutput(b.index, dt.name, tuple(shape), sel, b.name))
            tensors.append((b, t))
            datas[b.index] = tensor_bytes(t)
        for b in decl.buffers:          # structs last: their fields may name any buffer
            if b.kind == "struct":
                datas[b.index] = pack_struct(b.fields, env, bindings)
        for idx, data in datas.items():
            p = params.get(idx)
            if p is not None and p["kind"] != 1 and p.get("size", 0) > 0 and len(data) != p["size"]:
                raise SpecError(f"buffer({idx}) `{_decl(decl, idx).name}` is {len(data)} bytes, the kernel's "
                                f"parameter `{p.get('type')}` is {p['size']}")
        grid = [int(x) for x in specexpr.size(decl.grid, env)]
        group = [int(x) for x in specexpr.size(decl.group, env)]
        if any(not 0 < x < 2 ** 32 for x in grid + group):
            raise SpecError(f"grid {grid} / group {group}: every dimension must be 1 .. 2^32-1 (Metal's uint "
                            "positions); split the launch the way the host does")
        tgmem = [int(x) for x in specexpr.size(decl.tgmem, env)]
    except (SpecError, specexpr.SpecExprError, ValueError, TypeError) as e:
        v.skip = f"spec error ({decl.source}): {e}"
        return v
    first = dtypes.from_torch(tensors[0][1].dtype) if tensors else None
    v.dtype = first.name if first else ""
    v.inputs = [t for _b, t in tensors]
    v.spec_outputs = outs
    tol = {}
    if decl.atol is not None or decl.rtol is not None:
        tol = {o.dtype: (decl.atol if decl.atol is not None else 0.0, decl.rtol if decl.rtol is not None else 0.0)
               for o in outs}
    if decl.reference:
        ref = resolve(decl.reference, hook)
        if ref is not None and tol:
            ref = Reference(ref.fn, ref.name, tolerances={**ref.tolerances, **tol})
        v.reference = ref
    elif any(_decl(decl, o.index).expect for o in outs):
        v.reference = _expect_reference(decl, tensors, env, tol, bindings)
    bufs = [BufferSpec(idx, data, len(data), read_back=any(o.index == idx for o in outs))
            for idx, data in sorted(datas.items())]
    if large:
        if not sparse:
            v.skip = f"spec error ({decl.source}): no buffer of the [kernel.large] sizes exceeds {LARGE_DENSE_LIMIT} bytes"
            return v
        v.variant = "large-index" + (f"/{decl.variant}" if decl.variant else "")
        v.reference = None
        v.large = {"buffers": sparse, "windows": [int(w) for w in decl.large.get("windows", [2 ** 31, 2 ** 32])],
                   "elements_per_thread": int(decl.large.get("elements_per_thread", 1))}
        for idx, (nbytes, esize, _name) in sparse.items():   # room for a negative 32-bit offset below the data
            bufs.append(BufferSpec(idx, None, nbytes, sparse_below=(2 ** 31) * esize))
        bufs.sort(key=lambda b: b.index)
    v.launch = LaunchSpec(host, bufs, tuple(grid), tuple(group), decl.mode, tgmem)
    return v


def _decl(decl: KernelDecl, idx: int) -> BufferDecl:
    return next(b for b in decl.buffers if b.index == idx)


def _expect_reference(decl: KernelDecl, tensors, env: dict, tol: dict, bindings: dict):
    from .reference import Reference
    names = [b.name for b, _t in tensors]
    scalars = {k: v for k, v in env.items() if not hasattr(v, "shape")}
    outs = [b for b in decl.buffers if b.out]

    def fn(*initial):
        scope = dict(bindings)           # the name's placeholders ({T}, {K:...}) as strings
        scope.update(scalars)
        scope.update(zip(names, initial))
        res = []
        for b in outs:
            res.append(specexpr.torch_expr(b.expect, scope) if b.expect else None)
        return tuple(res)

    return Reference(fn, name=" / ".join(f"`{b.expect}`" for b in outs if b.expect), tolerances=tol)
