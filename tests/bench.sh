#!/bin/sh
# tests/bench.sh: `make bench`. Builds tests/bench.c with the operators against
# oneDNN and OpenBLAS, times two `opreview run` end to end (wall, peak RSS), then
# runs the single-thread operator benchmark, which writes out/bench.txt and
# out/bench.json (and, on an AVX-512 host, once more on the AVX2 path into
# out/avx2/). Needs ./opreview (the Makefile builds it first; OPREVIEW
# names another binary).
set -u
cd "$(dirname "$0")/.." || exit 1

# One thread everywhere: on a shared 2-vCPU machine more threads were slower,
# and oneDNN (OpenMP) plus OpenBLAS (pthreads) in one process oversubscribe.
OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1
export OMP_NUM_THREADS OPENBLAS_NUM_THREADS

if [ ! -f /usr/include/oneapi/dnnl/dnnl.h ] || ! pkg-config --exists openblas; then
	echo "bench: oneDNN or OpenBLAS headers are missing (make bench installs libdnnl-dev libopenblas-dev)" >&2
	exit 1
fi
OPREVIEW=${OPREVIEW:-./opreview}
if [ ! -x "$OPREVIEW" ]; then
	echo "bench: $OPREVIEW is missing (make bench builds it)" >&2
	exit 1
fi

mkdir -p build/bench out || exit 1
echo "bench: building build/bench/bench" >&2
CCFLAGS="${CCFLAGS:-} $(pkg-config --cflags openblas)" \
CCLIBS="${CCLIBS:-} -ldnnl $(pkg-config --libs openblas)" \
	sh tests/cc.sh build/bench/bench tests/bench.c ops/*.c opreview_error.c opreview_cli.c opreview_fs.c || exit 1

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# e2e NAME PROFILE LIMIT_S: appends "--e2e NAME WALL_S RSS_KIB EXIT LIMIT_S" to
# $tmp/args. Wall time and peak RSS come from GNU time when it is installed,
# else from the bench program's own fork/wait4 (getrusage of the child).
e2e() {
	name=$1 profile=$2 limit=$3
	echo "bench: opreview run --profile $profile" >&2
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -v -o "$tmp/time.$name" "$OPREVIEW" run --profile "$profile" \
			--out "$tmp/run.$name" >"$tmp/log.$name" 2>&1
		code=$?
		# "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:26.87"
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
			for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$tmp/time.$name")
		rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tmp/time.$name")
	else
		set -- $(./build/bench/bench --exec "$OPREVIEW" run --profile "$profile" \
			--out "$tmp/run.$name" 2>"$tmp/log.$name")
		wall=${1:-} rss=${2:-} code=${3:-1}
	fi
	if [ -z "$wall" ] || [ -z "$rss" ]; then
		echo "bench: could not measure 'opreview run' of $profile" >&2
		wall=0 rss=0 code=1
	fi
	case $code in 0|10|11|12) ;; *) echo "bench: 'opreview run' of $profile exited $code:" >&2
		tail -5 "$tmp/log.$name" >&2;; esac
	echo "--e2e $name $wall $rss $code $limit" >>"$tmp/args"
	rm -rf "$tmp/run.$name"
}

: >"$tmp/args"
e2e quick fixtures/profiles/quick.yaml 5
e2e default fixtures/profiles/default.yaml 90

echo "bench: operator cases (single thread)" >&2
# shellcheck disable=SC2046
./build/bench/bench --out out $(cat "$tmp/args")
rc=$?
# On an AVX-512 host the AVX2 path runs the operator cases too, in the same
# make bench, against what that path gave before the AVX-512 kernels.
if grep -qw avx512f /proc/cpuinfo && grep -qw avx512_vnni /proc/cpuinfo; then
	echo "bench: operator cases again on the AVX2 path (OPREVIEW_ISA=avx2, out/avx2/)" >&2
	OPREVIEW_ISA=avx2 ./build/bench/bench --out out/avx2 >/dev/null || rc=1
	echo "bench: AVX2 path: $(grep -c ' PASS ' out/avx2/bench.txt 2>/dev/null) targets met," \
		"$(grep -c ' MISS ' out/avx2/bench.txt 2>/dev/null) missed (out/avx2/bench.txt)"
fi
pass=$(grep -c ' PASS ' out/bench.txt 2>/dev/null)
miss=$(grep -c ' MISS ' out/bench.txt 2>/dev/null)
echo "bench: ${pass:-0} targets met, ${miss:-0} missed (out/bench.txt, out/bench.json)"
# the device model and the planner against this host (calibrate + default profile)
if [ -f tests/bench_model.sh ]; then
	OPREVIEW=./opreview sh tests/bench_model.sh | tee out/bench_model.txt || rc=1
fi
exit $rc
