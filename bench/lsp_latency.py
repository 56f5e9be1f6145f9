"""Latency of ``mpslint server``: the time from a ``didChange`` to its ``publishDiagnostics``.

    python bench/lsp_latency.py                       # fixtures/aten, the wheel tree and a synthetic 1x tree, both scopes
    python bench/lsp_latency.py --trees fixtures --edits 30
    python bench/lsp_latency.py --tree DIR            # any tree (its largest .mm is edited)

Trees: ``fixtures`` (fixtures/aten), ``wheel`` (the torch wheel's real 15k-line ``native_functions.yaml``
and MPS/c10 Metal headers, with fixtures/aten's MPS sources in it: needs torch), ``synthetic-Nx``
(``bench/gen_tree.py``: ~80 ``.mm`` files of ~500 lines per 1x).  A real client (pytest-lsp's, over stdio) starts ``python -m mpslint server`` on each tree with
``debounceMs: 0`` (the configured debounce, 200 ms by default, adds to every number below), opens
the tree's largest ``.mm`` file and sends whole-document changes, each a new text (a comment line
appended and its number changed), so the changed file is re-analysed every time; the rest of the tree
comes from memory.  The first ``--warmup`` changes are not timed (imports, first graph);
the median and 95th percentile of the next ``--edits`` are reported against the 150 ms target, then
the same edits in process (``Workspace.update`` + ``lint``): median wall and CPU time, the CPU time being
what an edit costs on an idle core when other jobs share the machine.
Nothing is written into the repository: trees and caches go to a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150


def wheel_tree(dst: Path) -> Path | None:
    """The torch wheel's real native_functions.yaml, ATen/native/mps and c10/metal headers (as in
    tests/conftest.py's real_tree) plus fixtures/aten's MPS sources, whose largest .mm is edited."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None
    site = Path(spec.origin).parent.parent
    yaml = site / "torchgen/packaged/ATen/native/native_functions.yaml"
    if not yaml.is_file():
        return None
    native = dst / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(yaml, native)
    shutil.copytree(site / "torch/include/ATen/native/mps", native / "mps")
    shutil.copytree(site / "torch/include/c10/metal", dst / "c10/metal")
    for sub in ("operations", "kernels"):
        for f in (ROOT / "fixtures/aten/src/ATen/native/mps" / sub).iterdir():
            (native / "mps" / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy(f, native / "mps" / sub / f.name)
    return dst


def largest_mm(tree: Path) -> Path:
    return max(tree.rglob("*.mm"), key=lambda p: (p.stat().st_size, str(p)))


async def measure(tree: Path, scope: str, edits: int, warmup: int, cache: Path) -> dict:
    from pytest_lsp import make_test_lsp_client

    client = make_test_lsp_client()
    await client.start_io(sys.executable, "-m", "mpslint", "server")
    t0 = time.perf_counter()
    await client.initialize_session(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(),
        root_uri=tree.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=tree.as_uri(), name=tree.name)],
        initialization_options={"cacheDir": str(cache), "debounceMs": 0, "scope": scope},
    ))
    path = largest_mm(tree)
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8")

    async def published():
        while True:
            p = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if p.uri == uri:
                return p

    waiter = asyncio.ensure_future(published())
    await asyncio.sleep(0)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="objective-cpp", version=1, text=text)))
    first = await asyncio.wait_for(waiter, 600)
    ready = time.perf_counter() - t0  # start, load the tree, first lint of the file
    times, ndiag = [], len(first.diagnostics)
    for i in range(warmup + edits):
        waiter = asyncio.ensure_future(published())
        await asyncio.sleep(0)
        start = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=i + 2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=f"{text}// edit {i}\n")]))
        p = await asyncio.wait_for(waiter, 600)
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1000)
        ndiag = len(p.diagnostics)
    await client.shutdown_session()
    await client.stop()
    times.sort()
    p95 = times[min(len(times) - 1, max(0, round(0.95 * len(times)) - 1))]
    return {"tree": tree.name, "file": path.name, "lines": text.count("\n"), "scope": scope, "ready_s": ready, "median_ms": statistics.median(times), "p95_ms": p95, "max_ms": times[-1], "diagnostics": ndiag}


def in_process(tree: Path, scope: str, edits: int, warmup: int, cache: Path) -> dict:
    """The same edits through ``Workspace`` directly: wall and CPU time of update + lint (the CPU time is
    what a change costs on an idle core, whatever else the machine runs)."""
    from mpslint.server.workspace import Settings, Workspace

    ws = Workspace(tree, Settings(cache_dir=str(cache), scope=scope))
    path = largest_mm(tree)
    text = path.read_text(encoding="utf-8")
    wall, cpu = [], []
    for i in range(warmup + edits):
        w0, c0 = time.perf_counter(), time.process_time()
        ws.update(str(path), f"{text}// in-process edit {i}\n")
        ws.lint(str(path))
        if i >= warmup:
            wall.append((time.perf_counter() - w0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    return {"wall_ms": statistics.median(wall), "cpu_ms": statistics.median(cpu)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", default="fixtures,wheel,synthetic-1x", help="comma-separated: fixtures, wheel, synthetic-1x, synthetic-3x")
    ap.add_argument("--tree", help="measure this tree instead")
    ap.add_argument("--scopes", default="neighbourhood,tree")
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mpslint-lsp-bench-"))
    try:
        trees = []
        if args.tree:
            trees.append(Path(args.tree).resolve())
        else:
            for name in args.trees.split(","):
                if name == "fixtures":
                    dst = work / "fixtures"
                    shutil.copytree(ROOT / "fixtures" / "aten", dst)
                    trees.append(dst)
                elif name == "wheel":
                    dst = wheel_tree(work / "wheel")
                    if dst is None:
                        print("wheel: torch is not installed; skipped", flush=True)
                        continue
                    trees.append(dst)
                elif name.startswith("synthetic-"):
                    dst = work / name
                    scale = name.split("-")[1].rstrip("x")
                    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_tree.py"), str(dst), "--scale", scale], check=True, capture_output=True)
                    trees.append(dst)
                else:
                    ap.error(f"unknown tree {name!r}")
        rows = []
        for tree in trees:
            for scope in args.scopes.split(","):
                rows.append(asyncio.run(measure(tree, scope, args.edits, args.warmup, work / "cache")))
                r = rows[-1]
                verdict = "ok" if r["median_ms"] <= TARGET_MS else "MISSED"
                load = " ".join(f"{x:.1f}" for x in os.getloadavg())
                print(f"{r['tree']:>14} {r['file']:>26} {r['lines']:5d} lines  {r['scope']:<13} ready {r['ready_s']:6.2f} s  "
                      f"median {r['median_ms']:7.1f} ms  p95 {r['p95_ms']:7.1f} ms  max {r['max_ms']:7.1f} ms  "
                      f"diagnostics {r['diagnostics']:3d}  load {load}  (target <= {TARGET_MS} ms warm: {verdict})", flush=True)
                ip = in_process(tree, scope, args.edits, args.warmup, work / "cache")
                print(f"{'':>14} {'in process: update + lint':>26} median wall {ip['wall_ms']:7.1f} ms  cpu {ip['cpu_ms']:7.1f} ms", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
