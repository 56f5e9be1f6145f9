"""
## What it does
Flags a Metal library or compute pipeline state built on every call of an op:
`newLibraryWithSource:` / `newLibraryWithData:` / `newLibraryWithURL:` / `newLibraryWithFile:` and
`newComputePipelineStateWithFunction:` / `...WithDescriptor:` whose result goes into a local of the
function (or is returned to a caller that keeps it in a local) instead of something that outlives the
call: a function-local `static`, a member or global (`lib = ...` in a constructor), a cache
(`cache[name] = pso`), a `dispatch_once` / `std::call_once` block.

Not flagged: setup behind a run-once guard, an `if (flag) return ...;` at the top of the function whose flag
outlives the call (a member, a global, a `static`) and that the function sets to `true` after the setup
(`Ctx& c = ctx(); if (c.initialised) return true; ... c.initialised = true;`), and a member written through a
local reference or pointer to a long-lived object (`c.pso = [...]` with `Ctx& c = ctx();`). A flag that is a
plain local, or one nothing sets, guards nothing.

## Why is this bad?
`newLibraryWithSource:` runs the Metal compiler; `newLibraryWithData:` parses a metallib;
`newComputePipelineStateWithFunction:` compiles the function for the GPU. Each costs from a millisecond
to hundreds of them — per call, on the CPU, while the GPU waits — and, without ARC, leaks the
objects. PyTorch's `MetalShaderLibrary` compiles once and caches pipeline states by kernel name.

## Example
```objc
Tensor my_op(const Tensor& x) {
  id<MTLLibrary> lib = [device newLibraryWithSource:kSource options:nil error:&error];
  id<MTLFunction> fn = [lib newFunctionWithName:@"my_kernel"];
  id<MTLComputePipelineState> pso = [device newComputePipelineStateWithFunction:fn error:&error];
  ...
}
```

## Use instead
```objc
static id<MTLComputePipelineState> my_kernel_pso() {
  static id<MTLComputePipelineState> pso = [] {
    ...  // build the library and the pipeline state once
  }();
  return pso;
}
```

## How to fix
Build the library once (a `static`, or a global `MetalShaderLibrary`-style object) and cache pipeline
states by kernel name.

Guide: *Writing a Metal kernel* (shader libraries and pipeline states are built once).
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.semantic.expressions import strip_parens
from mpslint.model import Severity
from mpslint.rule import Rule

SETUP = {
    "newLibraryWithSource": "compiles the Metal library",
    "newLibraryWithData": "loads the Metal library",
    "newLibraryWithURL": "loads the Metal library",
    "newLibraryWithFile": "loads the Metal library",
    "newComputePipelineStateWithFunction": "builds the compute pipeline state",
    "newComputePipelineStateWithDescriptor": "builds the compute pipeline state",
}
_ONCE = re.compile(r"(?:std::)?call_once|dispatch_once\w*")
_ROOT = re.compile(r"[A-Za-z_]\w*")


def _alias(fn, name: str) -> bool:
    """``name`` is a local reference or pointer (`Context& c = ctx();`, `State* s = get_state();`): a member
    written through it lives in the object it refers to, not in the function's frame."""
    return any(d.name == name and (d.reference or d.pointer) for d in fn.decls)


def _owner_outlives_call(fn, lhs: str) -> bool:
    """An assignment to ``lhs`` stores into something that outlives the call: not a plain local (a member,
    a global, a static) or a member reached through a local reference or pointer (`c.pso = ...`)."""
    root = _ROOT.match(lhs)
    if root is None:
        return True
    name = root.group(0)
    if not extflow.is_local(fn, name):
        return True
    return _alias(fn, name) and lhs[len(name):].lstrip().startswith((".", "->", "["))


def _run_once(fn, call) -> bool:
    """``call`` sits after a run-once guard: an `if (flag) return ...;` at the function's top level whose flag
    (a member, global or static, not a plain local) the function sets to `true` later (`if (c.initialised) return
    true; ... c.initialised = true;`). The setup then runs on the first call only."""
    for i, st in enumerate(fn.stmts):
        if st.span.start >= call.span.start:
            break
        if st.kind != "if_statement" or st.parents or st.tree is None or st.tree.kind not in ("id", "member"):
            continue
        flag = strip_parens(st.tree).text.strip()
        body = [t for t in fn.stmts[i + 1:] if t.parents and t.parents[0] == i]
        if not body or body[-1].kind != "return_statement" or not _owner_outlives_call(fn, flag):
            continue
        if any(a.lhs.strip() == flag and a.op == "=" and a.rhs.text.strip() == "true" and a.span.start > call.span.start for a in fn.assigns):
            return True
    return False


