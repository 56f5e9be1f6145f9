"""Which names a file can reach: the names mpslint's fixes introduce, the headers that declare them, and
the headers that bring those in.

A fix may only write a name the fixed file can reach (through its includes, its namespaces and its
``using`` directives); a fix that needs more adds the include or the qualification, or is not offered.
The fixer checks every fix against this table (``undeclared``): a fix whose text introduces a name
listed here that nothing the fixed file includes declares is refused.

A file with no ``#include`` at all is a fragment that relies on whoever includes it (PyTorch's Metal
headers such as ``SortRadix.h``, snippets): what it can reach is unknown, and it is not checked.

The table is small on purpose: it lists the names fixes write, not an index of PyTorch. ``BRINGS`` was
read off torch 2.13's installed headers (transitive ``#include`` closure): ``<torch/extension.h>``
reaches ``c10/util/TypeCast.h`` but neither ``ATen/mps/MPSStream.h`` nor ``ATen/ceil_div.h``;
``ATen/native/mps/OperationUtils.h`` reaches ``MPSStream.h`` and says ``using namespace at::mps;`` at
file scope.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass

# qualified name -> the header that declares it
DECLARES: dict[str, str] = {
    "at::mps::dispatch_sync_with_rethrow": "ATen/mps/MPSStream.h",
    "at::mps::getCurrentMPSStream": "ATen/mps/MPSStream.h",
    "at::ceil_div": "ATen/ceil_div.h",
    "c10::checked_convert": "c10/util/TypeCast.h",
    "c10::metal::ceil_div": "c10/metal/common.h",
    "IF_CONSTEXPR": "c10/metal/common.h",  # a macro: no namespace
}

# header -> the declaring headers (of DECLARES) it includes, directly or transitively
_TYPECAST_VIA = ("torch/extension.h", "torch/torch.h", "torch/all.h", "torch/library.h", "ATen/ATen.h", "ATen/Tensor.h", "ATen/core/Tensor.h", "ATen/TensorIterator.h", "c10/core/Scalar.h", "ATen/native/mps/OperationUtils.h")
BRINGS: dict[str, frozenset[str]] = {h: frozenset({"c10/util/TypeCast.h"}) for h in _TYPECAST_VIA}
BRINGS["ATen/native/mps/OperationUtils.h"] = frozenset({"c10/util/TypeCast.h", "ATen/mps/MPSStream.h"})
for _h in ("utils.h", "indexing.h", "error.h", "special_math.h", "igamma.h", "reduction_utils.h"):
    BRINGS["c10/metal/" + _h] = frozenset({"c10/metal/common.h"})

# header -> namespaces it makes visible everywhere after it (a file-scope `using namespace`)
USING_IN: dict[str, frozenset[str]] = {"ATen/native/mps/OperationUtils.h": frozenset({"at::mps"})}

_USING = re.compile(r"\busing\s+namespace\s+((?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*;")
_USING_DECL = re.compile(r"\busing\s+((?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)+)\s*;")
_NAMESPACE = re.compile(r"\bnamespace\s+([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*\{")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


@dataclass(frozen=True)
class Scope:
    """What one file can name: the headers it reaches, its namespaces and its using-directives/declarations."""

    headers: frozenset[str]
    namespaces: frozenset[str]  # namespaces opened in the file (`namespace at::native::mps {`), and their parents
    usings: frozenset[str]  # `using namespace X;` (in the file or brought by a header)
    using_names: frozenset[str]  # `using X::y;`

    @property
    def fragment(self) -> bool:
        """No include at all: the file relies on its includer, its reach is unknown (not checked)."""
        return not self.headers

    def declares(self, qualified: str) -> bool:
        header = DECLARES.get(qualified)
        return header is None or header in self.headers

    def reaches_unqualified(self, qualified: str) -> bool:
        """``qualified`` can be written by its last component: declared, and its namespace is open here or used."""
        if not self.declares(qualified):
            return False
        ns, _, _ = qualified.rpartition("::")
        return not ns or ns in self.namespaces or ns in self.usings or qualified in self.using_names


def scope_of(text: str, includes: list[str] | None = None) -> Scope:
    """The scope of a file's text (comments ignored). ``includes``: the headers its facts list, when known."""
    return _scope_of(text, tuple(includes) if includes is not None else None)


