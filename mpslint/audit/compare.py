"""``--compare OLD.json``: what moved between two audit reports.

- newly migrated: an op family that is ``native`` now and was not (or an overload now native-stub/native-mps);
- regressed: a family or overload whose class went down the ladder native > mixed > mpsgraph/fallback
  (between known classes; a move to or from ``unknown`` or ``composite`` is listed under ``changed``);
- new mixed: a family that is ``mixed`` now and was not.
"""

from __future__ import annotations

from .model import NATIVE

_FAMILY_RANK = {"native": 2, "mixed": 1, "mpsgraph": 0, "fallback": 0}
_OVERLOAD_RANK = {"native-stub": 2, "native-mps": 2, "mixed": 1, "mpsgraph": 0, "fallback": 0}


def compare(old: dict, new: dict) -> dict:
    old_ops = {op["family"]: op for op in old.get("ops", [])}
    new_ops = {op["family"]: op for op in new.get("ops", [])}
    out = {
        "old_totals": old.get("totals", {}),
        "newly_migrated": [],
        "regressed": [],
        "new_mixed": [],
        "changed": [],
        "added": sorted(set(new_ops) - set(old_ops)),
        "removed": sorted(set(old_ops) - set(new_ops)),
        "overloads_migrated": [],
        "overloads_regressed": [],
    }
    for fam in sorted(set(old_ops) & set(new_ops)):
        a, b = old_ops[fam]["class"], new_ops[fam]["class"]
        if a != b:
            move = {"family": fam, "old": a, "new": b}
            if b == "native":
                out["newly_migrated"].append(move)
            elif a in _FAMILY_RANK and b in _FAMILY_RANK and _FAMILY_RANK[b] < _FAMILY_RANK[a]:
                out["regressed"].append(move)
            elif b != "mixed":
                out["changed"].append(move)
            if b == "mixed":
                out["new_mixed"].append(move)
        old_ov = {o["name"]: o["class"] for o in old_ops[fam]["overloads"]}
        for o in new_ops[fam]["overloads"]:
            a = old_ov.get(o["name"])
            b = o["class"]
            if a is None or a == b:
                continue
            move = {"family": fam, "overload": o["name"], "old": a, "new": b}
            if b in NATIVE and a not in NATIVE:
                out["overloads_migrated"].append(move)
            elif a in _OVERLOAD_RANK and b in _OVERLOAD_RANK and _OVERLOAD_RANK[b] < _OVERLOAD_RANK[a]:
                out["overloads_regressed"].append(move)
    for fam in out["added"]:
        if new_ops[fam]["class"] == "mixed":
            out["new_mixed"].append({"family": fam, "old": None, "new": "mixed"})
    return out


def has_regressions(diff: dict) -> bool:
    return bool(diff["regressed"] or diff["overloads_regressed"])
