"""tests/cuda/bench_torch.py: the peers of `make bench-cuda` and its table.

  --serve OUTDIR   the peer server: bench_cuda starts it on a pipe and, in the
                   same seeded randomised rounds as its own variants, asks
                   for one sample at a time: "p KEY" prepares a peer (tensors,
                   three warm-up calls, cuDNN's algorithm search) and answers
                   "ok"; "s KEY" answers one sample in ns, timed as ours are
                   (the L2 flushed by reading a buffer of twice its size, then
                   CUDA events around one call); "d" frees the case's
                   tensors; "q" ends. The first line is "ready TORCH_VERSION".
  --table OUTDIR   the table of the issue's targets with the ratios, from
                   OUTDIR/bench.tsv (ours and the peers' rows); writes
                   OUTDIR/table.md.
"""
import csv
import json
import sys

mode, out = sys.argv[1], sys.argv[2]


def serve():
    import torch
    assert torch.cuda.is_available()
    dev = torch.device("cuda")
    dj = json.load(open(f"{out}/device.json"))
    flush = bool(dj.get("l2_flush", True))
    flush_buf = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1,
                            dtype=torch.float32, device=dev).fill_(1.0)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    # cuDNN's fastest algorithm for each shape (searched at the warm-up):
    # its heuristic choice varied from run to run on the H200 (n=1 fp16:
    # 26.5 to 51.2 us in four runs)
    torch.backends.cudnn.benchmark = True
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    acts = {"relu": torch.relu,
            "gelu-tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            "silu": torch.nn.functional.silu}
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

    def make(key):
        if key == "copy":
            a = torch.empty((1 << 30) // 4, dtype=torch.float32, device=dev).fill_(1.5)
            b = torch.empty_like(a)
            return lambda: b.copy_(a)
        if key == "transpose":
            x = torch.randn(4096, 70000, dtype=torch.float32, device=dev)
            return lambda: x.t().contiguous()
        if key == "int_mm m32":
            A = torch.randint(0, 127, (32, 1 << 20), dtype=torch.int8, device=dev)
            B = torch.randint(-127, 127, (64, 1 << 20), dtype=torch.int8, device=dev).t()
            return lambda: torch._int_mm(A, B)
        w = key.split()
        if w[0] in acts:
            dt = dts[w[1]]
            x = torch.randn((64 << 20) // (4 if dt == torch.float32 else 2), dtype=dt, device=dev)
            f = acts[w[0]]
            return lambda: f(x)
        if w[0] == "conv":
            n, dt = int(w[1][1:]), dts[w[2]]
            x = torch.randn(n, 64, 56, 56, dtype=dt, device=dev)
            wt = torch.randn(64, 64, 3, 3, dtype=dt, device=dev)
            return lambda: torch.nn.functional.conv2d(x, wt, padding=1)
        raise KeyError(key)

    fns = {}
    print(f"ready {torch.__version__}", flush=True)
    for line in sys.stdin:
        cmd, _, key = line.strip().partition(" ")
        try:
            if cmd == "p":
                fns[key] = make(key)
                for _ in range(3):
                    fns[key]()
                torch.cuda.synchronize()
                print("ok", flush=True)
            elif cmd == "s":
                fn = fns[key]
                if flush:
                    flush_buf.sum()
                e0.record()
                fn()
                e1.record()
                e1.synchronize()
                print(f"{e0.elapsed_time(e1) * 1e6:.1f}", flush=True)
            elif cmd == "d":
                fns.clear()
                torch.cuda.empty_cache()
                print("ok", flush=True)
            elif cmd == "q":
                print("ok", flush=True)
                return
            else:
                print(f"error unknown request {cmd!r}", flush=True)
        except Exception as e:  # one line back, whatever failed
            print(f"error {type(e).__name__}: {e}".replace("\n", " "), flush=True)


if mode == "--serve":
    serve()
    sys.exit(0)

dj = json.load(open(f"{out}/device.json"))
FLUSH = bool(dj.get("l2_flush", True))
rows, peers, peer_p95 = {}, {}, {}
with open(f"{out}/bench.tsv") as f:
    for r in csv.DictReader(f, delimiter="\t"):
        rows[(r["case"], r["variant"])] = r
        if r["variant"] == "peer":
            peers[r["shape"]] = float(r["p50_ns"])
            peer_p95[r["shape"]] = r


def ours(case, variant):
    r = rows.get((case, variant))
    return (float(r["p50_ns"]), float(r["bytes"]), float(r["flops"])) if r else (None, 0, 0)


def p95_txt(r):
    """p95 [95% CI] in us, n samples"""
    if not r or not r.get("p95_lo_ns"):
        return ""
    return (f"{float(r['p95_ns']) / 1e3:.2f} [{float(r['p95_lo_ns']) / 1e3:.2f}, "
            f"{float(r['p95_hi_ns']) / 1e3:.2f}] n {r['samples']}")


gib = 1 << 30
if not peers:
    print("bench-cuda: no peer rows in bench.tsv (no python3 with CUDA torch there): ratios unavailable")
    sys.exit(0)
# torch copy_, GB/s (read + write); a run of some cases (--only) may lack it,
# and then the rows against copy say so while the rest keep their peers
copy_bw = 2.0 * gib / peers["copy"] if "copy" in peers else None
ours_copy = ours("copy 1GiB", "ours")[0]
# the cost of a launch the fusion saves: each further empty kernel in a
# sample, as the envelope's launch_next (bench_cuda measures it once)
launch_us = dj.get("launch_next_us")
not_run = []
lines = ["| target | ours p50 us | ours p95 us [95% CI] | ours | peer | peer p50 us | peer p95 us [95% CI] | "
         "ratio (p50) | goal | met |",
         "|---|---:|---|---|---|---:|---|---:|---|---|"]


def row(target, case, variant, peer_key, kind, goal, goal_txt):
    t, by, fl = ours(case, variant)
    if t is None:
        not_run.append(target)
        return
    p = peers.get(peer_key)
    if kind == "bw" and copy_bw is None:
        lines.append(f"| {target} | {t / 1e3:.2f} | {p95_txt(rows.get((case, variant)))} | {by / t:.0f} GB/s | "
                     f"torch copy_: not measured in this run | | | | {goal_txt} | no |")
        return
    if kind == "bw":        # ours bytes/time over the measured copy bandwidth
        val = by / t / copy_bw
        ours_txt = f"{by / t:.0f} GB/s"
        peer_txt = f"torch copy_ {copy_bw:.0f} GB/s"
        ratio = val
        ptime = peers["copy"]
        pkey = "copy"
    else:                   # peer time over ours (>1: faster than the peer)
        ratio = p / t
        ours_txt = f"{fl / t / 1e3:.1f} TFLOP/s" if fl else ""
        peer_txt = peer_key
        ptime = p
        pkey = peer_key
        if p is None:
            lines.append(f"| {target} | {t / 1e3:.2f} | {p95_txt(rows.get((case, variant)))} | {ours_txt} | "
                         f"{peer_key}: not measured | | | | {goal_txt} | no |")
            return
    met = "yes" if ratio >= goal else "no"
    lines.append(f"| {target} | {t / 1e3:.2f} | {p95_txt(rows.get((case, variant)))} | {ours_txt} | {peer_txt} | "
                 f"{ptime / 1e3:.2f} | {p95_txt(peer_p95.get(pkey))} | {ratio:.3f} | {goal_txt} | {met} |")


row("copy (ours vs torch)", "copy 1GiB", "ours", "copy", "bw", 0.95, ">= 0.95 of copy")
row("qgemm u8s8 M8 N64 K2^20 (pinned)", "qgemm u8s8 m8 n64 k2^20", "pinned", "copy", "bw", 0.5, ">= 0.5 of copy")
row("qgemm kk2048 single-buffered (fits the model)", "qgemm u8s8 m8 n64 k2^20", "kk2048-single", "copy", "bw", 0.5, ">= 0.5 of copy")
row("qgemm (planner's plan)", "qgemm u8s8 m8 n64 k2^20", "planner", "copy", "bw", 0.5, ">= 0.5 of copy")
row("qgemm vs torch._int_mm M32", "qgemm u8s8 m8 n64 k2^20", "pinned", "int_mm m32", "time", 1.0, "faster")
row("permute [4096,70000] fp32 (1,0)", "permute [4096,70000] fp32 (1,0)", "tile64", "copy", "bw", 0.8, ">= 0.8 of copy")
row("permute vs x.t().contiguous()", "permute [4096,70000] fp32 (1,0)", "tile64", "transpose", "time", 1.0, "faster")
for name in ("fp32", "bf16"):
    for a in ("relu", "gelu-tanh", "silu"):
        for v in ("default", "tile4096"):
            row(f"{a} 64MiB {name} {v}", f"{a} 64MiB {name}", v, "copy", "bw", 0.9, ">= 0.9 of copy")
        row(f"{a} 64MiB {name} tile4096 vs torch", f"{a} 64MiB {name}", "tile4096", f"{a} {name}", "time", 1.0, "faster")
for name, goal in (("fp32", 0.7), ("fp16", 1.0), ("bf16", 1.0)):
    for v in ("im2col", "direct"):
        row(f"conv2d n1 {name} {v} vs cuDNN", f"conv2d n1 64x56x56 k64 3x3 {name}", v, f"conv n1 {name}",
            "time", goal, f">= {goal} of cuDNN")
row("conv2d n32 fp16 vs cuDNN", "conv2d n32 64x56x56 k64 3x3 fp16", "im2col", "conv n32 fp16", "time", 0.7, ">= 0.7 of cuDNN")
for case in ("conv2d+bias+relu n1 fp16", "qgemm+dq+bias+gelu-tanh", "permute+relu [4096,70000] fp32"):
    tu, tf = ours(case, "unfused")[0], ours(case, "fused")[0]
    if tu is None or tf is None:
        not_run.append(f"{case} fused vs unfused")
        continue
    lu, lf = int(rows[(case, "unfused")]["launches"]), int(rows[(case, "fused")]["launches"])
    saved_us = (tu - tf) / 1e3
    if launch_us is None:
        need_txt, met = "launch cost not measured", "no"
    else:
        need = (lu - lf) * launch_us
        need_txt = f"needs {need:.2f} us = {lu - lf} x {launch_us:.2f}"
        met = "yes" if saved_us >= need else "no"
    lines.append(f"| {case} fused vs unfused | {tf / 1e3:.2f} | {p95_txt(rows[(case, 'fused')])} | {lf} launch | "
                 f"unfused, {lu} launches | {tu / 1e3:.2f} | {p95_txt(rows[(case, 'unfused')])} | {tu / tf:.3f} | "
                 f"faster by the launches saved | {met} (saved {saved_us:.2f} us, {need_txt}) |")
table = "\n".join(lines)
if not_run:
    table += f"\n\nNot run here ({len(not_run)} rows, `--only` or a failed case): " + "; ".join(not_run)
print(f"\nbench-cuda on {dj['name']} ({dj['sm_count']} SMs, driver {dj['driver']}, runtime {dj['runtime']}, "
      f"PAPI {dj['papi']}), L2 {'flushed' if FLUSH else 'warm'} before each sample; ours and torch "
      f"interleaved in rounds shuffled from seed {dj['seed']}, each case until p95's 95% CI is within "
      f"+-2% (>= 368 samples) or {dj['max_rounds']} rounds or {dj['budget_s']:.0f} s; ratios of p50; "
      + (f"ours copy {2.0 * gib / ours_copy:.0f} GB/s (median of 20)" if ours_copy else "copy not run")
      + (f"; a launch {launch_us:.2f} us (each further empty kernel in a sample, median)" if launch_us else "")
      + "\n")
print(table)
open(f"{out}/table.md", "w").write(table + "\n")
