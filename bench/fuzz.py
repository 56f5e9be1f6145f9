"""Fuzz mpslint: mutated fixtures and arbitrary bytes through every stage, across processes.

    python bench/fuzz.py                      # 100,000 inputs over every core, crashes saved to bench/fuzz-crashes/
    python bench/fuzz.py -n 2000 --jobs 1     # a quick run
    python bench/fuzz.py --seed 7 --replay 12345   # re-run one input (prints its traceback)

Each input is derived from one integer seed (``--seed`` + its index), so a crash is reproducible from its
number alone.  An input is a fixture under ``fixtures/`` (or random bytes) run through a stack of random
mutations: byte flips, truncation, line deletion / duplication / swapping, lines spliced from another
fixture, unbalanced brackets, quotes, raw strings, comments and ``#if``s, odd characters (NUL, lone CR,
U+2028, BOM, multi-byte UTF-8) and deep nesting.  Every input goes through

  * reading (``project.read_source`` on the bytes, as a file on disk would be),
  * masking (``mask_metal`` and ``mask_objc``: the masked text must keep the length and every line break),
  * the file's facts (``project.file_facts``; ``RecursionError`` is the engine's "too deeply nested" skip),
  * and, for one input in ``--full-every``, the whole fixture project with the mutated file in place of the
    original: graph, every rule (``--select ALL``) and the text and json reporters,
  * and, for one input in ``--engine-every``, ``mpslint.engine.lint`` on a temporary tree (discovery included).

Anything that raises, a reporter or rule crash, an ``internal_errors`` entry, a broken masking invariant or an
input that takes longer than ``--timeout`` seconds is a crash: its input is written to ``bench/fuzz-crashes/``
(``<seed>.<ext>`` and ``<seed>.txt`` with the traceback) and counted.  The summary line gives inputs, inputs/s,
crashes and the time; ``--json`` writes the same numbers to a file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
CRASH_DIR = Path(__file__).resolve().parent / "fuzz-crashes"

# ---------------------------------------------------------------- corpus


def corpus() -> list[tuple[str, str, str]]:
    """(path relative to fixtures/, kind, text) of every fixture mpslint would lint."""
    from mpslint.discovery import kind_of

    out = []
    for p in sorted(FIXTURES.rglob("*")):
        if not p.is_file():
            continue
        kind = kind_of(p, True)
        if kind is None:
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out.append((p.relative_to(FIXTURES).as_posix(), kind, text))
    return out


# ---------------------------------------------------------------- mutations

TOKENS = [
    "(", ")", "{", "}", "[", "]", "[[", "]]", "<", ">", '"', "'", "\\", "\\\n", "/*", "*/", "//", "\n",
    'R"(', ')"', 'R"x(', ')x"', 'u8R"(', "#if 0\n", "#if 1\n", "#ifdef X\n", "#else\n", "#elif 1\n", "#endif\n",
    "#define F(x) x\n", "#define G(", "#include <metal_stdlib>\n", "#include \"", "#pragma once\n",
    "@", "@\"", "@autoreleasepool", "^{", "^(", "[x y:", "[[buffer(", "[[host_name(\"", "]];", "kernel void ",
    "template <typename T>", "template<", "device ", "threadgroup ", "constant ", "thread ", "::", "->", ";",
    ",", ":", "?", "&&", "*", "&", "=", "0x", "1'000", "'\\''", "dispatch_sync(q, ^{", "});", "REGISTER_UNARY_OP(",
    "REGISTER_STUB(", "TORCH_IMPL_FUNC(", "static_cast<uint32_t>(", ".numel()", "if constexpr (", "IF_CONSTEXPR",
    "- func: ", "  dispatch:\n", "    MPS: ", "  structured_delegate: ", "&id001 ", "*id001", "!!python/object ",
    "{a: [", ": |\n", "\t", "  ", "compile_shader(\"\"\"", "\"\"\"", "'''", "f\"{", "xfail(", "# mpslint: ignore[",
    "// mpslint: ignore-file[MPS102]", "// expect: MPS101", "\x00", "\r", "\u2028", "\ufeff", "\u00e9", "\U0001f600",
    "\x0c", "\x0b", "\u200b",
]
NEST_OPEN = ["(", "{", "[", "<", "if (x) ", "#if 1\n", "- [", "{a: ", "template<typename T, ", "f(", "/*", "[[", "^{", "[x y:"]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def mutate_text(rng: random.Random, text: str, others: list[str], max_nest: int = 3000) -> str:
    """One random mutation of ``text`` (``others``: texts of other fixtures to splice from)."""
    op = rng.randrange(12)
    n = len(text)
    if op == 0 and n:  # truncate
        return text[: rng.randrange(n)]
    if op == 1:  # insert tokens
        for _ in range(rng.randint(1, 4)):
            i = rng.randint(0, len(text))
            text = text[:i] + rng.choice(TOKENS) + text[i:]
        return text
    if op == 2 and n:  # delete a character range
        i = rng.randrange(n)
        return text[:i] + text[i + rng.randint(1, 40) :]
    if op in (3, 4, 5):
        lines = _lines(text)
        if not lines:
            return rng.choice(TOKENS)
        i = rng.randrange(len(lines))
        if op == 3:  # delete lines
            del lines[i : i + rng.randint(1, 5)]
        elif op == 4:  # duplicate lines
            k = rng.randint(1, 5)
            lines[i:i] = lines[i : i + k] * rng.randint(1, 3)
        else:  # swap two lines
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)
    if op == 6 and others:  # splice lines from another fixture
        src = _lines(rng.choice(others))
        lines = _lines(text)
        if src:
            a = rng.randrange(len(src))
            chunk = src[a : a + rng.randint(1, 12)]
            i = rng.randint(0, len(lines))
            lines[i:i] = chunk
        return "".join(lines)
    if op == 7:  # deep nesting
        depth = rng.choice([50, 200, 1000, max_nest])
        opener = rng.choice(NEST_OPEN)
        i = rng.randint(0, len(text))
        closer = {"(": ")", "{": "}", "[": "]", "<": ">", "- [": "]", "{a: ": "}", "f(": ")", "[[": "]]", "^{": "}", "/*": "*/"}.get(opener, "")
        body = opener * depth + ("x" if rng.random() < 0.5 else "") + (closer * depth if rng.random() < 0.5 else "")
        return text[:i] + body + text[i:]
    if op == 8 and n:  # byte flips, through UTF-8 and back
        data = bytearray(text.encode("utf-8"))
        for _ in range(rng.randint(1, 8)):
            k = rng.randrange(len(data))
            data[k] ^= 1 << rng.randrange(8)
        return data.decode("utf-8", errors="replace")
    if op == 9 and n:  # replace a line by a random one from any fixture, or a random character soup
        lines = _lines(text) or [""]
        i = rng.randrange(len(lines))
        if rng.random() < 0.5 and others:
            pool = _lines(rng.choice(others)) or [""]
            lines[i] = rng.choice(pool)
        else:
            lines[i] = "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 12))) + "\n"
        return "".join(lines)
    if op == 10:  # random printable / any code point soup at a random place
        i = rng.randint(0, len(text))
        alphabet = [chr(rng.randrange(0x20, 0x7F)) for _ in range(20)] + ["\n", "\t", chr(rng.randrange(0x80, 0x3000))]
        return text[:i] + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 200))) + text[i:]
    if op == 11 and n:  # cut a random range and paste it elsewhere
        a = rng.randrange(n)
        b = min(n, a + rng.randint(1, 300))
        piece = text[a:b]
        rest = text[:a] + text[b:]
        j = rng.randint(0, len(rest))
        return rest[:j] + piece + rest[j:]
    return text + rng.choice(TOKENS)


def make_input(seed: int, files: list[tuple[str, str, str]]) -> tuple[str, str, bytes, str]:
    """(fixture path, kind, content bytes, description) for one seed."""
    rng = random.Random(seed)
    path, kind, text = files[rng.randrange(len(files))]
    r = rng.random()
    if r < 0.05:  # arbitrary bytes under a fixture's name
        data = rng.randbytes(rng.choice([0, 1, 16, 300, 4000]))
        return path, kind, data, "random bytes"
    if r < 0.10:  # arbitrary bytes that decode as UTF-8 (latin-1 and random code points)
        k = rng.choice([1, 16, 300, 4000])
        s = "".join(chr(rng.randrange(1, 0x800) if rng.random() < 0.3 else rng.randrange(1, 0x80)) for _ in range(k))
        return path, kind, s.encode("utf-8"), "random text"
    others = [t for _p, _k, t in files]
    steps = rng.choice([1, 1, 2, 3, 5, 10])
    for _ in range(steps):
        text = mutate_text(rng, text, others)
    data = text.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.03:  # a raw byte-level flip: most of these stop at the UTF-8 check
        b = bytearray(data)
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
    return path, kind, data, f"{steps} mutation(s)"


# ---------------------------------------------------------------- the pipeline


class Crash(Exception):
    pass


def check_masking(text: str) -> None:
    from mpslint.masking import mask_metal, mask_objc

    breaks = [i for i, c in enumerate(text) if c == "\n"]
    for fn in (mask_metal, mask_objc):
        out = fn(text)
        if len(out) != len(text):
            raise Crash(f"{fn.__name__} changed the length: {len(text)} -> {len(out)}")
        got = [i for i, c in enumerate(out) if c == "\n"]
        if got != breaks:
            raise Crash(f"{fn.__name__} moved line breaks")


_BASE: dict | None = None


def _base_project():
    """Facts of every fixtures/aten file, computed once per process."""
    global _BASE
    if _BASE is None:
        from mpslint.discovery import discover
        from mpslint.project import file_facts, read_source

        files, _ = discover([str(FIXTURES / "aten")], ROOT)
        base = {}
        for d in files:
            src = read_source(d)
            base[d.path] = (d, src, file_facts(src))
        _BASE = base
    return _BASE


def run_full(path: str, src) -> None:
    """The mutated file inside the fixture project: graph, every rule, text and json reports."""
    from mpslint.engine import LintResult
    from mpslint.project import Project, add_facts, build_graph, file_facts
    from mpslint.reporters import get_reporter
    from mpslint.rule import RuleContext, select_rules

    project = Project()
    rel = "fixtures/" + path
    internal = []
    for p, (_d, bsrc, facts) in _base_project().items():
        if p == rel:
            continue
        add_facts(project, bsrc, facts, True)
    try:
        facts = file_facts(src)
    except RecursionError:
        facts = None
    if facts is not None:
        add_facts(project, src, facts, True)
    project.graph = build_graph(project)
    rules = select_rules(["ALL"])
    ctx = RuleContext(project, project.graph, {})
    findings = []
    for cls in rules:
        findings.extend(cls().check(ctx))
    from mpslint.model import Finding

    findings.sort(key=Finding.sort_key)
    result = LintResult(findings, project.errors, internal, [], project.stats, project, rules, len(project.linted))
    for fmt in ("text", "json"):
        get_reporter(fmt)(result, color=False, statistics=True)
    # a finding's span must lie inside its file
    for f in findings:
        s = project.sources.get(f.path)
        if s is not None and not (0 <= f.span.start <= f.span.end <= len(s.text)):
            raise Crash(f"{f.code} span {f.span} outside {f.path} ({len(s.text)} chars)")


def run_engine(path: str, kind: str, data: bytes) -> None:
    """``mpslint.engine.lint`` on a temporary tree: the mutated file among copies of a few fixtures."""
    from mpslint.engine import LintOptions, lint
    from mpslint.reporters import get_reporter

    with tempfile.TemporaryDirectory(prefix="mpslint-fuzz-") as tmp:
        root = Path(tmp)
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        yaml = FIXTURES / "aten/src/ATen/native/native_functions.yaml"
        if not path.endswith("native_functions.yaml"):
            (root / "native_functions.yaml").write_bytes(yaml.read_bytes())
        result = lint(LintOptions(paths=[str(root)], select=["ALL"], cwd=root, jobs=1))
        if result.internal_errors:
            raise Crash("internal errors: " + " | ".join(result.internal_errors))
        for fmt in ("text", "json"):
            get_reporter(fmt)(result, color=False, statistics=False)


def check_input(path: str, kind: str, data: bytes, *, full: bool = False, engine: bool = False) -> str:
    """Run one input; raise on a crash.  Returns what happened (for statistics)."""
    from mpslint.discovery import Discovered
    from mpslint.model import FileError
    from mpslint.project import file_facts, read_source

    if engine:
        run_engine(path, kind, data)
    with tempfile.NamedTemporaryFile(suffix=Path(path).suffix or ".txt") as fh:
        fh.write(data)
        fh.flush()
        src = read_source(Discovered("fixtures/" + path, fh.name, kind, True))
    if isinstance(src, FileError):
        str(src)
        return "file-error"
    check_masking(src.text)
    status = "ok"
    try:
        file_facts(src)
    except RecursionError:
        status = "recursion"
    if full:
        run_full(path, src)
    return status


def ext_of(path: str) -> str:
    return Path(path).suffix.lstrip(".") or "txt"


# ---------------------------------------------------------------- driver

_FILES = None


def _init():
    global _FILES
    _FILES = corpus()
    _base_project()
    signal.signal(signal.SIGALRM, _alarm)


def _alarm(signum, frame):
    raise TimeoutError("input took too long")


def _run_chunk(args):
    seeds, full_every, engine_every, timeout = args
    stats: dict[str, int] = {}
    crashes = []
    for seed in seeds:
        path, kind, data, desc = make_input(seed, _FILES)
        signal.alarm(timeout)
        try:
            st = check_input(path, kind, data, full=(seed % full_every == 0), engine=(engine_every and seed % engine_every == 0))
            stats[st] = stats.get(st, 0) + 1
        except BaseException as e:  # noqa: BLE001 - a fuzzer records everything
            if isinstance(e, KeyboardInterrupt):
                raise
            crashes.append((seed, path, kind, data, desc, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        finally:
            signal.alarm(0)
    return len(seeds), stats, crashes


def save_crash(seed, path, kind, data, desc, tb) -> Path:
    CRASH_DIR.mkdir(exist_ok=True)
    out = CRASH_DIR / f"{seed}.{ext_of(path)}"
    out.write_bytes(data)
    (CRASH_DIR / f"{seed}.txt").write_text(f"seed {seed}\nfixture {path} (kind {kind})\n{desc}\nsha1 {hashlib.sha1(data).hexdigest()}\n\n{tb}")
    return out


def replay_crashes() -> int:
    """Re-run the saved crashing inputs (after a fix, each should pass); 1 if any still fails."""
    failed = 0
    for meta in sorted(CRASH_DIR.glob("*.txt")):
        lines = meta.read_text().splitlines()
        path, kind = lines[1].split()[1], lines[1].split("(kind ")[1].rstrip(")")
        data = (CRASH_DIR / f"{meta.stem}.{ext_of(path)}").read_bytes()
        t0 = time.monotonic()
        try:
            st = check_input(path, kind, data, full=True, engine=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            st = f"FAILS: {type(e).__name__}: {e}"
        print(f"{meta.stem} ({path}, {len(data)} bytes): {st} in {time.monotonic() - t0:.2f}s")
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--inputs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0, help="first seed (inputs are seed, seed+1, ...)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--full-every", type=int, default=10, help="run graph + every rule + reporters on one input in N")
    ap.add_argument("--engine-every", type=int, default=200, help="run engine.lint on a temp tree for one input in N (0: never)")
    ap.add_argument("--timeout", type=int, default=30, help="seconds one input may take")
    ap.add_argument("--replay", type=int, help="run only this seed, in-process, and print the traceback")
    ap.add_argument("--replay-crashes", action="store_true", help="re-run every input saved in bench/fuzz-crashes/")
    ap.add_argument("--json", type=Path, help="write the summary as JSON here")
    args = ap.parse_args(argv)

    if args.replay_crashes:
        return replay_crashes()

    if args.replay is not None:
        files = corpus()
        path, kind, data, desc = make_input(args.replay, files)
        print(f"seed {args.replay}: {path} ({kind}), {desc}, {len(data)} bytes")
        print(check_input(path, kind, data, full=True, engine=True))
        return 0

    seeds = list(range(args.seed, args.seed + args.inputs))
    chunks = [(seeds[i : i + args.chunk], args.full_every, args.engine_every, args.timeout) for i in range(0, len(seeds), args.chunk)]
    t0 = time.monotonic()
    done = 0
    stats: dict[str, int] = {}
    crashes = []
    last = t0
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.jobs, initializer=_init) as pool:
        for n, st, cr in pool.imap_unordered(_run_chunk, chunks):
            done += n
            for k, v in st.items():
                stats[k] = stats.get(k, 0) + v
            for c in cr:
                crashes.append(c)
                out = save_crash(*c)
                print(f"CRASH seed {c[0]} ({c[1]}): {c[5].splitlines()[0]} -> {out}", flush=True)
            now = time.monotonic()
            if now - last > 30:
                print(f"  {done}/{len(seeds)} inputs, {done / (now - t0):.0f}/s, {len(crashes)} crashes", flush=True)
                last = now
    secs = time.monotonic() - t0
    summary = {
        "inputs": done, "seconds": round(secs, 1), "inputs_per_second": round(done / secs, 1), "crashes": len(crashes),
        "jobs": args.jobs, "first_seed": args.seed, "outcomes": stats,
        "full_pipeline_inputs": sum(1 for s in seeds if s % args.full_every == 0),
        "engine_inputs": sum(1 for s in seeds if args.engine_every and s % args.engine_every == 0),
    }
    print(f"fuzz: {done} inputs in {secs:.1f}s ({done / secs:.0f}/s) over {args.jobs} processes, {len(crashes)} crashes; "
          f"outcomes {json.dumps(stats, sort_keys=True)}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
