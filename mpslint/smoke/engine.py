"""Backend-neutral smoke engine: compile each file, plan every registered variant, run them through the
backend, judge the results and turn everything into SmokeOutcomes.  Backends only compile and execute."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import diagnostics, dtypes, large, launch, preflight, reference, spec, specfile
from .api import SMK401, SMK402, SMK403, SMK404, SmokeOptions, SmokeOutcome, SmokeReport
from .progress import Progress

_IDENT = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*$")
MAX_COMPILE_ERRORS = 10


class Engine:
    def __init__(self, backend, options: SmokeOptions):
        self.backend = backend
        self.options = options
        self.label = backend.label

    # ------------------------------------------------------------ driver
    def run(self, paths: list[Path]) -> SmokeReport:
        problems = preflight.missing_dependencies(self.backend)
        if self.options.large_index and self.backend.name != "host":   # sparse mappings are the host runtime's
            problems.append("--large-index runs need the host backend (--backend host)")
        if problems:   # a missing dependency is an error of the run, never a skipped kernel
            raise preflight.SmokeEnvironmentError(preflight.environment_message(problems))
        self.library = specfile.SpecLibrary.load(self.options.specs, builtin=self.options.builtin_specs)
        if self.library.errors:   # a spec file named by the user that cannot be read is a usage error
            raise specfile.SpecFileError("; ".join(self.library.errors))
        progress = Progress(len(paths), self.options.progress, self.label)
        results: list = [None] * len(paths)
        jobs = max(1, int(self.options.jobs or 1))
        try:
            if jobs == 1 or len(paths) == 1:
                for i, p in enumerate(paths):
                    results[i] = self._one_file(p, progress)
            else:
                with ThreadPoolExecutor(max_workers=jobs) as ex:
                    futs = [ex.submit(self._one_file, p, progress) for p in paths]
                    for i, f in enumerate(futs):
                        results[i] = f.result()
        finally:
            progress.close()
        outcomes, files, errors = [], [], []
        for outs, info in results:
            outcomes.extend(outs)
            files.append(info)
            errors.extend(info.pop("errors", []))
        return SmokeReport(outcomes, self.label, files, errors)

    def _one_file(self, path: Path, progress: Progress):
        try:
            return self._check_file(path, progress)
        except Exception as e:  # an internal error is an error of the run (exit 2), never a skipped kernel
            progress.update(files_done=1)
            return [], {"path": str(path), "status": "internal-error",
                        "errors": [f"{path}: internal error in the smoke runner: {type(e).__name__}: {e}"]}

    # ------------------------------------------------------------ per file
    def _check_file(self, path: Path, progress: Progress):
        progress.update(current=f"building {path.name}", force=True)
        try:
            text = path.read_text(errors="replace")
        except OSError as e:
            progress.update(files_done=1)
            return [self._file_outcome(path, None, "skipped", f"cannot read file: {e}")], {"path": str(path)}
        lines = text.splitlines()
        comp = self.backend.compile(path, self.options)
        info = {"path": str(path), "status": comp.status, "cached": comp.cached, "seconds": round(comp.seconds, 2),
                "kernels": len(comp.entries)}
        if comp.status == "unloadable":
            progress.update(files_done=1)
            return [self._file_outcome(path, lines, "skipped", "not run: the built library does not load under "
                                       "the kernel process's limits (its static data or initializers)")], info
        if comp.status == "error":   # toolchain or runtime trouble, not a property of the kernel
            progress.update(files_done=1)
            first = comp.message.strip().splitlines()[0] if comp.message.strip() else "build failed"
            info["errors"] = [f"{path}: the smoke build failed ({self.backend.compile_verb}): {first}"]
            return [], info
        if comp.status == "compile-error":
            progress.update(files_done=1, failed=1)
            return self._compile_outcomes(path, lines, comp), info
        outs: list[SmokeOutcome] = []
        for pr in comp.problems:
            ln = pr["line"] if _same_file(pr.get("path", ""), path) else 1
            outs.append(self._outcome(path, lines, ln, None, "skipped", pr["host_name"], "", "", "",
                                      f"not launched: {pr['message']}"))
        specs = spec.parse(text)
        siblings = launch.sibling_outputs(comp.entries)
        variants = []
        groups_first: dict = {}
        for e in comp.entries if self.options.large_index else ():
            found = self.library.lookup(e["host_name"])
            decls = [(d, b) for d, b in found if d.large and all(b.get(k) == str(w) for k, w in
                                                                 d.large.get("when", {}).items())]
            if not decls:
                why = ("large-index run: the spec's `[kernel.large]` is only for "
                       + ", ".join(f"{k} = {w}" for d, _b in found for k, w in d.large.get("when", {}).items())
                       + " (the host launches this variant only at sizes that fit 32 bits)"
                       if any(d.large for d, _b in found) else
                       "large-index run: no `[kernel.large]` table in a TOML spec for it")
                variants.append((e, _unplanned(e, why)))
            for d, bindings in decls:
                v = specfile.plan(e, d, bindings, large=True)
                if v.skip is None:
                    v.launch.select, groups_first[id(v)] = large.select(v.launch, v.large["windows"],
                                                                        v.large["elements_per_thread"])
                variants.append((e, v))
        for e in comp.entries if not self.options.large_index else ():
            s = specs.get(e["host_name"])
            if s is not None:
                ref = reference.resolve(s.op, self.options.reference_for) if s.op else None
                variants.append((e, spec.plan_spec(e, s, ref, launch._seed(e["host_name"], "spec"))))
                continue
            decls = self.library.lookup(e["host_name"])
            if decls:                   # a TOML spec (--specs, [tool.mpslint] smoke-specs, the shipped library)
                for d, bindings in decls:
                    variants.append((e, specfile.plan(e, d, bindings, self.options.reference_for)))
                continue
            ref = reference.resolve(launch.op_name(e), self.options.reference_for) if launch.op_name(e) else None
            for v in launch.plan_entry(e, siblings, ref):
                variants.append((e, v))
        runnable = [(e, v) for e, v in variants if v.skip is None]
        progress.update(current=f"running {len(runnable)} variants of {path.name}")
        results = self.backend.execute(comp, [v.launch for _, v in runnable], self.options) if runnable else []
        res_iter = iter(results)
        failed = 0
        errors = []
        for e, v in variants:
            if v.skip is not None:
                outs.append(self._variant_outcome(path, lines, e, v, None, "skipped", v.skip))
                continue
            res = next(res_iter)
            if res.status == "error" and res.internal:   # the kernel process itself failed
                errors.append(f"{path}: `{v.kernel}` [{v.variant}]: the smoke runner failed: {res.message}")
                continue
            if v.large is not None:
                code, status, msg = large.judge(v, res, v.launch, groups_first[id(v)])
                msg += f" ({self.label})"
            else:
                code, status, msg = self.judge(e, v, res)
            failed += status == "failed"
            outs.append(self._variant_outcome(path, lines, e, v, code, status, msg))
        progress.update(files_done=1, variants=len(runnable), failed=failed)
        if errors:
            info["errors"] = errors
        return outs, info

    # ------------------------------------------------------------ judging
    def judge(self, entry: dict, v: launch.Variant, res) -> tuple:
        from . import compare
        label = self.label
        if res.status == "timeout":
            return SMK404, "failed", (f"kernel did not finish within {self.options.timeout:g}s ({label}): an "
                                      "infinite loop, or a spin-wait on another thread (threads of a threadgroup run "
                                      "cooperatively on the host, so a spin-wait never yields); check loop bounds and "
                                      "termination conditions")
        if res.status == "crash":
            return SMK403, "failed", describe_fault(res, entry, v) + f" ({label})"
        if res.status == "error":
            return None, "skipped", f"launch not run: {res.message}"
        if res.canary:
            idx, off = res.canary[0]
            buf = _buffer(v, idx)
            name = _param_name(entry, idx)
            n = buf.nbytes if buf else 0
            where = _where(off, n)
            return SMK403, "failed", (f"out-of-bounds write {where} of buffer {idx} (`{name}`, {n} bytes), found by "
                                      f"the canary around the buffer ({label}); guard the store with the element "
                                      "count or fix the index math")
        if v.spec_outputs or not v.out_dtype:   # a spec's launch (inline or TOML), not a template's
            return self._judge_spec(v, res)
        raw = res.outputs.get(v.out_index, b"")
        # the 0xFF fill is a NaN no arithmetic produces for float outputs; for integers it is a legal value (-1),
        # so there the comparison with the reference has to catch unwritten elements
        never = 0
        if dtypes.lookup(v.out_dtype).kind in ("float", "complex"):
            never = compare.unwritten(raw, v.out_dtype, v.out_shape, v.out_strides, launch.OUT_FILL)
        got = compare.decode(raw, v.out_dtype, v.out_shape, v.out_strides)
        total = got.numel()
        if never:
            return SMK402, "failed", (f"{never}/{total} output elements were never written ({label}); the grid "
                                      "covers every element, so the kernel skips some (bounds check or index math)")
        if v.reference is None:
            bad = compare.nonfinite_garbage(got, v.inputs)
            note = f"; {bad} non-finite outputs from finite inputs" if bad else ""
            return None, "no-reference", (f"ran without a crash ({label}); no torch reference known for op "
                                           f"`{v.op}`{note}")
        try:
            info: dict = {}
            exp = compare.expected_output(v.reference, v.inputs, v.dtype, v.alpha, v.natural_out, info)
        except Exception as e:
            return None, "no-reference", f"ran without a crash ({label}); the reference failed: {e}"
        # castout: the functor's result (natural dtype) is converted on store; compare in the narrower of the
        # two dtypes, so that a half result stored as float is judged with half's tolerance
        cmp_dtype = v.out_dtype
        if v.out_dtype != v.natural_out:
            nat, out = dtypes.lookup(v.natural_out), dtypes.lookup(v.out_dtype)
            if nat.kind == out.kind and nat.size < out.size:
                cmp_dtype = v.natural_out
                got = got.to(exp.dtype)
            else:
                exp = exp.to(got.dtype)
        verdict = compare.compare(got, exp, cmp_dtype, v.reference.tolerance(cmp_dtype), info.get("real_only", False))
        if verdict.ok:
            return None, "passed", f"matches {v.reference.name or 'the reference'} ({label})"
        return SMK402, "failed", (f"{cmp_dtype} result differs from {v.reference.name or 'the reference'} on "
                                  f"torch CPU: {verdict.message} ({label})")

    def _judge_spec(self, v: launch.Variant, res) -> tuple:
        import torch
        from . import compare
        label = self.label
        gots = []
        for o in v.spec_outputs:
            g = compare.decode(res.outputs.get(o.index, b""), o.dtype, o.shape, _contiguous(o.shape))
            gots.append(g[o.select] if o.select is not None else g)
        if v.reference is None:
            bad = sum(compare.nonfinite_garbage(g, v.inputs) for g in gots)
            note = f"; {bad} non-finite outputs from finite inputs" if bad else ""
            return None, "no-reference", f"ran without a crash ({label}); no reference for `{v.op}`{note}"
        try:
            exp = v.reference.fn(*[t.clone() for t in v.inputs])
        except Exception as e:
            return None, "no-reference", f"ran without a crash ({label}); the reference failed: {e}"
        if isinstance(exp, torch.Tensor):
            exp = (exp,)
        for o, g, e in zip(v.spec_outputs, gots, exp):
            if e is None:
                continue
            e = torch.as_tensor(e)
            if o.select is not None and e.numel() != g.numel() and e.numel() == _numel(o.shape):
                e = e.reshape(o.shape)[o.select]   # the reference gave the whole buffer: compare the same part
            if e.numel() != g.numel():
                return None, "skipped", (f"spec error: the reference gives {e.numel()} values for buffer {o.index}"
                                         f"{f' `{o.name}`' if o.name else ''}, the compared part holds {g.numel()}")
            e = e.reshape(-1).to(g.dtype)
            verdict = compare.compare(g.reshape(-1), e, o.dtype, v.reference.tolerance(o.dtype))
            if not verdict.ok:
                return SMK402, "failed", (f"buffer {o.index}{f' `{o.name}`' if o.name else ''} differs from "
                                          f"{v.reference.name or v.op}: {verdict.message} ({label})")
        return None, "passed", f"matches {v.reference.name or v.op} ({label})"

    # ------------------------------------------------------------ outcomes
    def _compile_outcomes(self, path: Path, lines, comp) -> list[SmokeOutcome]:
        outs = []
        errs = comp.diagnostics[:MAX_COMPILE_ERRORS]
        for d in errs:
            ln, col, where = diagnostics.locate(d, str(path))
            unsupported = self.backend.unsupported_reason(d)
            if unsupported:
                outs.append(self._outcome(path, lines, ln, None, "skipped", "", "", "", "",
                                          f"not compiled: {unsupported}: {d.message}{where}", column=col))
            else:
                outs.append(self._outcome(path, lines, ln, SMK401, "failed", "", "", "", "",
                                          f"{self.backend.compile_verb} failed: {d.message}{where}", column=col))
        if not errs:
            outs.append(self._outcome(path, lines, 1, SMK401, "failed", "", "", "", "",
                                      f"{self.backend.compile_verb} failed: {comp.message.strip()[:500]}"))
        return outs

    def _file_outcome(self, path: Path, lines, status: str, msg: str) -> SmokeOutcome:
        return self._outcome(path, lines, 1, None, status, "", "", "", "", msg)

    def _entry_outcome(self, path, lines, e, code, status, dtype, variant, msg):
        ln = e.get("line", 1) if _same_file(e.get("path", ""), path) else 1
        return self._outcome(path, lines, ln, code, status, e["host_name"], launch.op_name(e), dtype, variant, msg)

    def _variant_outcome(self, path, lines, e, v: launch.Variant, code, status, msg):
        same = _same_file(v.path or e.get("path", ""), path)
        ln = v.line if same else 1
        if not same and v.path:
            msg += f" [kernel instantiated in {v.path}:{v.line}]"
        return self._outcome(path, lines, ln, code, status, v.kernel, v.op, v.dtype, v.variant, msg)

    def _outcome(self, path: Path, lines, line: int, code, status, kernel, op, dtype, variant, msg,
                 column: int | None = None) -> SmokeOutcome:
        line = max(1, int(line or 1))
        text = lines[line - 1] if lines and line <= len(lines) else ""
        first = len(text) - len(text.lstrip()) + 1 if text.strip() else 1
        col = column if column else first
        end_col = max(len(text.rstrip()) + 1, col + 1)
        return SmokeOutcome(code, status, str(path), line, col, line, end_col, kernel, op, dtype, variant, msg,
                            self.label)


def _unplanned(e: dict, why: str) -> launch.Variant:
    v = launch.Variant(e["host_name"], launch.op_name(e), "", "large-index", e.get("path", ""), int(e.get("line", 1)))
    v.skip = why
    return v


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _contiguous(shape) -> tuple:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(1, s)
    return tuple(reversed(out))


def _same_file(a: str, b: Path) -> bool:
    if not a:
        return False
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def _buffer(v: launch.Variant, idx: int):
    for b in v.launch.buffers:
        if b.index == idx:
            return b
    return None


def _param_name(entry: dict, idx: int) -> str:
    for p in entry.get("params", []):
        if p["role"] == idx:
            m = _IDENT.search(p.get("text", ""))
            if m:
                return m.group(1)
    return f"buffer({idx})"


def _where(off: int, n: int) -> str:
    if off < 0:
        return f"{-off} bytes before the start"
    if off == n:
        return "just past the end"
    return f"{off - n} bytes past the end"


def describe_fault(res, entry: dict, v: launch.Variant) -> str:
    f = res.fault
    if not f:
        return f"kernel process crashed: {res.message}"
    kind = f.get("kind", "")
    access = f.get("access", "access")
    if kind in ("overflow", "underflow"):
        idx = int(f.get("buf", -1))
        off = int(f.get("off", 0))
        buf = _buffer(v, idx)
        n = buf.nbytes if buf else 0
        name = _param_name(entry, idx)
        where = _where(off, n)
        return (f"out-of-bounds {access} {where} of buffer {idx} (`{name}`, {n} bytes): the access hit the guard "
                "page; guard the access with the element count or fix the index math")
    if kind == "wild":
        return (f"out-of-bounds {access} at {f.get('addr', '?')}, outside every buffer (far past an end, or a "
                "garbage pointer); check the index math")
    if kind == "stack":
        return "stack overflow in a kernel thread (deep recursion or a very large local array)"
    if kind == "fpe":
        return ("arithmetic trap (SIGFPE): integer division by zero or INT_MIN / -1; the GPU returns an unspecified "
                "value instead of trapping, so guard the divisor")
    if kind == "runtime":
        return f"host runtime error: {f.get('msg', '')}"
    return f"kernel aborted (signal {f.get('signal', '?')}): a trap, assert or abort in the kernel"
