"""``audit --history``: the history report (history.py's dict) as Markdown or one self-contained HTML page
(inline CSS, inline SVG line charts, a little inline JS to sort the tables; no network). JSON is render_json."""

from __future__ import annotations

from html import escape

from .model import CLASSES, FAMILY_CLASSES, FAMILY_DOC
from .render_html import COLORS, CSS
from .render_md import LIMIT, LIST_CAP


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:g}%"


def _short(commit: str | None) -> str:
    return (commit or "")[:10]


def _day(date: str | None) -> str:
    return (date or "")[:10]


def _subject(s: str, n: int = 90) -> str:
    return s if len(s) <= n else s[: n - 1].rstrip() + "…"


def _ok(points: list[dict]) -> list[dict]:
    return [p for p in points if p.get("families") is not None]


def _cls(c: str | None) -> str:
    return c or "(none)"


# ---------------------------------------------------------------- Markdown


def render_md(report: dict) -> str:
    src = report["source"]
    points = report["points"]
    ok = _ok(points)
    out = ["## MPS migration history", ""]
    out.append(
        f"`{src['range']}`: {len(points)} points of {src['revisions_in_range']} revisions"
        f"{' (first parent)' if src.get('first_parent') else ''}; yaml `{src['native_functions']}`."
    )
    out.append("")
    if not ok:
        out += ["No revision of the range has a native_functions.yaml.", ""]
        return "\n".join(out)
    a, b = ok[0], ok[-1]
    pa, pb = a["percent_migrated"]["ops"], b["percent_migrated"]["ops"]
    out.append(f"Op families migrated (native / known): {_pct(pa)} → {_pct(pb)}; overloads: {_pct(a['percent_migrated']['overloads'])} → {_pct(b['percent_migrated']['overloads'])}.")
    out.append("")
    out += [f"| family class | `{_short(a['commit'])}` ({_day(a['date'])}) | `{_short(b['commit'])}` ({_day(b['date'])}) | change |", "|---|---:|---:|---:|"]
    for c in FAMILY_CLASSES:
        d = b["families"][c] - a["families"][c]
        out.append(f"| `{c}` | {a['families'][c]} | {b['families'][c]} | {d:+d} |")
    out.append(f"| **total** | {a['families_total']} | {b['families_total']} | {b['families_total'] - a['families_total']:+d} |")
    out.append("")
    changes = report["changes"]
    out.append(f"### Families that changed class ({len(changes)})")
    out.append("")
    if changes:
        out += ["| family | from | to | commit | date | subject |", "|---|---|---|---|---|---|"]
        for m in changes[:LIST_CAP]:
            subj = _subject(m["subject"]).replace("|", "\\|")
            out.append(f"| `{m['family']}` | {_cls(m['old'])} | {_cls(m['new'])} | `{_short(m['commit'])}` | {_day(m['date'])} | {subj} |")
        if len(changes) > LIST_CAP:
            out.append(f"| … and {len(changes) - LIST_CAP} more | | | | | |")
    else:
        out.append("No family changed class.")
    out.append("")
    out += ["### Points", ""]
    out.append("| commit | date | " + " | ".join(FAMILY_CLASSES) + " | families migrated |")
    out.append("|---|---|" + "---:|" * (len(FAMILY_CLASSES) + 1))
    for p in points:
        if p.get("families") is None:
            out.append(f"| `{_short(p['commit'])}` | {_day(p['date'])} | " + " | ".join("" for _ in FAMILY_CLASSES) + f" | {p.get('error', '')} |")
        else:
            out.append(f"| `{_short(p['commit'])}` | {_day(p['date'])} | " + " | ".join(str(p["families"][c]) for c in FAMILY_CLASSES) + f" | {_pct(p['percent_migrated']['ops'])} |")
    out.append("")
    text = "\n".join(out)
    if len(text) > LIMIT:
        text = text[: LIMIT - 200].rsplit("\n", 1)[0] + "\n\n_(cut to fit a PR comment; see the JSON or HTML report)_\n"
    return text


# ---------------------------------------------------------------- HTML

W, H = 980, 280
X0, X1, Y0, Y1 = 48, 800, 16, 230  # plot area; the legend is right of X1


