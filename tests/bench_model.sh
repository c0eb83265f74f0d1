#!/bin/sh
# tests/bench_model.sh: the device model and the planner held against this
# host. Calibrates the host, runs the default profile's blocks on that
# envelope (smaller budget), and prints the median and worst |modelled /
# measured - 1| (target: median <= 15%) and, per block and variant, Kendall's
# tau of the planner's ranking and the measured slowdown of its choice against
# the best measured plan (target: within 10%), from rounds that time every
# plan once each, with its 95% CI and whether the choice is measurably slower
# than the best at all (the CI above 0). tests/bench.sh calls it when
# present; it also runs alone: sh tests/bench_model.sh
set -e
cd "$(dirname "$0")/.."
OPR=${OPREVIEW:-./opreview}
T=$(mktemp -d); [ -n "$KEEP" ] && echo "bench_model: keeping $T" >&2
trap '[ -n "$KEEP" ] || rm -rf "$T"' EXIT
echo "== model validation on this host (opreview calibrate + default profile)"
# the host's load (1-minute average) before and after: on a shared VM the
# neighbours' work shows in both the calibration and the measured times
echo "load average before: $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo unknown)"
trap '[ -n "$KEEP" ] || rm -rf "$T"; echo "load average after: $(cut -d" " -f1 /proc/loadavg 2>/dev/null || echo unknown)"' EXIT
"$OPR" calibrate --name host --out "$T/host.yaml" >/dev/null
grep -v 'method:' "$T/host.yaml" | sed -n '/^global:/,/^launch_overhead_us/p;/retried_samples/p;/^  values:/,$p'
sed -e 's/^envelope: .*/envelope: host/' -e 's/^  seconds: .*/  seconds: 8/' \
    -e "s#key: \.\./owners#key: $PWD/fixtures/owners#" fixtures/profiles/default.yaml >"$T/default-host.yaml"
rc=0
"$OPR" run --profile "$T/default-host.yaml" --envelopes "$T" --out "$T/out" --quiet >/dev/null || rc=$?
case $rc in 0|10|11|12) ;; *) echo "bench_model: run failed ($rc)"; exit 1;; esac
python3 - "$T/out/findings.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["model_validation"]
if not m["calibrated"]:
    print("model unvalidated: " + m["reason"]); sys.exit(1)
print("%-20s %-9s %-12s %12s %12s %8s  %s" % ("block", "variant", "measured by", "model us", "host us", "ratio", "largest term"))
for r in m["rows"]:
    if not r["counted"]:
        continue
    print("%-20s %-9s %-12s %12.1f %12.1f %8.2f  %s" % (r["block"], r["variant"], r["measured_by"],
          r["model_ns"] / 1e3, r["measured_ns"] / 1e3, r["ratio"], r["dominant_term"]))
w = m["worst"]
print("model error: median %.1f%% (target <= 15%%), worst %.1f%% (%s %s, ratio %.2f, largest term %s)" % (
      100 * m["median_abs_error"], 100 * m["worst_abs_error"], w["block"], w["variant"], w["ratio"], w["dominant_term"]))
worst, wp = -1.0, None
for p in m["planner"]:
    tau = "n/a" if p["kendall_tau"] is None else "%.2f" % p["kendall_tau"]
    ci = ""
    if p.get("paired"):
        lo, hi = p["slowdown_ci95"]
        ci = "  (paired rounds, 95%% CI %s..%s%s)" % (
            "?" if lo is None else "%+.1f%%" % (100 * lo), "?" if hi is None else "%+.1f%%" % (100 * hi),
            ", measurably slower" if p["measurably_slower"] else ", not measurably slower than the best")
    print("planner %-20s %-9s plans %d  tau %5s  choice/best %+.1f%%%s" % (p["block"], p["variant"], p["candidates"], tau, 100 * p["slowdown"], ci))
    if p["slowdown"] > worst:
        worst, wp = p["slowdown"], p
ci = ""
if wp is not None and wp.get("paired") and None not in wp["slowdown_ci95"]:
    ci = ", 95%% CI %+.1f%%..%+.1f%%" % tuple(100 * x for x in wp["slowdown_ci95"])
print("planner: worst slowdown of its choice vs the best measured plan %+.1f%% (%s %s%s; target <= 10%%)" % (
      100 * worst, wp["block"] if wp else "-", wp["variant"] if wp else "-", ci))
PY
