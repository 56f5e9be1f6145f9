"""
## What it does
Flags a kernel name host code asks for that no Metal source of the tree registers:
`lib.exec_unary_kernel(iter, "x")` / `exec_binary_kernel` / `exec_ternary_kernel` with an op name that
no `REGISTER_*_OP(x, ...)` family registers, and `getPipelineStateForFunc("x_float")` (or
`"x_" + scalarToMetalTypeString(t)`, `fmt::format("x_{}", ...)`) with a name that matches no
`[[host_name]]` and no kernel.

It reports only what it can know: the Metal that would hold the name must be in the tree. A file that
includes `<ATen/native/mps/X_metallib.h>` (PyTorch's marker of the bundled library's source) is checked
only when every such `X.metal` is in the tree; a file with its own embedded Metal library (and no bundled
one) is checked against the tree, embedded source included. A file that uses the bundled library
without naming its source is not checked: in a partial tree a missing name proves nothing. Names built
entirely at run time (`fmt::format("{}_{}", name, type)`, a parameter) are not checked, nor names the
Metal text mentions in a way mpslint cannot expand (an unknown `REGISTER_*(name, ...)` macro, a
`name_functor`, a `host_name` string starting with the name).

## Why is this bad?
The kernel is looked up by name at run time. A misspelled or never-registered name builds fine and fails
on first use with "Failed to create pipeline state object" / "Can't find function x" — often only for
the dtype or layout the tests did not cover.

## Example
```objc
static void logit_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_unary_kernel(iter, "logit");   // no REGISTER_UNARY_OP(logit, ...) anywhere
}
```

## Use instead
```metal
REGISTER_UNARY_OP(logit, float, float);
REGISTER_UNARY_OP(logit, half, half);
REGISTER_UNARY_OP(logit, bfloat, bfloat);
```

## How to fix
Register the kernel in the `.metal` file the host's library is built from (the functor name must equal
the string the host passes), or correct the name on the host side.

Guide: *Step 3 — Stub Registration Pattern* ("`"my_op"` matches the functor name in .metal").
"""

from __future__ import annotations

import posixpath
import re

from mpslint.families import metal_source_files, metallib_sources
from mpslint.model import Severity
from mpslint.rule import Rule


class UnknownKernelName(Rule):
    code = "DSP303"
    name = "unknown-kernel-name"
    severity = Severity.ERROR
    scope = "dispatch"
    summary = "Host code asks for a kernel name that no Metal source in the tree registers"
    guide = "Step 3: Stub Registration Pattern"

    def check(self, ctx):
        project, graph = ctx.project, ctx.graph
        metal_basenames = {posixpath.basename(p) for p in metal_source_files(project) if p.endswith(".metal")}
        metal_text = None
        for kid in sorted(graph.nodes("kref")):
            if graph.out(kid, "resolves"):
                continue
            ref = graph.attrs(kid)["ref"]
            path = graph.attrs(kid)["path"]
            literal = ref.literal
            if len(literal.rstrip("_")) < 2:  # the name is built at run time
                continue
            hf = project.hosts.get(path)
            if hf is None:
                continue
            libs = metallib_sources(hf)
            if libs:  # the bundled library of this file is built from these sources: all must be here
                if not all(b in metal_basenames for b in libs):
                    continue
                where = ", ".join(f"`{b}`" for b in libs) + (" and the Metal embedded in this file" if hf.embedded else "")
            elif hf.embedded and "getBundledLibrary" not in ctx.text(path):
                where = "the Metal embedded in this file"
            else:  # a library whose source this tree does not name: absence proves nothing
                continue
            if metal_text is None:
                metal_text = "\n".join(ctx.text(p)[m.base : m.end] for p in sorted(project.metals) for m in project.metals[p])
            if self._mentioned(metal_text, ref):  # registered by a macro mpslint does not know: not ours to judge
                continue
            if ref.kind == "op":
                what = f"op `{literal}`"
                fix = f"register it (`REGISTER_{ref.call.split('_')[1].upper()}_OP({literal}, float, float);` ...) or correct the name"
            else:
                shown = literal if ref.exact else literal + "..."
                what = f"kernel `{shown}`"
                fix = "add the `[[host_name(...)]]` instantiation for it or correct the name"
            yield ctx.finding(
                self,
                path,
                ref.span,
                f"`{ref.call}` asks for {what}, but no Metal source registers it ({where} searched); it fails at run time "
                f"with \"failed to create pipeline state\"; {fix}.",
                kernel=literal,
            )

    @staticmethod
    def _mentioned(metal_text: str, ref) -> bool:
        """The Metal text names it anyway: a registration-looking macro with the op as first argument
        (`REGISTER_UNARY_OP_CAST(copy_conj, T)`), its functor, or a string starting with the host name."""
        name = re.escape(ref.literal)
        if ref.kind == "op":
            rx = r"\b[A-Z][A-Z0-9_]*\s*\(\s*" + name + r"\s*[,)]|\bstruct\s+" + name + r"_functor\b"
        else:
            rx = '"' + name + ("\"" if ref.exact else "")
        return re.search(rx, metal_text) is not None
