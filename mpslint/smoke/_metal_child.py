"""Kernel-running child of the Metal backend (macOS + MPS; NOT RUN on a Mac yet, see docs/smoke.md).

    _metal_child.py SOURCE JOB_JSON IN_BLOB OUT_BLOB START

Same S/D line protocol and job format as the host child (_child.py).  Each buffer is bound as a view into a
larger MPS byte tensor whose padding holds a canary, so small out-of-bounds writes are seen on the GPU too.
"""
import json
import sys
import time

PAD = 256
CANARY = 0xA5


def main(argv):
    import torch
    src_path, job_path, in_path, out_path, start = argv[1], argv[2], argv[3], argv[4], int(argv[5])
    lib = torch.mps.compile_shader(open(src_path).read())
    job = json.load(open(job_path))
    blob = open(in_path, "rb").read()
    out = open(out_path, "r+b")
    for i in range(start, len(job["launches"])):
        L = job["launches"][i]
        sys.stdout.write(f"S {i}\n")
        sys.stdout.flush()
        if L.get("tgmem"):
            sys.stdout.write(f"D {i} " + json.dumps({"rc": -4, "err": "[[threadgroup(n)]] arguments are not "
                                                    "supported by torch.mps.compile_shader", "canary": [],
                                                    "ms": 0}) + "\n")
            sys.stdout.flush()
            continue
        args, owned = [], []
        for b in sorted(L["buffers"], key=lambda b: b["index"]):
            n = b["nbytes"]
            host = torch.full((n + 2 * PAD,), CANARY, dtype=torch.uint8)
            if b["in_off"] >= 0 and n:
                host[PAD:PAD + n] = torch.frombuffer(bytearray(blob[b["in_off"]:b["in_off"] + n]), dtype=torch.uint8)
            dev = host.to("mps")
            owned.append((b, dev))
            args.append(dev[PAD:PAD + n])
        grid, group = L["grid"], L["group"]
        threads = grid if L.get("mode", 0) == 0 else [g * t for g, t in zip(grid, group)]
        t0 = time.perf_counter()
        rc, err = 0, ""
        try:
            getattr(lib, L["kernel"])(*args, threads=threads, group_size=group)
            torch.mps.synchronize()
        except Exception as e:  # compile_shader raises on bad launches
            rc, err = -5, str(e)
        ms = (time.perf_counter() - t0) * 1e3
        canary = []
        for b, dev in owned:
            host = dev.cpu()
            n = b["nbytes"]
            lo, hi = host[:PAD], host[PAD + n:]
            if bool((lo != CANARY).any()):
                canary.append([b["index"], int((lo != CANARY).nonzero()[0]) - PAD])
            elif bool((hi != CANARY).any()):
                canary.append([b["index"], n + int((hi != CANARY).nonzero()[0])])
            if b["out_off"] >= 0 and n:
                out.seek(b["out_off"])
                out.write(host[PAD:PAD + n].numpy().tobytes())
        out.flush()
        sys.stdout.write(f"D {i} " + json.dumps({"rc": rc, "err": err, "canary": canary, "ms": ms}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
