"""``--format html``: one self-contained page (inline CSS, inline SVG chart, a little inline JS; no network)."""

from __future__ import annotations

from html import escape

from .model import CLASS_DOC, CLASSES, FAMILY_CLASSES, FAMILY_DOC

COLORS = {
    "native": "#2e7d32",
    "native-stub": "#2e7d32",
    "native-mps": "#66bb6a",
    "mixed": "#ef6c00",
    "mpsgraph": "#c62828",
    "unknown": "#9e9e9e",
    "fallback": "#6a1b9a",
    "composite": "#78909c",
    "shared": "#2e7d32",
    "partly-shared": "#ef6c00",
    "mps-only": "#c62828",
}

CSS = """
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}
.meta{color:#57606a;margin-bottom:12px}.big{font-size:28px;font-weight:600}
.kpis{display:flex;gap:28px;flex-wrap:wrap;margin:8px 0 4px}.kpi{min-width:160px}.kpi small{display:block;color:#57606a}
svg text{font:12px -apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
table{border-collapse:collapse;width:100%;margin-top:8px;table-layout:fixed}
col.c-fam{width:19%}col.c-cls{width:8%}col.c-disp{width:9%}col.c-ov{width:20%}col.c-k{width:19%}col.c-x{width:11%}col.c-f{width:14%}
td{overflow-wrap:anywhere}
th,td{border-bottom:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;user-select:none;position:sticky;top:0}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}
.badge{display:inline-block;border-radius:10px;padding:0 8px;color:#fff;font-size:12px;white-space:nowrap;margin:1px 2px 1px 0}
.filters{display:flex;gap:14px;flex-wrap:wrap;align-items:center;margin:8px 0}
.filters label{white-space:nowrap}.filters input[type=search]{padding:3px 6px;min-width:220px}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:0 3px;border-radius:3px}
details summary{cursor:pointer;color:#0969da}ul.ovl{margin:4px 0 0 0;padding-left:18px}
.expl{color:#57606a}.count{color:#57606a}.diff li{margin:2px 0}
"""

JS = """
(function(){
  var table=document.getElementById('ops'), body=table.tBodies[0];
  var ths=table.tHead.rows[0].cells;
  Array.prototype.forEach.call(ths,function(th,i){
    th.addEventListener('click',function(){
      var asc=!th.classList.contains('sorted-asc');
      Array.prototype.forEach.call(ths,function(h){h.classList.remove('sorted-asc','sorted-desc');});
      th.classList.add(asc?'sorted-asc':'sorted-desc');
      var rows=Array.prototype.slice.call(body.rows);
      var num=th.getAttribute('data-type')==='num';
      rows.sort(function(a,b){
        var x=a.cells[i].getAttribute('data-sort'), y=b.cells[i].getAttribute('data-sort');
        if(num){x=parseFloat(x);y=parseFloat(y);return asc?x-y:y-x;}
        var c=x<y?-1:(x>y?1:0); return asc?c:-c;
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
  var boxes=document.querySelectorAll('.filters input[type=checkbox]');
  var search=document.getElementById('search');
  function apply(){
    var on={};Array.prototype.forEach.call(boxes,function(b){on[b.value]=b.checked;});
    var q=search.value.toLowerCase(), shown=0;
    Array.prototype.forEach.call(body.rows,function(r){
      var ok=on[r.getAttribute('data-class')]&&(!q||r.getAttribute('data-search').indexOf(q)>=0);
      r.style.display=ok?'':'none'; if(ok)shown++;
    });
    document.getElementById('shown').textContent=shown;
  }
  Array.prototype.forEach.call(boxes,function(b){b.addEventListener('change',apply);});
  search.addEventListener('input',apply);
  apply();
})();
"""


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:g}%"


def _bar(y: int, label: str, parts: list[tuple[str, int]], width: int = 760, x0: int = 170, h: int = 26) -> str:
    total = sum(n for _, n in parts)
    out = [f'<text x="{x0 - 8}" y="{y + h / 2 + 4:.0f}" text-anchor="end">{escape(label)}</text>']
    if total == 0:
        out.append(f'<rect x="{x0}" y="{y}" width="{width}" height="{h}" fill="#eaeef2"/>')
        out.append(f'<text x="{x0 + 6}" y="{y + h / 2 + 4:.0f}" fill="#57606a">nothing to show</text>')
        return "".join(out)
    x = float(x0)
    for name, n in parts:
        if not n:
            continue
        w = width * n / total
        pct = 100.0 * n / total
        out.append(
            f'<rect class="seg" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{h}" fill="{COLORS[name]}">'
            f"<title>{escape(name)}: {n} ({pct:.1f}%)</title></rect>"
        )
        if w > 34:
            out.append(f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.0f}" text-anchor="middle" fill="#fff">{n}</text>')
        x += w
    out.append(f'<text x="{x0 + width + 8}" y="{y + h / 2 + 4:.0f}">{total}</text>')
    return "".join(out)