@lru_cache(maxsize=512)
def _scope_of(text: str, includes: tuple[str, ...] | None) -> Scope:
    clean = _COMMENT.sub(" ", text)
    named = list(includes) if includes is not None else _INCLUDE.findall(clean)
    headers = set(named)
    for h in named:
        headers |= BRINGS.get(h, frozenset())
    usings = {re.sub(r"\s+", "", m).lstrip(":") for m in _USING.findall(clean)}
    for h in named:
        usings |= USING_IN.get(h, frozenset())
    namespaces: set[str] = set()
    for m in _NAMESPACE.findall(clean):
        parts = re.sub(r"\s+", "", m).split("::")
        namespaces |= {"::".join(parts[: k + 1]) for k in range(len(parts))}
    using_names = {re.sub(r"\s+", "", m).lstrip(":") for m in _USING_DECL.findall(clean)}
    return Scope(frozenset(headers), frozenset(namespaces), frozenset(usings), frozenset(using_names))


def spelling(qualified: str, scope: Scope) -> str:
    """How a fix writes ``qualified`` in a file with ``scope``: unqualified when it reaches it so, else qualified."""
    return qualified.rpartition("::")[2] if scope.reaches_unqualified(qualified) else qualified


_KNOWN = sorted(DECLARES, key=len, reverse=True)
_SHORT = {q.rpartition("::")[2]: q for q in DECLARES if "::" in q}


def introduced(old: str, new: str) -> list[str]:
    """The names of the table that ``new`` (a fix's inserted text) writes and ``old`` (what it replaced) did not."""
    out = []
    for q in _KNOWN:
        short = q.rpartition("::")[2]
        pat = re.compile(r"(?<![\w:])" + re.escape(q) + r"\b") if "::" in q else None
        if pat is not None and pat.search(new) and not pat.search(old):
            out.append(q)
            continue
        # the short spelling: not part of a longer qualified name ("::ceil_div" after at:: is the qualified one)
        bare = re.compile(r"(?<![\w:])" + re.escape(short) + r"\b")
        if bare.search(new) and not bare.search(old) and q not in out:
            out.append(q if "::" not in q else "~" + q)  # "~": written unqualified
    return out


def undeclared(edits_old_new: list[tuple[str, str]], fixed_text: str, includes: list[str] | None = None, metal: bool = False) -> list[str]:
    """The names the edits introduce that the fixed file cannot reach (empty: the fix is fine)."""
    return undeclared_in(edits_old_new, scope_of(fixed_text, includes), metal)


def with_added(scope: Scope, edits_old_new: list[tuple[str, str]]) -> Scope:
    """``scope`` after edits that may add ``#include`` lines (a fix adding the header its name needs)."""
    added = [h for _old, new in edits_old_new for h in _INCLUDE.findall(new or "")]
    if not added:
        return scope
    headers = set(scope.headers) | set(added)
    usings = set(scope.usings)
    for h in added:
        headers |= BRINGS.get(h, frozenset())
        usings |= USING_IN.get(h, frozenset())
    return Scope(frozenset(headers), scope.namespaces, frozenset(usings), scope.using_names)


def undeclared_in(edits_old_new: list[tuple[str, str]], scope: Scope, metal: bool = False) -> list[str]:
    """The names the edits introduce that ``scope`` (the fixed file's) does not reach."""
    if scope.fragment:
        return []
    bad = []
    for old, new in edits_old_new:
        for name in introduced(old, new):
            unq = name.startswith("~")
            q = name.lstrip("~")
            if metal != q.startswith(("c10::metal::", "IF_CONSTEXPR")):
                continue  # the other language's namesake (`ceil_div` in Metal is c10::metal's)
            ok = scope.reaches_unqualified(q) if unq else scope.declares(q)
            if not ok:
                bad.append(q)
    return bad
