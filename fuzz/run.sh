#!/bin/sh
# fuzz/run.sh BINDIR: runs every fuzz_* binary of BINDIR for $FUZZ_SECONDS (60)
# from a scratch copy of fixtures/fuzz/<target>/ and prints one summary line each:
# executions, exec/s, coverage (cov: edges, ft: features), corpus growth.
# Known library leaks: fuzz/lsan.supp. A crash's input is kept in the scratch
# folder and named; the exit is then 1.
bindir=${1:-build-fuzz/fuzz}
secs=${FUZZ_SECONDS:-60}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/opreview-fuzz.XXXXXX")
status=0
for bin in "$bindir"/fuzz_*; do
	[ -x "$bin" ] || continue
	t=${bin##*/fuzz_}
	mkdir -p "$scratch/$t/corpus" "$scratch/$t/tmp"
	cp fixtures/fuzz/"$t"/* "$scratch/$t/corpus/" 2>/dev/null
	seeds=$(ls "$scratch/$t/corpus" | wc -l)
	echo "fuzz_$t: $secs s from $seeds seeds ..."
	# an archive seed (four files of a real run) is larger than the others
	maxlen=65536; [ "$t" = archive ] && maxlen=131072
	LSAN_OPTIONS=suppressions=$PWD/fuzz/lsan.supp TMPDIR=$scratch/$t/tmp "$bin" -max_len=$maxlen -timeout=10 -rss_limit_mb=2048 \
		-max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$scratch/$t/" "$scratch/$t/corpus" >"$scratch/$t/log" 2>&1
	rc=$?
	last=$(grep -E '^#[0-9]+' "$scratch/$t/log" | tail -1)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t/log")
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$scratch/$t/log")
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	corp=$(ls "$scratch/$t/corpus" | wc -l)
	if [ "$rc" -eq 0 ]; then
		echo "fuzz_$t: ok: ${runs:-?} runs, ${eps:-?} exec/s, cov ${cov:-?}, ft ${ft:-?}, corpus $seeds -> $corp"
	else
		status=1
		echo "fuzz_$t: FAILED (exit $rc) after ${runs:-?} runs; crash input(s):"
		ls "$scratch/$t"/crash-* "$scratch/$t"/leak-* "$scratch/$t"/timeout-* "$scratch/$t"/oom-* 2>/dev/null
		grep -E 'ERROR|SUMMARY|runtime error|#[0-9]+ 0x' "$scratch/$t/log" | head -20
		echo "  (full log: $scratch/$t/log; keep a regression as fixtures/fuzz/$t/regress-NAME)"
	fi
	rm -rf "$scratch/$t/tmp"
done
[ "$status" -eq 0 ] && rm -rf "$scratch"
exit "$status"
