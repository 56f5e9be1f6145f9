"""The audit's HTML pages in a real browser: Debian's headless Chromium (screenshot, --dump-dom) and selenium
driving it through /usr/bin/chromedriver (typing in the filter box, clicking class filters and column headers).

Outside CI these tests skip when chromium, chromedriver or selenium is missing; with ``CI`` set (``.ci/run``
installs chromium and chromium-driver) they fail instead, so a CI run never passes without a browser.
"""

from __future__ import annotations

import html as _html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mpslint.audit.classify import run_audit
from mpslint.audit.model import FAMILY_CLASSES
from mpslint.audit.render_html import render as render_html

from .conftest import FIXTURES, ROOT

ATEN = FIXTURES / "aten"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def need(what: str, found) -> None:
    """Skip without ``what``; in CI, fail: the browser tests must run there."""
    if found:
        return
    msg = f"{what} not installed (apt-get install -y chromium chromium-driver; pip install 'selenium>=4')"
    if in_ci():
        pytest.fail(f"{msg}: CI is set, so the browser tests must not skip")
    pytest.skip(msg)


def chromium() -> str:
    path = shutil.which("chromium")
    need("chromium", path)
    return path


def chromedriver() -> str:
    path = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.isfile("/usr/bin/chromedriver") else None)
    need("chromedriver", path)
    return path


@pytest.fixture(scope="module")
def fixture_report():
    audit, result = run_audit([str(ATEN)], cwd=ROOT)
    assert not result.internal_errors
    return audit.to_dict()


# ---------------------------------------------------------------- screenshot


def png_pixels(path: Path):
    """(width, height, bytes per pixel, rows) of an 8-bit RGB/RGBA PNG, decoded with zlib alone."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def color_histogram(png: Path, step: int = 4) -> tuple[int, int, dict[bytes, int]]:
    width, height, bpp, rows = png_pixels(png)
    colors: dict[bytes, int] = {}
    for row in rows[::step]:
        for x in range(0, width * bpp, bpp * step):
            px = row[x : x + 3]
            colors[px] = colors.get(px, 0) + 1
    return width, height, colors


def test_screenshot_in_headless_chromium_shows_the_chart(tmp_path):
    chromium()
    png = tmp_path / "audit.png"
    mpslint = shutil.which("mpslint") or str(Path(sys.executable).parent / "mpslint")
    r = subprocess.run(
        ["bash", str(ROOT / "bench/audit_screenshot.sh"), str(ATEN), str(png), "700"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "MPSLINT": mpslint},
    )
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 20_000, "a screenshot this small is a blank or error page"
    width, height, colors = color_histogram(png)
    assert width == 1280 and height == 700
    total = sum(colors.values())
    assert colors.get(b"\xff\xff\xff", 0) < 0.97 * total, "the page is blank"
    assert len(colors) > 50, "too few distinct colours: no text or chart"
    # the chart's bars are drawn in the class colours: native green, mpsgraph red, mixed orange
    for rgb in ((0x2E, 0x7D, 0x32), (0xC6, 0x28, 0x28), (0xEF, 0x6C, 0x00)):
        assert colors.get(bytes(rgb), 0) > 20, f"no {rgb} pixels: chart not rendered"


_PROBE = """<script>
(function(){
  var b = document.querySelector('.filters input[value=composite]');
  b.checked = false; b.dispatchEvent(new Event('change'));
  var th = document.querySelectorAll('#ops th')[0]; th.click(); th.click();
  var rows = [].slice.call(document.querySelectorAll('#ops tbody tr'));
  var vis = rows.filter(function(r){ return r.style.display !== 'none'; }).map(function(r){ return r.cells[0].textContent; });
  document.body.setAttribute('data-probe', JSON.stringify({shown: document.getElementById('shown').textContent, rows: vis}));
})();
</script></body>"""


def test_filters_and_sorting_work_in_headless_chromium(tmp_path, fixture_report):
    page = tmp_path / "probe.html"
    page.write_text(render_html(fixture_report).replace("</body>", _PROBE))
    r = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    m = re.search(r'data-probe="([^"]*)"', r.stdout)
    assert m, r.stderr[-2000:]
    probe = json.loads(_html.unescape(m.group(1)))
    kept = sorted((op["family"] for op in fixture_report["ops"] if op["class"] != "composite"), reverse=True)
    assert probe["rows"] == kept  # composite filtered out, then sorted by family, descending
    assert probe["shown"] == str(len(kept))


# ---------------------------------------------------------------- selenium


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    chromium()
    driver_path = chromedriver()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        need("selenium", None)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium()
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.add_argument("--window-size=1280,900")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, to catch script errors
    # an explicit driver path: selenium-manager is never run, nothing is downloaded
    d = webdriver.Chrome(service=Service(driver_path), options=opts)
    d.set_page_load_timeout(60)
    try:
        yield d
    finally:
        d.quit()


def severe_console_messages(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def visible_families(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [r.find_element(By.CSS_SELECTOR, "td").text for r in driver.find_elements(By.CSS_SELECTOR, "#ops tbody tr") if r.is_displayed()]


def _matches(op: dict, q: str) -> bool:
    """The filter box's documented semantics: a substring of the family, its class, an overload or a kernel name."""
    words = [op["family"], op["class"]] + [o["name"] for o in op["overloads"]] + [k["name"] for k in op["kernels"]]
    return any(q in w.lower() for w in words)


