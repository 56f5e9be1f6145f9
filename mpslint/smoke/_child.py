"""Kernel-running child process.  Runs as `python -I -S _child.py ...` under the sandbox's limits; it uses
only the standard library (no numpy, no torch, no mpslint import) so that it starts fast and small.

  describe SO OUT_JSON                       write the kernel table (names, parameter roles/types) as JSON
  run SO JOB_JSON IN_BLOB OUT_BLOB START     run launches START.. of the job; for each prints
                                             "S <i>" before and "D <i> <json>" after, flushing each line

A fault inside a kernel is reported by the runtime's signal handler ("MSL_FAULT ..." on stderr) and ends
the process; the parent then knows which launch was running from the last "S" line.
"""
import ctypes
import json
import sys
import time


class ParamInfo(ctypes.Structure):
    _fields_ = [("role", ctypes.c_int), ("kind", ctypes.c_int), ("type", ctypes.c_char_p), ("size", ctypes.c_int)]


class KernelInfo(ctypes.Structure):
    _fields_ = [("host_name", ctypes.c_char_p), ("fn", ctypes.c_void_p), ("nparams", ctypes.c_int),
                ("params", ctypes.POINTER(ParamInfo))]


def load(so):
    lib = ctypes.CDLL(so)
    lib.msl_count.restype = ctypes.c_int
    lib.msl_kernel.restype = ctypes.POINTER(KernelInfo)
    lib.msl_kernel.argtypes = [ctypes.c_int]
    lib.msl_last_error.restype = ctypes.c_char_p
    lib.msl_buf_alloc.restype = ctypes.c_void_p
    lib.msl_buf_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.msl_buf_check.restype = ctypes.c_int
    lib.msl_buf_check.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_longlong)]
    lib.msl_buf_free.argtypes = [ctypes.c_void_p]
    lib.msl_dispatch.restype = ctypes.c_int
    lib.msl_dispatch.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint32),
                                 ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64), ctypes.c_int,
                                 ctypes.c_int]
    lib.msl_sparse_alloc.restype = ctypes.c_void_p
    lib.msl_sparse_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t]
    lib.msl_track.argtypes = [ctypes.c_int]
    lib.msl_touch_count.restype = ctypes.c_int
    lib.msl_touch_get.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_longlong)]
    lib.msl_dispatch_sel.restype = ctypes.c_int
    lib.msl_dispatch_sel.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint32),
                                     ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64), ctypes.c_int,
                                     ctypes.c_int, ctypes.POINTER(ctypes.c_uint32), ctypes.c_int]
    lib.msl_install_fault_handler()
    return lib


def describe(so, out_path):
    lib = load(so)
    table = []
    for i in range(lib.msl_count()):
        k = lib.msl_kernel(i).contents
        params = [{"role": k.params[j].role, "kind": k.params[j].kind, "type": k.params[j].type.decode(),
                   "size": k.params[j].size} for j in range(k.nparams)]
        table.append({"host_name": k.host_name.decode(), "params": params})
    with open(out_path, "w") as f:
        json.dump(table, f)


def run(so, job_path, in_path, out_path, start):
    try:
        lib = load(so)
    except (OSError, MemoryError) as e:   # the file's own statics do not fit the limits: not a runner error
        sys.stderr.write(f"MSL_LOAD_FAILED {type(e).__name__}: {e}\n")
        sys.exit(3)
    names = {lib.msl_kernel(i).contents.host_name.decode(): i for i in range(lib.msl_count())}
    with open(job_path) as f:
        job = json.load(f)
    with open(in_path, "rb") as f:
        blob = f.read()
    out = open(out_path, "r+b")
    launches = job["launches"]
    for i in range(start, len(launches)):
        L = launches[i]
        sys.stdout.write(f"S {i}\n")
        sys.stdout.flush()
        bufs = L["buffers"]
        nslots = max([b["index"] for b in bufs] + [-1]) + 1
        ptrs = (ctypes.c_void_p * max(1, nslots))()
        owned = []
        for b in bufs:
            sparse = b.get("sparse", -1)
            p = lib.msl_sparse_alloc(b["nbytes"], b["index"], sparse) if sparse >= 0 else \
                lib.msl_buf_alloc(b["nbytes"], b["index"])
            if not p:
                raise MemoryError("msl_buf_alloc failed")
            owned.append((b, p))
            if b["in_off"] >= 0 and b["nbytes"]:
                ctypes.memmove(p, blob[b["in_off"]:b["in_off"] + b["nbytes"]], b["nbytes"])
            ptrs[b["index"]] = p
        grid = (ctypes.c_uint32 * 3)(*L["grid"])
        group = (ctypes.c_uint32 * 3)(*L["group"])
        tgm = L.get("tgmem", [])
        tgs = (ctypes.c_uint64 * max(1, len(tgm)))(*tgm)
        t0 = time.perf_counter()
        sel = L.get("select")
        touch = []
        if sel is None:
            rc = lib.msl_dispatch(names[L["kernel"]], ptrs, grid, group, tgs, len(tgm), L.get("mode", 0))
        else:
            flat = [int(v) for g in sel for v in g]
            arr = (ctypes.c_uint32 * max(1, len(flat)))(*flat)
            lib.msl_track(1)
            rc = lib.msl_dispatch_sel(names[L["kernel"]], ptrs, grid, group, tgs, len(tgm), L.get("mode", 0), arr,
                                      len(sel))
            lib.msl_track(0)
            rec = (ctypes.c_longlong * 6)()
            for j in range(lib.msl_touch_count()):
                lib.msl_touch_get(j, rec)
                touch.append(list(rec))
        ms = (time.perf_counter() - t0) * 1e3
        canary = []
        for b, p in owned:
            bad = ctypes.c_longlong(0)
            if lib.msl_buf_check(p, ctypes.byref(bad)) == 1:
                canary.append([b["index"], bad.value])
            if b["out_off"] >= 0 and b["nbytes"] and b.get("sparse", -1) < 0:
                out.seek(b["out_off"])
                out.write(ctypes.string_at(p, b["nbytes"]))
            lib.msl_buf_free(p)
        out.flush()
        err = lib.msl_last_error().decode(errors="replace") if rc else ""
        sys.stdout.write(f"D {i} " + json.dumps({"rc": rc, "err": err, "canary": canary, "ms": ms,
                                                     "touch": touch, "hwm_kb": _hwm_kb()}) + "\n")
        sys.stdout.flush()
    out.close()


def _hwm_kb():
    """Peak resident memory of this process so far (Linux), in KiB; 0 where /proc is not there."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv):
    if argv[1] == "describe":
        describe(argv[2], argv[3])
    elif argv[1] == "run":
        run(argv[2], argv[3], argv[4], argv[5], int(argv[6]))
    else:
        raise SystemExit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
