"""``--format md``: a summary that fits a PR comment or a CI step summary (GitHub caps both near 64 KiB)."""

from __future__ import annotations

from .model import CLASS_DOC, CLASSES, FAMILY_CLASSES, FAMILY_DOC

LIMIT = 60000  # characters; lists are cut (with a count of what was left out) to stay under it
LIST_CAP = 200


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:g}%"


def _names(items: list[str], cap: int = LIST_CAP) -> str:
    shown = ", ".join(f"`{x}`" for x in items[:cap])
    return shown + (f" … and {len(items) - cap} more" if len(items) > cap else "")


def render(report: dict, diff: dict | None = None) -> str:
    t = report["totals"]
    src = report["source"]
    ops = report["ops"]
    pm = t["percent_migrated"]
    d = t["dispatch"]
    out = ["## MPS migration audit", ""]
    known = t["ops"]["native"] + t["ops"]["mixed"] + t["ops"]["mpsgraph"]
    known_ov = sum(t["overloads"][c] for c in ("native-stub", "native-mps", "mixed", "mpsgraph"))
    nat_ov = t["overloads"]["native-stub"] + t["overloads"]["native-mps"]
    out.append(
        f"**{_pct(pm['ops'])}** of op families with a known MPS implementation are native Metal "
        f"({t['ops']['native']}/{known}); overloads: **{_pct(pm['overloads'])}** ({nat_ov}/{known_ov})."
    )
    out.append(
        f"In the yaml, {d['shared_line']} of {d['shared_line'] + d['mps_only_line']} overloads that reach MPS share the "
        f"CPU/CUDA dispatch line ({_pct(d['percent_shared'])}); {d['mps_only_line']} name an MPS-only function."
    )
    if t["overloads"]["unknown"]:
        out.append(f"{t['overloads']['unknown']} overloads are `unknown`: their implementation is not in the audited tree.")
    out.append("")
    out.append(f"Source: `{src.get('native_functions')}`, {src.get('host_files', 0)} host files, {src.get('metal_files', 0)} Metal files.")
    out.append("")
    out += ["| family class | ops |", "|---|---:|"]
    for c in FAMILY_CLASSES:
        out.append(f"| `{c}` | {t['ops'][c]} |")
    out.append(f"| **total** | {t['ops_total']} |")
    out.append("")
    out += ["| overload class | overloads |", "|---|---:|"]
    for c in CLASSES:
        out.append(f"| `{c}` | {t['overloads'][c]} |")
    out.append(f"| **total** | {t['overloads_total']} |")
    out.append("")
    if diff is not None:
        out += _diff_md(diff, report)
    mixed = [op for op in ops if op["class"] == "mixed"]
    if mixed:
        out.append(f"### Half migrated ({len(mixed)})")
        out.append("")
        for op in mixed[:LIST_CAP]:
            by = {}
            for o in op["overloads"]:
                by.setdefault(o["class"], []).append(o["name"])
            parts = "; ".join(f"{c}: {', '.join(by[c])}" for c in CLASSES if c in by)
            out.append(f"- `{op['family']}`: {parts}")
        if len(mixed) > LIST_CAP:
            out.append(f"- … and {len(mixed) - LIST_CAP} more")
        out.append("")
    partly = [op for op in ops if op.get("dispatch") == "partly-shared" and op["class"] != "mixed"]
    if partly:
        out.append(f"### Half migrated in the yaml ({len(partly)})")
        out.append("")
        out.append("Some overloads share the CPU/CUDA line, others still name an MPS-only function:")
        out.append("")
        for op in partly[:LIST_CAP]:
            sh = [o["name"] for o in op["overloads"] if o["route"] == "shared"]
            mo = [o["name"] for o in op["overloads"] if o["route"] == "mps_specific"]
            out.append(f"- `{op['family']}`: shared: {', '.join(sh)}; MPS-only: {', '.join(mo)}")
        out.append("")
    for cls, title in (("mpsgraph", "Still on MPSGraph"), ("unknown", "Implementation not in tree"), ("native", "Native Metal")):
        fams = [op["family"] for op in ops if op["class"] == cls]
        if fams:
            out += [f"<details><summary>{title}: {len(fams)} op families</summary>", "", _names(fams), "", "</details>", ""]
    out += ["<details><summary>What the classes mean</summary>", ""]
    out += [f"- `{c}`: {CLASS_DOC[c]}" for c in CLASSES]
    out += [f"- family `{c}`: {FAMILY_DOC[c]}" for c in FAMILY_CLASSES]
    out += ["", "</details>", ""]
    text = "\n".join(out)
    if len(text) > LIMIT:
        text = text[: LIMIT - 200].rsplit("\n", 1)[0] + "\n\n_(cut to fit a PR comment; see the JSON or HTML report)_\n"
    return text


def _diff_md(diff: dict, report: dict) -> list[str]:
    out = ["### Since the previous report", ""]
    ot = diff.get("old_totals") or {}
    old_pm = (ot.get("percent_migrated") or {}).get("ops")
    new_pm = report["totals"]["percent_migrated"]["ops"]
    out.append(f"Op families migrated: {_pct(old_pm)} → {_pct(new_pm)}.")
    out.append("")
    rows = [
        ("Newly migrated", diff["newly_migrated"]),
        ("Regressed", diff["regressed"]),
        ("New mixed", diff["new_mixed"]),
        ("Other changes", diff["changed"]),
    ]
    for title, moves in rows:
        if moves:
            out.append(f"**{title}** ({len(moves)}): " + ", ".join(f"`{m['family']}` ({m['old'] or 'new'} → {m['new']})" for m in moves[:LIST_CAP]))
            out.append("")
    for title, moves in (("Overloads migrated", diff["overloads_migrated"]), ("Overloads regressed", diff["overloads_regressed"])):
        if moves:
            out.append(f"**{title}** ({len(moves)}): " + ", ".join(f"`{m['overload']}` ({m['old']} → {m['new']})" for m in moves[:LIST_CAP]))
            out.append("")
    if diff["added"]:
        out += [f"**Added families** ({len(diff['added'])}): {_names(diff['added'])}", ""]
    if diff["removed"]:
        out += [f"**Removed families** ({len(diff['removed'])}): {_names(diff['removed'])}", ""]
    if not any(m for _, m in rows) and not diff["added"] and not diff["removed"] and not diff["overloads_migrated"] and not diff["overloads_regressed"]:
        out += ["Nothing moved.", ""]
    return out
