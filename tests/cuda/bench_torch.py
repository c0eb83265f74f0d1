"""tests/cuda/bench_torch.py: the peers of `make bench-cuda`, timed the same
way as the backend (CUDA events around one call, the L2 flushed by reading a
buffer of twice its size before each sample, the median of the samples), and
the table of the issue's targets with the ratios, from OUTDIR/bench.tsv.

usage: python3 tests/cuda/bench_torch.py OUTDIR   (writes OUTDIR/peers.tsv, OUTDIR/table.md)
"""
import csv
import json
import statistics
import sys

import torch

out = sys.argv[1]
dev = torch.device("cuda")
dj = json.load(open(f"{out}/device.json"))
SAMPLES = int(dj.get("samples", 30))
FLUSH = bool(dj.get("l2_flush", True))
flush_buf = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + 1,
                        dtype=torch.float32, device=dev).fill_(1.0)


def timed(fn, samples=SAMPLES):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ns = []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(samples):
        if FLUSH:
            flush_buf.sum()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ns.append(e0.elapsed_time(e1) * 1e6)
    return statistics.median(ns)


peers = {}
gib = 1 << 30
a = torch.empty(gib // 4, dtype=torch.float32, device=dev).fill_(1.5)
b = torch.empty_like(a)
peers["copy"] = timed(lambda: b.copy_(a), 20)
del a, b
for dt, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
    n = (64 << 20) // (4 if dt == torch.float32 else 2)
    x = torch.randn(n, dtype=dt, device=dev)
    peers[f"relu {name}"] = timed(lambda: torch.relu(x))
    peers[f"gelu-tanh {name}"] = timed(lambda: torch.nn.functional.gelu(x, approximate="tanh"))
    peers[f"silu {name}"] = timed(lambda: torch.nn.functional.silu(x))
    del x
x = torch.randn(4096, 70000, dtype=torch.float32, device=dev)
peers["transpose"] = timed(lambda: x.t().contiguous())
del x
A = torch.randint(0, 127, (32, 1 << 20), dtype=torch.int8, device=dev)
B = torch.randint(-127, 127, (64, 1 << 20), dtype=torch.int8, device=dev).t()
peers["int_mm m32"] = timed(lambda: torch._int_mm(A, B), 10)
del A, B
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
# cuDNN's fastest algorithm for each shape (timed once at the first call):
# its heuristic choice varied from run to run on the H200 (n=1 fp16: 26.5 to
# 51.2 us in four runs)
torch.backends.cudnn.benchmark = True
for n, dt, name in ((1, torch.float32, "fp32"), (1, torch.float16, "fp16"), (1, torch.bfloat16, "bf16"),
                    (32, torch.float16, "fp16")):
    x = torch.randn(n, 64, 56, 56, dtype=dt, device=dev)
    w = torch.randn(64, 64, 3, 3, dtype=dt, device=dev)
    peers[f"conv n{n} {name}"] = timed(lambda: torch.nn.functional.conv2d(x, w, padding=1))
with open(f"{out}/peers.tsv", "w") as f:
    for k, v in peers.items():
        f.write(f"{k}\t{v:.1f}\n")

rows = {}
with open(f"{out}/bench.tsv") as f:
    for r in csv.DictReader(f, delimiter="\t"):
        rows[(r["case"], r["variant"])] = r


def ours(case, variant):
    r = rows.get((case, variant))
    return (float(r["p50_ns"]), float(r["bytes"]), float(r["flops"])) if r else (None, 0, 0)


copy_bw = 2.0 * gib / peers["copy"]        # torch copy_, GB/s (read + write)
ours_copy = ours("copy 1GiB", "ours")[0]
lines = ["| target | ours p50 us | ours | peer | peer p50 us | ratio | goal | met |",
         "|---|---:|---|---|---:|---:|---|---|"]


def row(target, case, variant, peer_key, kind, goal, goal_txt):
    t, by, fl = ours(case, variant)
    if t is None:
        lines.append(f"| {target} | not run | | | | | {goal_txt} | no |")
        return
    p = peers.get(peer_key)
    if kind == "bw":        # ours bytes/time over the measured copy bandwidth
        val = by / t / copy_bw
        ours_txt = f"{by / t:.0f} GB/s"
        peer_txt = f"torch copy_ {copy_bw:.0f} GB/s"
        ratio = val
        ptime = peers["copy"]
    else:                   # peer time over ours (>1: faster than the peer)
        ratio = p / t
        ours_txt = f"{fl / t / 1e3:.1f} TFLOP/s" if fl else ""
        peer_txt = peer_key
        ptime = p
    met = "yes" if ratio >= goal else "no"
    lines.append(f"| {target} | {t / 1e3:.2f} | {ours_txt} | {peer_txt} | {ptime / 1e3:.2f} | "
                 f"{ratio:.3f} | {goal_txt} | {met} |")


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
        lines.append(f"| {case} fused vs unfused | not run | | | | | faster | no |")
        continue
    lu, lf = int(rows[(case, "unfused")]["launches"]), int(rows[(case, "fused")]["launches"])
    lines.append(f"| {case} fused vs unfused | {tf / 1e3:.2f} | {lf} launch | unfused, {lu} launches | "
                 f"{tu / 1e3:.2f} | {tu / tf:.3f} | faster by the launches saved | "
                 f"{'yes' if tu > tf else 'no'} (saved {(tu - tf) / 1e3:.2f} us) |")
table = "\n".join(lines)
print(f"\nbench-cuda on {dj['name']} ({dj['sm_count']} SMs, driver {dj['driver']}, runtime {dj['runtime']}, "
      f"PAPI {dj['papi']}), L2 {'flushed' if FLUSH else 'warm'} between samples, median of {SAMPLES}; "
      f"torch {torch.__version__}, ours copy {2.0 * gib / ours_copy:.0f} GB/s\n")
print(table)
open(f"{out}/table.md", "w").write(table + "\n")
