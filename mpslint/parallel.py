"""Per-file facts for many files, across processes when the work is large enough to pay for them.

``compute(sources, jobs, cache)`` returns one outcome per source, in the order given, whatever the
number of workers: ``("ok", facts)``, ``("recursion", None)`` (the file is nested too deeply for
the analysis) or ``("error", "Type: message\\ntraceback")`` (a bug in mpslint).  Facts depend only
on a file's content, so the merged result is the same with one worker or many.

Small runs stay in-process: a pool costs a fork per worker (and a fresh interpreter per worker
where processes are spawned, as on macOS), which only pays off above ``MIN_BYTES`` of source to
analyse.  Workers get the text (the parent already read and hashed it), build their own
tree-sitter parser, write the cache entry themselves and send the same serialized entry back.
Should the pool fail (no fork allowed, a worker killed), what is left is done in-process.
"""

from __future__ import annotations

import os
import sys
import traceback

from .source import SourceFile

MIN_FILES = 4  # fewer files than this: serial
MIN_BYTES = 384 * 1024  # less source than this to analyse: serial (fork start)
MIN_BYTES_SPAWN = 3 * 1024 * 1024  # where workers are spawned interpreters (macOS, Windows)


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def analyse(src: SourceFile):
    """The outcome for one file (never raises)."""
    from .project import file_facts

    try:
        return "ok", file_facts(src)
    except RecursionError:
        return "recursion", None
    except Exception as e:  # a bug in mpslint: reported by the caller, the other files go on
        return "error", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"


def _start_method() -> str:
    # fork is cheap and safe here on Linux; elsewhere (macOS system frameworks, Windows) spawn
    return "fork" if sys.platform.startswith("linux") else "spawn"


def _init_worker() -> None:
    from . import parsing

    parsing._PARSER = None  # a parser of this process's own, never one inherited through fork


def _work(task):
    path, text, kind, sha, key, cache_dir = task
    from .cache import atomic_write, dumps_entry

    status, value = analyse(SourceFile(path, text, kind, sha))
    if status != "ok":
        return status, value, False
    try:
        data = dumps_entry(key, value)
    except Exception:
        return "ok", value, False
    written = False
    if cache_dir is not None:
        from pathlib import Path

        written = atomic_write(Path(cache_dir) / "facts" / key[:2] / f"{key}.pkl", data)
    return "entry", data, written


def plan_jobs(sources: list[SourceFile], jobs: int | None) -> int:
    """How many worker processes to use for ``sources`` (1: in-process)."""
    if jobs is not None and jobs <= 1:
        return 1
    want = jobs if jobs is not None else available_cpus()
    want = min(want, len(sources))
    if want <= 1:
        return 1
    if jobs is None:  # auto: only when it pays
        total = sum(len(s.text) for s in sources)
        floor = MIN_BYTES if _start_method() == "fork" else MIN_BYTES_SPAWN
        if len(sources) < MIN_FILES or total < floor:
            return 1
    return want


def compute(sources: list[SourceFile], jobs: int | None = None, cache=None) -> list[tuple[str, object]]:
    """Outcomes for ``sources`` in their order; ``cache`` (a FactsCache) receives every new entry."""
    from .cache import facts_key, loads_entry

    n = plan_jobs(sources, jobs)
    results: list[tuple[str, object] | None] = [None] * len(sources)
    if n > 1:
        try:
            _parallel(sources, n, cache, results)
        except Exception:  # the pool could not run (sandbox, killed worker): finish in-process
            pass
        for i, r in enumerate(results):
            if r is None:
                continue
            status, value, written = r
            if status == "entry":
                src = sources[i]
                key = facts_key(cache.fingerprint, src.path, src.kind, src.sha) if cache is not None else _key(src)
                facts = loads_entry(value, key, src.kind)
                results[i] = ("ok", facts) if facts is not None else None
                if cache is not None and facts is not None:
                    cache.writes += written
                    cache.write_failures += not written
            else:
                results[i] = (status, value)
    for i, src in enumerate(sources):
        if results[i] is None:
            results[i] = analyse(src)
            if results[i][0] == "ok" and cache is not None:
                cache.put(src, results[i][1])
    return results  # type: ignore[return-value]


def _key(src: SourceFile) -> str:
    from .cache import code_fingerprint, facts_key

    return facts_key(code_fingerprint(), src.path, src.kind, src.sha)


def _parallel(sources: list[SourceFile], n: int, cache, results: list) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    cache_dir = None
    if cache is not None:
        cache.prepare()
        cache_dir = str(cache.dir)
    order = sorted(range(len(sources)), key=lambda i: -len(sources[i].text))  # largest first: balanced finish
    ctx = multiprocessing.get_context(_start_method())
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_init_worker) as ex:
        futures = {}
        for i in order:
            s = sources[i]
            key = cache.key(s) if cache is not None else _key(s)
            futures[i] = ex.submit(_work, (s.path, s.text, s.kind, s.sha, key, cache_dir))
        for i, fut in futures.items():
            try:
                results[i] = fut.result()
            except Exception:  # this file is done again in-process
                results[i] = None