def chart(report: dict, diff: dict | None = None) -> str:
    """Stacked bars with their own legends: op families and overloads by class, then what the yaml alone says."""
    t = report["totals"]
    d = t["dispatch"]
    groups = []
    fam = [("op families", [(c, t["ops"][c]) for c in FAMILY_CLASSES])]
    if diff is not None and (diff.get("old_totals") or {}).get("ops"):
        fam.insert(0, ("before", [(c, diff["old_totals"]["ops"].get(c, 0)) for c in FAMILY_CLASSES]))
    groups.append(("Op families by class", fam, list(FAMILY_CLASSES)))
    groups.append(("Overloads by class", [("overloads", [(c, t["overloads"][c]) for c in CLASSES])], list(CLASSES)))
    dops = d.get("ops") or {}
    groups.append(
        (
            "What the yaml says (MPS dispatch line)",
            [
                ("op families", [(c, dops.get(c, 0)) for c in ("shared", "partly-shared", "mps-only")]),
                ("overloads", [("shared", d["shared_line"]), ("mps-only", d["mps_only_line"])]),
            ],
            ["shared", "partly-shared", "mps-only"],
        )
    )
    h, gap = 24, 8
    y = 0
    svg = []
    for title, bars, legend in groups:
        svg.append(f'<text x="0" y="{y + 14}" font-weight="600">{escape(title)}</text>')
        y += 22
        for label, parts in bars:
            svg.append(_bar(y, label, parts, h=h))
            y += h + gap
        x = 170
        for name in legend:
            w = 30 + 7 * len(name)
            svg.append(f'<rect x="{x}" y="{y}" width="11" height="11" fill="{COLORS[name]}"/>')
            svg.append(f'<text x="{x + 15}" y="{y + 10}">{escape(name)}</text>')
            x += w
        y += 32
    return (
        f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="980" height="{y}" viewBox="0 0 980 {y}" '
        f'role="img" aria-label="MPS migration progress">' + "".join(svg) + "</svg>"
    )


def _badges(counts: dict) -> str:
    return "".join(f'<span class="badge" style="background:{COLORS[c]}" title="{escape(CLASS_DOC[c])}">{escape(c)} {counts[c]}</span>' for c in CLASSES if counts.get(c))


def _row(op: dict) -> str:
    cls = op["class"]
    n = len(op["overloads"])
    kern = "; ".join(f"{k['name']} ({', '.join(k['dtypes']) or 'dtypes unknown'})" for k in op["kernels"])
    if op["unresolved_kernels"]:
        kern += ("; " if kern else "") + "asked for, not in tree: " + ", ".join(op["unresolved_kernels"])
    xf = "; ".join(f"{x['list']}[{x['key']}]" + (f" {', '.join(x['dtypes'])}" if x["dtypes"] else "") for x in op["xfails"])
    fnd = "<br>".join(f"<code>{escape(f['code'])}</code> {escape(f['path'])}:{f['line']}" for f in op["findings"])
    items = []
    for o in op["overloads"]:
        items.append(
            f'<li><code>{escape(o["name"])}</code> <span class="badge" style="background:{COLORS[o["class"]]}">{escape(o["class"])}</span> '
            f'<span class="expl">line {o["line"]}: {escape(o["explanation"])}</span></li>'
        )
    search = " ".join([op["family"], cls] + [o["name"] for o in op["overloads"]] + [k["name"] for k in op["kernels"]]).lower()
    return (
        f'<tr data-class="{escape(cls)}" data-search="{escape(search)}">'
        f'<td data-sort="{escape(op["family"])}"><code>{escape(op["family"])}</code></td>'
        f'<td data-sort="{FAMILY_CLASSES.index(cls)}"><span class="badge" style="background:{COLORS[cls]}" title="{escape(FAMILY_DOC[cls])}">{escape(cls)}</span></td>'
        f'<td data-sort="{escape(op.get("dispatch", "none"))}">{escape(op.get("dispatch", "none"))}</td>'
        f'<td data-sort="{n}">{_badges(op["overload_counts"])}<details><summary>{n} overload{"s" if n != 1 else ""}</summary><ul class="ovl">{"".join(items)}</ul></details></td>'
        f'<td data-sort="{len(op["kernels"])}">{escape(kern)}</td>'
        f'<td data-sort="{len(op["xfails"])}">{escape(xf)}</td>'
        f'<td data-sort="{len(op["findings"])}">{fnd}</td>'
        "</tr>"
    )


