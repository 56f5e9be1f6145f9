"""`mpslint-smoke:` launch specs for kernels that no registration macro describes (custom kernels).

One comment line per kernel, anywhere in the .metal file:

    // mpslint-smoke: tree_sum grid=1000 group=256 op=tree_sum args=0:float[1000]=rand(0,1) 1:float[4]=zeros!out 2:uint=1000

- `grid=X[,Y,Z]` threads (dispatchThreads), or threadgroups when the word `groups` is present
- `group=X[,Y,Z]` threads per threadgroup; `tgmem=B[,B...]` bytes of each [[threadgroup(n)]] argument
- `args=` one item per [[buffer(n)]]: `n:dtype[count]=init` (a buffer) or `n:dtype=value` (a scalar);
  init is `zeros`, `ones`, `range`, `fill(v)`, `rand(lo,hi)` or `randint(lo,hi)`; `!out` marks buffers whose
  contents are checked after the run
- `op=name` the reference to look up; its fn receives the initial tensors of all args (in order) and returns
  the expected tensors of the `!out` args (in order).  Without a reference the kernel is still run for
  crashes, timeouts and non-finite garbage, and reported as "no reference".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import dtypes

_LINE = re.compile(r"//\s*mpslint-smoke:\s*(\S+)(.*)$", re.M)
_ARG = re.compile(r"^(\d+):(\w+)(?:\[(\d+)\])?=([^!]+?)(!out)?$")
# The buffers of a spec are made in mpslint's own process (then copied to the sandboxed child): a spec
# asking for more is refused, never allocated (a spec in a pull request must not exhaust the CI machine).
MAX_SPEC_BYTES = 256 * 1024 * 1024


class SpecError(ValueError):
    pass


@dataclass
class SpecArg:
    index: int
    dtype: str
    count: int | None          # None: a scalar value
    init: str
    out: bool = False


@dataclass
class LaunchSpecText:
    kernel: str
    line: int
    grid: tuple = (1, 1, 1)
    group: tuple = (1, 1, 1)
    mode: int = 0
    tgmem: list = field(default_factory=list)
    op: str = ""
    args: list = field(default_factory=list)
    error: str = ""


def _dims(v: str) -> tuple:
    xs = [int(x) for x in v.split(",") if x]
    return tuple((xs + [1, 1, 1])[:3])


def parse(text: str) -> dict[str, LaunchSpecText]:
    specs: dict[str, LaunchSpecText] = {}
    for m in _LINE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        s = LaunchSpecText(m.group(1), line)
        try:
            body = m.group(2).strip()
            if "args=" in body:
                body, args = body.split("args=", 1)
                for item in args.split():
                    am = _ARG.match(item)
                    if not am:
                        raise SpecError(f"bad arg `{item}`")
                    if dtypes.lookup(am.group(2)) is None:
                        raise SpecError(f"unknown dtype `{am.group(2)}`")
                    s.args.append(SpecArg(int(am.group(1)), dtypes.lookup(am.group(2)).name,
                                          int(am.group(3)) if am.group(3) else None, am.group(4),
                                          bool(am.group(5))))
                total = sum((a.count or 1) * dtypes.lookup(a.dtype).size for a in s.args)
                if total > MAX_SPEC_BYTES:
                    raise SpecError(f"buffers of {total} bytes exceed the smoke run's limit of {MAX_SPEC_BYTES} bytes")
            for tok in body.split():
                if tok == "groups":
                    s.mode = 1
                elif tok.startswith("grid="):
                    s.grid = _dims(tok[5:])
                elif tok.startswith("group="):
                    s.group = _dims(tok[6:])
                elif tok.startswith("tgmem="):
                    s.tgmem = [int(x) for x in tok[6:].split(",") if x]
                elif tok.startswith("op="):
                    s.op = tok[3:]
                else:
                    raise SpecError(f"unknown item `{tok}`")
        except (SpecError, ValueError) as e:
            s.error = f"bad mpslint-smoke spec: {e}"
        specs[s.kernel] = s
    return specs


def make_tensor(arg: SpecArg, gen):
    import torch
    dt = dtypes.lookup(arg.dtype)
    tdt = dtypes.to_torch(dt)
    init = arg.init.strip()
    if arg.count is None:
        return torch.tensor([float(init) if dt.kind == "float" else int(init)], dtype=tdt)
    n = arg.count
    if init == "zeros":
        return torch.zeros(n, dtype=tdt)
    if init == "ones":
        return torch.ones(n, dtype=tdt)
    if init == "range":
        return torch.arange(n).to(tdt)
    m = re.match(r"(fill|rand|randint|randperm|sorted)\(([^)]*)\)$", init)
    if not m:
        raise SpecError(f"bad init `{init}`")
    try:
        vals = [float(x) for x in m.group(2).split(",") if x.strip()]
    except ValueError:
        raise SpecError(f"bad init `{init}`: its arguments are numbers") from None
    if m.group(1) == "randperm":     # randperm(k): every run of k consecutive elements a permutation of 0..k-1
        if len(vals) != 1 or vals[0] < 1:
            raise SpecError(f"bad init `{init}`: randperm(k) with k >= 1")
        k = int(vals[0])
        return torch.cat([torch.randperm(k, generator=gen) for _ in range(-(-n // k))])[:n].to(tdt)
    if m.group(1) == "sorted":       # sorted(lo, hi, k): rand(lo, hi), ascending within every run of k elements
        if len(vals) != 3 or vals[2] < 1:
            raise SpecError(f"bad init `{init}`: sorted(lo, hi, k) with k >= 1")
        k = int(vals[2])
        t = torch.rand(-(-n // k) * k, generator=gen, dtype=torch.float64) * (vals[1] - vals[0]) + vals[0]
        return t.view(-1, k).sort(1).values.reshape(-1)[:n].to(tdt)
    if m.group(1) == "fill":
        return torch.full((n,), vals[0]).to(tdt)
    if m.group(1) == "rand":
        lo, hi = (vals + [0.0, 1.0])[:2] if vals else (0.0, 1.0)
        return (torch.rand(n, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(tdt)
    lo, hi = int(vals[0]), int(vals[1])
    return torch.randint(lo, hi + 1, (n,), generator=gen).to(tdt)


def plan_spec(entry: dict, s: LaunchSpecText, ref, seed: int):
    """A launch.Variant for a custom kernel described by a spec (its `spec_outputs` name the checked buffers)."""
    import torch
    from .launch import Variant
    from .runner import BufferSpec, LaunchSpec
    from .specfile import SpecOutput
    v = Variant(entry["host_name"], s.op or entry["host_name"], "", "custom", entry.get("path", ""),
                int(entry.get("line", 1)), reference=ref)
    if s.error:
        v.skip = s.error
        return v
    bufs, tensors, outs = [], [], []
    g = torch.Generator().manual_seed(seed)
    for a in s.args:
        t = make_tensor(a, g)
        tensors.append(t)
        from .launch import tensor_bytes
        data = tensor_bytes(t)
        bufs.append(BufferSpec(a.index, data, len(data), read_back=a.out))
        if a.out:
            outs.append(SpecOutput(a.index, a.dtype, (t.numel(),)))
    v.dtype = s.args[0].dtype if s.args else ""
    v.inputs = tensors
    v.spec_outputs = outs
    v.launch = LaunchSpec(entry["host_name"], bufs, s.grid, s.group, s.mode, list(s.tgmem))
    return v
