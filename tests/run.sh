#!/bin/sh
# tests/run.sh: runs every cmocka binary given, the command-line tests, the
# fault tests (tests/faults.sh), the packet's renderings (tests/render.sh)
# and the binary on emulated older CPUs (tests/cpus.sh),
# all in TAP form, and ends with one line
# "tests: N passed, M failed, K skipped". A skipped test is a TAP line with a
# "# SKIP" directive (cmocka 1.1 prints its skip() as "not ok N # SKIP name"):
# counted as skipped, never as passed or failed; the "# SKIP name: reason"
# comment beside it says why. With --binaries-only first (make test-cuda),
# only the binaries given run: the command-line, fault and rendering tests
# are the plain build's (make test) and need its test binaries.
scripts="tests/cli.sh tests/faults.sh tests/render.sh tests/cpus.sh"
if [ "${1:-}" = --binaries-only ]; then shift; scripts=; fi
pass=0; fail=0; skipped=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
for t in "$@" $scripts; do
	[ -e "$t" ] || continue
	case "$t" in *.sh) cmd="sh $t";; *) cmd="$t";; esac
	CMOCKA_MESSAGE_OUTPUT=TAP $cmd >"$log" 2>&1
	rc=$?
	k=$(grep -cE '^(not )?ok .*# SKIP' "$log")
	p=$(grep '^ok ' "$log" | grep -vc '# SKIP'); f=$(grep '^not ok ' "$log" | grep -vc '# SKIP')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $t exited $rc"; fi
	grep -E '^(not ok|#)' "$log" | head -40
	echo "$t: $p passed, $f failed, $k skipped"
	pass=$((pass + p)); fail=$((fail + f)); skipped=$((skipped + k))
done
echo "tests: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