def _diff_html(diff: dict) -> str:
    def moves(title, ms, key="family"):
        if not ms:
            return ""
        li = "".join(f"<li><code>{escape(m[key])}</code>: {escape(str(m['old'] or 'new'))} &rarr; {escape(m['new'])}</li>" for m in ms)
        return f"<h3>{escape(title)} ({len(ms)})</h3><ul>{li}</ul>"

    body = (
        moves("Newly migrated", diff["newly_migrated"])
        + moves("Regressed", diff["regressed"])
        + moves("New mixed", diff["new_mixed"])
        + moves("Other changes", diff["changed"])
        + moves("Overloads migrated", diff["overloads_migrated"], "overload")
        + moves("Overloads regressed", diff["overloads_regressed"], "overload")
    )
    if diff["added"]:
        body += f"<h3>Added families ({len(diff['added'])})</h3><p>{escape(', '.join(diff['added']))}</p>"
    if diff["removed"]:
        body += f"<h3>Removed families ({len(diff['removed'])})</h3><p>{escape(', '.join(diff['removed']))}</p>"
    return f'<section class="diff"><h2>Since the previous report</h2>{body or "<p>Nothing moved.</p>"}</section>'


def render(report: dict, diff: dict | None = None) -> str:
    t = report["totals"]
    src = report["source"]
    pm = t["percent_migrated"]
    d = t["dispatch"]
    kpis = (
        f'<div class="kpi"><span class="big">{_pct(pm["ops"])}</span><small>op families migrated (native / known)</small></div>'
        f'<div class="kpi"><span class="big">{_pct(pm["overloads"])}</span><small>overloads migrated (native / known)</small></div>'
        f'<div class="kpi"><span class="big">{_pct(d["percent_shared"])}</span><small>MPS overloads on a shared yaml line</small></div>'
        f'<div class="kpi"><span class="big">{t["ops_mps"]}</span><small>op families reaching MPS (of {t["ops_total"]})</small></div>'
    )
    filters = "".join(
        f'<label title="{escape(FAMILY_DOC[c])}"><input type="checkbox" value="{c}" checked> '
        f'<span class="badge" style="background:{COLORS[c]}">{c}</span> {t["ops"][c]}</label>'
        for c in FAMILY_CLASSES
    )
    legend = "".join(f"<li><code>{c}</code>: {escape(CLASS_DOC[c])}</li>" for c in CLASSES)
    legend += "".join(f"<li>family <code>{c}</code>: {escape(FAMILY_DOC[c])}</li>" for c in FAMILY_CLASSES)
    rows = "".join(_row(op) for op in report["ops"])
    head = (
        '<tr><th data-type="str">Family</th><th data-type="num">Class</th><th data-type="str">yaml MPS line</th><th data-type="num">Overloads</th>'
        '<th data-type="num">Metal kernels (dtypes)</th><th data-type="num">common_mps skip/xfail</th><th data-type="num">Findings</th></tr>'
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>MPS migration audit</title>"
        f"<style>{CSS}</style></head><body>"
        "<h1>MPS migration audit</h1>"
        f'<div class="meta">{escape(report["tool"])} &middot; <code>{escape(str(src.get("native_functions")))}</code> &middot; '
        f'{src.get("host_files", 0)} host files, {src.get("metal_files", 0)} Metal files &middot; schema v{report["schema_version"]}</div>'
        f'<div class="kpis">{kpis}</div>'
        f"<h2>Migration progress</h2>{chart(report, diff)}"
        + (_diff_html(diff) if diff is not None else "")
        + f'<h2>Ops</h2><div class="filters">{filters}<input type="search" id="search" placeholder="filter by name or kernel">'
        f'<span class="count"><span id="shown">{len(report["ops"])}</span> shown</span></div>'
        f'<table id="ops"><colgroup><col class="c-fam"><col class="c-cls"><col class="c-disp"><col class="c-ov"><col class="c-k"><col class="c-x"><col class="c-f"></colgroup><thead>{head}</thead><tbody>{rows}</tbody></table>'
        f'<h2>Classes</h2><ul>{legend}</ul>'
        f"<script>{JS}</script></body></html>\n"
    )
