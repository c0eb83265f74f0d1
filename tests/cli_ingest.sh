# tests/cli_ingest.sh: outside measurements through the real binary, sourced
# by tests/cli.sh (its $OPR, $T, check, code and counter): a Google Benchmark
# program built here, its JSON ingested, analyzed, reported and added to a
# history; the ncu fixture (hand-written, fixtures/ncu/README.md) the same way;
# bad sources refused with one FILE:LINE:COL line, exit 2 and nothing written.

I=$T/ingest
mkdir -p "$I"
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
owners="--owners-from $PWD/fixtures/profiles/quick.yaml"

cat >"$I/bm.cc" <<'CC'
#include <benchmark/benchmark.h>
#include <vector>
static void BM_chain1(benchmark::State &st) {
  std::vector<float> v(4096, 1.5f);
  for (auto _ : st) { float s = 0; for (size_t i = 0; i < v.size(); i++) s += v[i];
    benchmark::DoNotOptimize(s); }
}
static void BM_chain4(benchmark::State &st) {
  std::vector<float> v(4096, 1.5f);
  for (auto _ : st) { float a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < v.size(); i += 4) { a += v[i]; b += v[i+1]; c += v[i+2]; d += v[i+3]; }
    float s = a + b + c + d; benchmark::DoNotOptimize(s); }
}
BENCHMARK(BM_chain1);
BENCHMARK(BM_chain4);
BENCHMARK_MAIN();
CC
if ! command -v g++ >/dev/null 2>&1; then
	skip "gbench ingest, analyze, report: no g++ on this host"
elif ! g++ -O2 -o "$I/bm" "$I/bm.cc" -lbenchmark -lpthread 2>"$I/cc.err"; then
	skip "gbench ingest, analyze, report: cannot build against libbenchmark (libbenchmark-dev)"
else
	"$I/bm" --benchmark_format=json --benchmark_repetitions=80 --benchmark_min_time=0.002 >"$I/bm.json" 2>/dev/null
	rc=$(code $OPR ingest gbench "$I/bm.json" --baseline BM_chain1 --candidate BM_chain4 --out "$I/g" $owners)
	check "ingest gbench writes an archive (0)" test "$rc" = 0
	check "the manifest records the source's sha256" sh -c "grep -q \"\\\"sha256\\\": \\\"\$(sha256sum $I/bm.json | cut -c1-64)\\\"\" $I/g/manifest.json"
	check "every repetition is a sample (80 + 80)" test "$(grep -c '^imported,' "$I/g/samples.csv")" = 160
	rc=$(code $OPR report "$I/g" --out "$I/gp")
	check "report on the imported archive: SHIP WITH MITIGATIONS at best (10)" test "$rc" = 10
	check "the packet says where the measurements came from" grep -q 'Imported measurements.*opreview ingest gbench' "$I/gp/packet.md"
	check "the packet has the p95 comparison of the two benchmarks" grep -q '^| [a-z-]* | p95 | x0\.[0-9]* ' "$I/gp/packet.md"
	check "quality is unavailable with the reason, never 0" sh -c "grep -q '| numerical quality |' $I/gp/packet.md && grep -q '| \\*WARN\\* unavailable: imported from Google Benchmark JSON' $I/gp/packet.md"
	check "no device envelope of zeros in the packet" sh -c "! grep -q '0 at 0.00 GHz' $I/gp/packet.md"
	rc=$(code $OPR history add --db "$I/h.db" "$I/g")
	check "history add takes the imported archive" sh -c "test $rc = 0 && grep -q '^added ' $T/out"
	check "its provenance in the history is imported" test "$(/usr/bin/python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select provenance from runs').fetchone()[0])" "$I/h.db")" = imported
fi

rc=$(code $OPR ingest ncu fixtures/ncu/handmade-copy2-raw.csv --baseline copy_scalar --candidate copy_vec4 --out "$I/n" $owners)
check "ingest ncu writes an archive (0)" test "$rc" = 0
check "ncu launches are samples, thousands separators read" grep -q '^imported,baseline,0,173489$' "$I/n/samples.csv"
check "dram bytes are imported counters" grep -q '^imported,baseline,imported,dram__bytes_read.sum,268447500,1,$' "$I/n/counters.csv"
# a real ncu CSV (the H200, ncu --page raw: 273 columns, units "ns" and "byte")
rc=$(code $OPR ingest ncu fixtures/ncu/h200-raw.csv --baseline 'void k_bias<__half>' --candidate 'void k_act_vec<__half, 1, 4>' --out "$I/h200")
check "ingest reads the H200's real ncu CSV (0)" test "$rc" = 0
check "its launches are samples in ns (k_bias: 2496, 2528, 2496, 2464)" sh -c "test \"\$(grep '^imported,baseline,' $I/h200/samples.csv | cut -d, -f4 | tr '\n' ' ')\" = '2496 2528 2496 2464 '"
check "its dram bytes read: the launches' mean (11008, 11008, 11008, 10752 -> 10944)" grep -q '^imported,baseline,imported,dram__bytes_read.sum,10944,1,$' "$I/h200/counters.csv"
rc=$(code $OPR analyze "$I/n")
check "analyze: the SOL rule names the bound from ncu's counters" sh -c "test $rc = 10 && grep -q '\"class\": \"global-bandwidth-bound\"' $I/n/findings.json"
rc=$(code $OPR report "$I/n" --out "$I/np")
check "report on the ncu archive (10)" test "$rc" = 10
check "replay refuses an imported archive (2)" test "$(code $OPR replay "$I/n")" = 2
for r in compiler:ml-compiler-engineer kernel:kernel-performance-owner runtime:runtime-systems-engineer; do
	$OPR sign "$I/np" --role "${r#*:}" --key "fixtures/owners/${r%%:*}.key" >/dev/null 2>&1
done
check "the owners of --owners-from sign the imported packet off" sh -c "$OPR verify $I/np | grep -q '^signed off'"

printf '{"benchmarks": [\n {"name": "A", "iterations": 1,\n  "real_time": "x"}]}\n' >"$I/bad.json"
rc=$(code $OPR ingest gbench "$I/bad.json" --baseline A --candidate B --out "$I/bad")
check "a bad real_time: exit 2, one FILE:LINE:COL line" sh -c "test $rc = 2 && test \$(wc -l <$T/err) = 1 && grep -q '^opreview: $I/bad.json:3:16: ' $T/err"
check "nothing written for a bad source" sh -c "! ls -d $I/bad* 2>/dev/null | grep -v bad.json"
rc=$(code $OPR ingest ncu fixtures/ncu/handmade-copy2-raw.csv --baseline copy_scalar --candidate nope --out "$I/bad")
check "a kernel the CSV lacks: exit 2 naming what it holds" sh -c "test $rc = 2 && grep -q \"no kernel named 'nope'.*copy_vec4\" $T/err"
check "ingest without --out is a usage error (2)" test "$(code $OPR ingest ncu x --baseline a --candidate b)" = 2