def _nice(n: int) -> int:
    """The smallest 4 x (1, 2 or 5) x 10^k at least ``n``: the y axis' top, four even grid steps."""
    for top in sorted(4 * step * 10**k for step in (1, 2, 5) for k in range(7)):
        if top >= n:
            return top
    return n


def line_chart(points: list[dict], key: str, classes: tuple[str, ...], chart_id: str, title: str) -> str:
    """One polyline per class over the points (evenly spaced, oldest left); a circle with a tooltip per value."""
    ok = _ok(points)
    top = _nice(max([max(p[key].values()) for p in ok] + [1]))
    n = len(points)

    def x(i: int) -> float:
        return (X0 + X1) / 2 if n == 1 else X0 + (X1 - X0) * i / (n - 1)

    def y(v: int) -> float:
        return Y1 - (Y1 - Y0) * v / top

    svg = []
    for k in range(5):  # grid and y labels
        v = top * k // 4
        svg.append(f'<line x1="{X0}" y1="{y(v):.1f}" x2="{X1}" y2="{y(v):.1f}" stroke="#d0d7de" stroke-width="1"/>')
        svg.append(f'<text x="{X0 - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#57606a">{v}</text>')
    labels = sorted({round(j * (n - 1) / 5) for j in range(6)}) if n > 1 else [0]
    for i in labels:
        p = points[i]
        svg.append(f'<line x1="{x(i):.1f}" y1="{Y1}" x2="{x(i):.1f}" y2="{Y1 + 4}" stroke="#57606a"/>')
        svg.append(f'<text x="{x(i):.1f}" y="{Y1 + 17}" text-anchor="middle" fill="#57606a">{escape(_short(p["commit"])[:7])}</text>')
        svg.append(f'<text x="{x(i):.1f}" y="{Y1 + 31}" text-anchor="middle" fill="#57606a">{escape(_day(p["date"]))}</text>')
    idx = [i for i, p in enumerate(points) if p.get(key) is not None]
    radius = 3.5 if n <= 30 else 2.0 if n <= 120 else 0  # many points: thinner markers, then the lines alone
    for li, c in enumerate(classes):
        pts = " ".join(f"{x(i):.1f},{y(points[i][key][c]):.1f}" for i in idx)
        svg.append(f'<polyline class="line" data-class="{c}" points="{pts}" fill="none" stroke="{COLORS[c]}" stroke-width="2.5"/>')
        for i in idx if radius else ():
            p = points[i]
            v = p[key][c]
            svg.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="{radius}" fill="{COLORS[c]}"><title>{escape(c)}: {v} at '
                f'{escape(_short(p["commit"]))} ({escape(_day(p["date"]))}) {escape(p["subject"])}</title></circle>'
            )
        last = points[idx[-1]][key][c] if idx else 0
        ly = Y0 + 4 + 22 * li
        svg.append(f'<rect x="{X1 + 24}" y="{ly}" width="12" height="12" fill="{COLORS[c]}"/>')
        svg.append(f'<text x="{X1 + 42}" y="{ly + 11}">{escape(c)} ({last})</text>')
    return (
        f'<svg id="{chart_id}" class="history" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        f'role="img" aria-label="{escape(title)}">' + "".join(svg) + "</svg>"
    )


SORT_JS = """
(function(){
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),function(table){
    var body=table.tBodies[0], ths=table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths,function(th,i){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('sorted-asc');
        Array.prototype.forEach.call(ths,function(h){h.classList.remove('sorted-asc','sorted-desc');});
        th.classList.add(asc?'sorted-asc':'sorted-desc');
        var rows=Array.prototype.slice.call(body.rows), num=th.getAttribute('data-type')==='num';
        rows.sort(function(a,b){
          var x=a.cells[i].getAttribute('data-sort'), y=b.cells[i].getAttribute('data-sort');
          if(num){x=parseFloat(x);y=parseFloat(y);return asc?x-y:y-x;}
          var c=x<y?-1:(x>y?1:0); return asc?c:-c;
        });
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
})();
"""


def _badge(c: str | None) -> str:
    if c is None:
        return '<span class="count">(none)</span>'
    return f'<span class="badge" style="background:{COLORS[c]}" title="{escape(FAMILY_DOC[c])}">{escape(c)}</span>'


def _td(text_html: str, sort) -> str:
    return f'<td data-sort="{escape(str(sort))}">{text_html}</td>'


