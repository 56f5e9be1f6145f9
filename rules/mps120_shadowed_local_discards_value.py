"""
## What it does
Flags a declaration in a nested block (an `if`, a loop, a `switch` arm) that hides a local or parameter of the
same name declared outside the block, when:
- the value the nested declaration computes is never used: nothing in its block reads the name after it, or only
  an `assert(...)` does (compiled out of release builds), and
- the outer variable is read after the block, with the value it had before the block.

That is an assignment meant for the outer variable, written as a declaration: the block computes a value and
throws it away, and the code after it runs with the old one.

## Why is this bad?
RMSNorm's launch computed the threadgroup size a short row needs inside `if (N <= LOOPED_LIMIT) { size_t
threadgroup_size = ...; }` and then dispatched with the outer `threadgroup_size`, still the pipeline's maximum:
every short row ran a full threadgroup of mostly idle threads (pytorch/pytorch#180173, "inner size_t
threadgroup_size redeclaration shadowed the outer one"). Nothing fails; the result is slower or, for a size that
selects work rather than speed, wrong. Compilers warn only with `-Wshadow`, which PyTorch does not enable for
Objective-C++.

## Example
```objc
size_t threadgroup_size = maxThreadsPerGroup;
if (N <= LOOPED_LIMIT) {
  size_t threadgroup_size = SIMD_SIZE * simds_needed;
  assert(threadgroup_size <= maxThreadsPerGroup);
}
[enc dispatchThreads:MTLSizeMake(M * threadgroup_size, 1, 1) threadsPerThreadgroup:MTLSizeMake(threadgroup_size, 1, 1)];
```

## Use instead
```objc
size_t threadgroup_size = maxThreadsPerGroup;
if (N <= LOOPED_LIMIT) {
  threadgroup_size = SIMD_SIZE * simds_needed;
  assert(threadgroup_size <= maxThreadsPerGroup);
}
```

## How to fix
Drop the type: assign the outer variable. The fix does that (unsafe: it changes what the code after the block
computes, which is the point, and a maintainer should confirm the outer variable was meant).

Not flagged: a nested declaration whose value its block uses (a block-local reuse of a name, legal if unclear),
an outer variable that is not read after the block or is overwritten before it is read, objects kept for their
constructor and destructor (`std::lock_guard`, guards, pools: declarations without `=`), and loop variables.
"""

from __future__ import annotations

import re

from mpslint.model import Fix, Severity
from mpslint.rule import Rule
from mpslint.semantic import hostflow as hf
from mpslint.semantic.expressions import identifiers, strip_parens

_DEBUG_ONLY = ("assert(", "assert (", "TORCH_INTERNAL_ASSERT_DEBUG_ONLY", "static_assert", "(void)")
_KEPT_FOR_EFFECT = re.compile(r"guard|lock|Guard|Lock|pool|Pool|Scope|scope|Timer|Profile")


def _branch_at(fn, j: int, level: int) -> str:
    """The `if` arm statement ``j`` sits in at nesting depth ``level``."""
    ps = fn.stmts[j].parents
    return fn.stmts[ps[level]].branch if len(ps) > level else fn.stmts[j].branch


def _words(name: str):
    return re.compile(r"(?<![\w.>])" + re.escape(name) + r"(?!\w)")


def _reads(fn, j: int, name: str) -> bool:
    """Statement ``j`` reads ``name`` (its expression trees name it outside the left side of a plain assignment)."""
    st = fn.stmts[j]
    top = st.tree
    if top is not None and top.kind == "assign" and top.op == "=" and top.kids and strip_parens(top.kids[0]).text == name:
        top = top.kids[-1]
    trees = [top, st.update]
    trees += [d.init.tree for d in fn.decls if d.stmt == j and d.init is not None]
    trees += [a.rhs.tree for a in fn.assigns if a.stmt == j]
    trees += [c.tree for c in fn.calls if c.stmt == j]
    if any(t is not None and name in identifiers(t) for t in trees):
        return True
    if st.kind == "declaration" and any(d.stmt == j and d.init is None for d in fn.decls):
        return bool(_words(name).search(st.text))  # a constructor-style declaration: no tree of its arguments
    return False


