#!/bin/sh
# tests/cpus.sh: the binary on x86-64 CPUs other than this one, in TAP form,
# under qemu-user's CPU models (its TCG emulates AVX2 but not AVX-512):
# Westmere (SSE4.2, no AVX) must run every kernel family on the portable
# path, Haswell (AVX2, FMA, F16C, no AVX-512) on the AVX2 path. Each runs
# quick.yaml whole, and each block's outputs must be bit for bit those of the
# same path forced with OPREVIEW_ISA on this host: the start-up's CPUID choice
# is what the packet says, no instruction outside the chosen path is reached
# (qemu stops the run with SIGILL on one the model lacks), and a path the CPU
# lacks is refused with one line. Skipped without qemu-x86_64 (Debian's
# qemu-user) and for a sanitized binary, whose shadow memory qemu-user cannot
# map.
OPR=${OPREVIEW:-./opreview}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
no() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() { desc=$1; shift; if "$@"; then ok "$desc"; else no "$desc"; fi; }

# name, qemu CPU model, the path its start-up must choose
MODELS="westmere:Westmere:scalar haswell:Haswell:avx2"

why=
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
	why="no qemu-x86_64 on this host (Debian's qemu-user)"
elif grep -q __asan_init "$OPR" 2>/dev/null; then
	why="$OPR is built with AddressSanitizer, whose shadow memory qemu-user cannot map"
fi
if [ -n "$why" ]; then
	for m in $MODELS; do
		skip "quick.yaml on an emulated ${m%%:*} CPU: $why"
	done
	echo "1..$n"
	exit 0
fi

# The block outputs of a run, one "block variant sha256" line each.
outputs() {
	/usr/bin/python3 -c '
import json,sys
f=json.load(open(sys.argv[1]))
for b in f["blocks"]:
    for i,v in enumerate(b["variants"]):
        print(b["name"], i, v["input_sha256"], v["output_sha256"])' "$1/findings.json"
}
verdict_exit() { case $1 in 0|10|11|12) return 0;; *) return 1;; esac; }

for m in $MODELS; do
	name=${m%%:*}; rest=${m#*:}; cpu=${rest%%:*}; path=${rest#*:}
	OPREVIEW_ISA=$path $OPR run --profile fixtures/profiles/quick.yaml --out "$T/native-$name" \
		--quiet >"$T/native.out" 2>&1
	native=$?
	qemu-x86_64 -cpu "$cpu" $OPR run --profile fixtures/profiles/quick.yaml \
		--out "$T/$name" --quiet >"$T/$name.out" 2>&1
	rc=$?
	if ! verdict_exit $native || ! verdict_exit $rc; then
		no "quick.yaml on an emulated $cpu CPU exits with a verdict (native $native, emulated $rc: $(tail -1 "$T/$name.out"))"
		continue
	fi
	ok "quick.yaml on an emulated $cpu CPU exits with a verdict ($rc)"
	check "its packet names the $path path for every kernel family" \
		grep -q "^| host kernel path | $path, every family |" "$T/$name/packet.md"
	outputs "$T/native-$name" >"$T/native-$name.sha"
	outputs "$T/$name" >"$T/$name.sha"
	check "its block outputs are bit for bit those of OPREVIEW_ISA=$path here" \
		sh -c "test -s $T/$name.sha && cmp -s $T/$name.sha $T/native-$name.sha"
done

# A path the CPU lacks is refused before anything runs, in one line.
OPREVIEW_ISA=avx512 qemu-x86_64 -cpu Haswell $OPR run --profile fixtures/profiles/quick.yaml \
	--out "$T/refused" >/dev/null 2>"$T/refused.all"
rc=$?
grep -v '^qemu-x86_64: warning:' "$T/refused.all" >"$T/refused.err" # TCG's own notes
check "OPREVIEW_ISA=avx512 on an AVX2-only CPU exits 2 with one line, nothing written" \
	sh -c "test $rc = 2 && test \$(wc -l <$T/refused.err) = 1 && grep -q 'needs instructions this CPU lacks' $T/refused.err && test ! -e $T/refused"
echo "1..$n"