def _kept(fn, _unused: str, name: str, after: int) -> bool:
    """The local ``name`` is stored somewhere that outlives the call (a member, global, cache, static)."""
    rx = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b")
    for a in fn.assigns:
        if a.span.start > after and rx.search(a.rhs.text) and _owner_outlives_call(fn, a.lhs):
            return True
    for c in fn.calls:
        if c.span.start > after and c.name in ("emplace", "insert", "insert_or_assign", "try_emplace", "setObject", "push_back") and any(rx.search(x.text) for x in c.args):
            if c.receiver and _owner_outlives_call(fn, c.receiver):
                return True
    return False


def _returned(fn, name: str | None, call) -> bool:
    rx = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b") if name else None
    for s in fn.stmts:
        if s.kind != "return_statement":
            continue
        if s.span.start <= call.span.start < s.span.end or (rx and rx.search(s.text)):
            return True
    return False


def _destination(fn, call) -> tuple[str, str | None]:
    """("kept", None) / ("local", name) / ("return", name) for where the call's result goes."""
    if any(_ONCE.fullmatch(b.rsplit("::", 1)[-1]) for b in call.blocks) or _run_once(fn, call):
        return "kept", None
    for d in fn.decls:
        if d.init is not None and d.init.span.start <= call.span.start < d.init.span.end:
            if d.type.startswith("static") or _kept(fn, "", d.name, d.span.start):
                return "kept", None
            return ("return", d.name) if _returned(fn, d.name, call) else ("local", d.name)
    for a in fn.assigns:
        if a.rhs.span.start <= call.span.start < a.rhs.span.end:
            root = _ROOT.match(a.lhs)
            if root is None or _owner_outlives_call(fn, a.lhs):
                return "kept", None
            if _kept(fn, "", root.group(0), a.span.start):
                return "kept", None
            return ("return", root.group(0)) if _returned(fn, root.group(0), call) else ("local", a.lhs)
    if _returned(fn, None, call):
        return "return", None
    return "kept", None  # passed straight on: not judged


class PerCallPipelineSetup(Rule):
    code = "MPS115"
    name = "per-call-pipeline-setup"
    severity = Severity.WARNING
    scope = "host"
    contexts = ("pytorch", "extension")
    summary = "Metal library or compute pipeline state built on every call instead of once"
    guide = "Writing a Metal kernel"

    def check(self, ctx):
        graph = ctx.graph
        for path in sorted(ctx.project.hosts):
            for fn in ctx.project.hosts[path].functions:
                if fn.kind == "method" and not fn.return_type:
                    continue  # a constructor: once per object
                for call in fn.calls:
                    what = SETUP.get(call.name)
                    if what is None or not call.message_send:
                        continue
                    where, local = _destination(fn, call)
                    if where == "kept":
                        continue
                    per_call = fn.name
                    if where == "return":
                        per_call = self._per_call_caller(graph, f"impl:{path}:{fn.name}", fn)
                        if per_call is None:
                            continue
                    held = f" and keeps it in the local `{local}`" if where == "local" and local else ""
                    via = "" if where == "local" else f" (`{fn.name}` returns it to `{per_call}`, which keeps it for one call)"
                    yield ctx.finding(
                        self,
                        path,
                        call.span,
                        f"`{call.name}:` {what} on every call of `{per_call}`{held}{via}; build it once (a `static`, a "
                        "member of an object built once, or a cache keyed by kernel name).",
                    )

    @staticmethod
    def _per_call_caller(graph, impl: str, fn) -> str | None:
        """A caller that keeps the returned object in a plain local (so builds it per call), or None."""
        for caller in sorted(graph.into(impl, "calls")):
            cf = graph.attrs(caller).get("function")
            if cf is None or (cf.kind == "method" and not cf.return_type):
                continue
            for c in cf.calls:
                if c.name != fn.name:
                    continue
                where, _ = _destination(cf, c)
                if where == "local":
                    return cf.name
        return None