class ShadowedLocalDiscardsValue(Rule):
    code = "MPS120"
    name = "shadowed-local-discards-value"
    severity = Severity.WARNING
    scope = "host"
    summary = "A declaration in a nested block hides a local read after the block; the value computed for it is never used"
    guide = "Checklist"

    def check(self, ctx):
        hosts = ctx.project.hosts
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                if len(fn.decls) < 2 and not fn.params:
                    continue
                names = [d.name for d in fn.decls]
                dup = {n for n in names if names.count(n) > 1} | ({p.name for p in fn.params} & set(names))
                if not dup or not hf.is_live(fn, path, hosts):
                    continue
                for d in fn.decls:
                    if d.name in dup:
                        found = self._shadow(ctx, path, fn, d)
                        if found is not None:
                            yield found

    def _shadow(self, ctx, path, fn, inner):
        st = fn.stmts
        si = inner.stmt
        if not (0 <= si < len(st)) or st[si].kind != "declaration" or inner.init is None:
            return None
        if _KEPT_FOR_EFFECT.search(inner.type) or "static" in inner.type.split():
            return None
        if sum(1 for d in fn.decls if d.stmt == si) != 1:
            return None  # `int a = 1, b = 2;`: several declarators, no plain fix
        pi = st[si].parents
        outer = None
        for d in fn.decls:  # the nearest enclosing declaration of the same name
            so = d.stmt
            if d is inner or d.name != inner.name or not (0 <= so < si) or st[so].kind != "declaration":
                continue
            po = st[so].parents
            if len(po) < len(pi) and self._encloses(fn, so, si):
                if outer is None or so > outer[0]:
                    outer = (so, po, st[so].branch, d.span.line)
        if outer is None and any(p.name == inner.name for p in fn.params) and pi:
            outer = (-1, (), "", fn.span.line)
        if outer is None:
            return None
        so, po, ob, oline = outer
        block = pi[-1]  # the nested declaration's scope ends with its innermost compound statement
        end = block
        while end + 1 < len(st) and block in st[end + 1].parents:
            end += 1
        # the nested declaration's value: read in its own scope (after it, in its compound and arm)?
        mine = [j for j in range(si + 1, end + 1) if self._scope_of(fn, si, j)]
        uses = [j for j in mine if _words(inner.name).search(st[j].text)]
        if any(not st[j].text.lstrip().startswith(_DEBUG_ONLY) for j in uses):
            return None
        # the outer variable: read after the block, before anything overwrites it
        read = None
        for j in range(end + 1, len(st)):
            if so >= 0 and not self._scope_of(fn, so, j):
                if not st[j].parents[: len(po)] == po:
                    break
                continue
            if not _words(inner.name).search(st[j].text):
                continue
            if _reads(fn, j, inner.name):
                read = j
            break
        if read is None:
            return None
        how = "nothing reads it" if not uses else f"only an `{st[uses[0]].text.lstrip().split('(')[0]}` reads it (compiled out of release builds)"
        what = f"the parameter `{inner.name}`" if so < 0 else f"the `{inner.name}` declared at line {oline}"
        text = ctx.project.sources[path].text
        start, name_at = st[si].span.start, inner.span.start  # the declaration's type, up to its declarator
        fix = None
        if start < name_at and text[name_at : name_at + len(inner.name)] == inner.name and not (inner.reference or inner.pointer or inner.array):
            fix = Fix(f"Assign the outer `{inner.name}` instead of declaring a new one",
                      (ctx.edit(path, start, name_at, ""),), "unsafe")
        return ctx.finding(
            self,
            path,
            inner.span,
            f"`{inner.type} {inner.name}` declares a new `{inner.name}` inside the block, hiding {what}: {how}, and the "
            f"`{inner.name}` read after the block (line {st[read].span.line}) still has the value from before it. If "
            f"the block meant to set the outer one, assign it: `{inner.name} = {inner.init.text};`.",
            fix=fix,
        )

    @staticmethod
    def _encloses(fn, so: int, si: int) -> bool:
        """Statement ``si`` is inside the scope of the declaration at ``so`` and nested deeper."""
        return ShadowedLocalDiscardsValue._scope_of(fn, so, si) and len(fn.stmts[si].parents) > len(fn.stmts[so].parents)

    @staticmethod
    def _scope_of(fn, owner: int, j: int) -> bool:
        """Statement ``j`` is in the scope of a declaration at statement ``owner``: after it, inside the same
        compound statement and, directly under an `if`, in the same arm."""
        st = fn.stmts
        po, pj = st[owner].parents, st[j].parents
        if j <= owner or pj[: len(po)] != po:
            return False
        if not po:
            return True
        return _branch_at(fn, j, len(po)) == st[owner].branch if len(pj) > len(po) else st[j].branch == st[owner].branch