def test_selenium_filter_box_class_filters_and_sorting(tmp_path, driver, fixture_report):
    from selenium.webdriver.common.by import By

    page = tmp_path / "audit.html"
    page.write_text(render_html(fixture_report), encoding="utf-8")
    driver.get(page.as_uri())
    ops = fixture_report["ops"]
    order = [op["family"] for op in ops]
    assert visible_families(driver) == order  # the report's order: by family name
    shown = driver.find_element(By.ID, "shown")
    assert shown.text == str(len(ops))

    # typing in the filter box keeps the matching rows, in order
    box = driver.find_element(By.ID, "search")
    box.send_keys("fill")
    want = [op["family"] for op in ops if _matches(op, "fill")]
    assert 0 < len(want) < len(ops)
    assert visible_families(driver) == want
    assert shown.text == str(len(want))
    box.clear()
    box.send_keys("x")  # clear() fires no input event: type, then delete, like a user
    box.send_keys("\b")
    assert visible_families(driver) == order

    # clicking class filters hides those classes
    present = sorted({op["class"] for op in ops}, key=FAMILY_CLASSES.index)
    assert len(present) >= 3
    off = present[-2:]
    for cls in off:
        driver.find_element(By.CSS_SELECTOR, f'.filters input[value="{cls}"]').click()
    want = [op["family"] for op in ops if op["class"] not in off]
    assert visible_families(driver) == want
    assert shown.text == str(len(want))

    # filters and the box combine
    box.send_keys("co")
    both = [op["family"] for op in ops if op["class"] not in off and _matches(op, "co")]
    assert visible_families(driver) == both
    box.send_keys("\b\b")

    # a column header sorts the rows: Family twice (descending), then Class (by the ladder, stable)
    heads = driver.find_elements(By.CSS_SELECTOR, "#ops thead th")
    assert heads[0].text.startswith("Family") and heads[1].text.startswith("Class")
    heads[0].click()
    assert visible_families(driver) == sorted(want)
    heads[0].click()
    assert "sorted-desc" in heads[0].get_attribute("class")
    desc = sorted(want, reverse=True)
    assert visible_families(driver) == desc
    heads[1].click()
    cls_of = {op["family"]: op["class"] for op in ops}
    assert visible_families(driver) == sorted(desc, key=lambda f: FAMILY_CLASSES.index(cls_of[f]))
    # re-enabling a class brings its rows back in the current order
    driver.find_element(By.CSS_SELECTOR, f'.filters input[value="{off[0]}"]').click()
    back = [f for f in sorted(sorted(order, reverse=True), key=lambda f: FAMILY_CLASSES.index(cls_of[f])) if cls_of[f] != off[1]]
    assert visible_families(driver) == back
    assert not severe_console_messages(driver)


# ---------------------------------------------------------------- the history page (audit --history)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    from mpslint.audit.history import run_history

    from ._history_repo import build_history_repo

    h = build_history_repo(tmp_path_factory.mktemp("history"))
    report, _ = run_history([str(h.path)], "main", cwd=h.path)
    return h, report


def test_selenium_history_page_charts_and_changed_families(tmp_path, driver, history):
    from selenium.webdriver.common.by import By

    from mpslint.audit.model import CLASSES
    from mpslint.audit.render_history import render_html as render_history

    h, report = history
    page = tmp_path / "history.html"
    page.write_text(render_history(report), encoding="utf-8")
    driver.get(page.as_uri())
    assert not severe_console_messages(driver)
    n = len(report["points"])
    for chart_id, classes in (("history-families", FAMILY_CLASSES), ("history-overloads", CLASSES)):
        svg = driver.find_element(By.ID, chart_id)
        assert svg.is_displayed() and svg.size["width"] > 600 and svg.size["height"] > 200
        lines = svg.find_elements(By.CSS_SELECTOR, "polyline.line")
        assert [ln.get_attribute("data-class") for ln in lines] == list(classes)
        for ln in lines:
            assert len(ln.get_attribute("points").split()) == n
    # the native line rises at the migration commit and falls back: its y goes up (smaller), then down
    native = driver.find_element(By.CSS_SELECTOR, '#history-families polyline[data-class="native"]')
    ys = [float(p.split(",")[1]) for p in native.get_attribute("points").split()]
    assert ys[2] < ys[1] and ys[4] > ys[2]

    def change_rows():
        return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in driver.find_elements(By.CSS_SELECTOR, "#changes tbody tr")]

    c = [x[:10] for x in h.commits]
    rows = change_rows()
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("copysign", "mixed", "native", c[2]),
        ("sinc", "native", "unknown", c[3]),
        ("copysign", "native", "mixed", c[4]),
        ("frobnicate", "(none)", "unknown", c[4]),
    ]
    heads = driver.find_elements(By.CSS_SELECTOR, "#changes thead th")
    heads[0].click()  # by family, stable: the two copysign moves keep their order
    assert [(r[0], r[4]) for r in change_rows()] == [("copysign", c[2]), ("copysign", c[4]), ("frobnicate", c[4]), ("sinc", c[3])]
    heads[4].click()
    heads[4].click()  # by commit, newest first
    assert [r[4] for r in change_rows()] == [c[4], c[4], c[3], c[2]]
    points = driver.find_elements(By.CSS_SELECTOR, "#points tbody tr")
    assert [tr.find_element(By.TAG_NAME, "td").text for tr in points] == c
    png = tmp_path / "history.png"
    png.write_bytes(driver.get_screenshot_as_png())
    _, _, colors = color_histogram(png, step=2)
    for rgb in ((0x2E, 0x7D, 0x32), (0xEF, 0x6C, 0x00), (0x9E, 0x9E, 0x9E)):  # native, mixed, unknown lines
        assert colors.get(bytes(rgb), 0) > 30, f"no {rgb} pixels: the line chart is not drawn"