def render_html(report: dict) -> str:
    src = report["source"]
    points = report["points"]
    ok = _ok(points)
    order = {p["commit"]: i for i, p in enumerate(points)}
    rank = {c: i for i, c in enumerate(FAMILY_CLASSES)}
    if ok:
        a, b = ok[0], ok[-1]
        kpis = (
            f'<div class="kpi"><span class="big">{_pct(a["percent_migrated"]["ops"])} &rarr; {_pct(b["percent_migrated"]["ops"])}</span><small>op families migrated (native / known)</small></div>'
            f'<div class="kpi"><span class="big">{a["families"]["native"]} &rarr; {b["families"]["native"]}</span><small>native op families</small></div>'
            f'<div class="kpi"><span class="big">{len(report["changes"])}</span><small>class changes</small></div>'
        )
        charts = f"<h2>Op families by class</h2>{line_chart(points, 'families', FAMILY_CLASSES, 'history-families', 'Op families by class over time')}" + (
            f"<h2>Overloads by class</h2>{line_chart(points, 'overloads', CLASSES, 'history-overloads', 'Overloads by class over time')}"
        )
    else:
        kpis, charts = "", "<p>No revision of the range has a native_functions.yaml.</p>"
    rows = []
    for m in report["changes"]:
        rows.append(
            f'<tr data-kind="{escape(m["kind"])}">'
            + _td(f"<code>{escape(m['family'])}</code>", m["family"])
            + _td(_badge(m["old"]), rank.get(m["old"], -1))
            + _td(_badge(m["new"]), rank.get(m["new"], -1))
            + _td(escape(m["kind"]), m["kind"])
            + _td(f'<code title="{escape(m["commit"])}">{escape(_short(m["commit"]))}</code>', order.get(m["commit"], 0))
            + _td(escape(_day(m["date"])), m["date"])
            + _td(f'<span title="{escape(m["subject"])}">{escape(_subject(m["subject"]))}</span>', m["subject"])
            + "</tr>"
        )
    changes = (
        '<table id="changes" class="sortable"><thead><tr><th data-type="str">Family</th><th data-type="num">From</th><th data-type="num">To</th>'
        '<th data-type="str">Kind</th><th data-type="num">Commit</th><th data-type="str">Date</th><th data-type="str">Subject</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else "<p>No family changed class.</p>"
    )
    prow = []
    for i, p in enumerate(points):
        cells = _td(f'<code title="{escape(p["commit"])}">{escape(_short(p["commit"]))}</code>', i) + _td(escape(_day(p["date"])), p["date"])
        if p.get("families") is None:
            cells += "".join(_td("", -1) for _ in FAMILY_CLASSES) + _td(escape(p.get("error") or ""), -1)
        else:
            pm = p["percent_migrated"]["ops"]
            cells += "".join(_td(str(p["families"][c]), p["families"][c]) for c in FAMILY_CLASSES) + _td(_pct(pm), -1 if pm is None else pm)
        cells += _td(f'<span title="{escape(p["subject"])}">{escape(_subject(p["subject"]))}</span>', p["subject"])
        prow.append(f"<tr>{cells}</tr>")
    phead = (
        '<tr><th data-type="num">Commit</th><th data-type="str">Date</th>'
        + "".join(f'<th data-type="num">{c}</th>' for c in FAMILY_CLASSES)
        + '<th data-type="num">migrated</th><th data-type="str">Subject</th></tr>'
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>MPS migration history</title>"
        f"<style>{CSS}table.sortable{{table-layout:auto}}</style></head><body>"
        "<h1>MPS migration history</h1>"
        f'<div class="meta">{escape(report["tool"])} &middot; <code>{escape(src["range"])}</code> &middot; '
        f'{len(points)} points of {src["revisions_in_range"]} revisions{" (first parent)" if src.get("first_parent") else ""} &middot; '
        f'<code>{escape(str(src["native_functions"]))}</code> &middot; schema v{report["schema_version"]}</div>'
        f'<div class="kpis">{kpis}</div>'
        f"{charts}"
        f'<h2>Families that changed class ({len(report["changes"])})</h2>{changes}'
        f'<h2>Points</h2><table id="points" class="sortable"><thead>{phead}</thead><tbody>{"".join(prow)}</tbody></table>'
        f"<script>{SORT_JS}</script></body></html>\n"
    )
