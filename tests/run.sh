#!/bin/sh
# tests/run.sh: runs every cmocka binary given, the command-line tests and the
# fault tests (tests/faults.sh), all in TAP form, and ends with one line
# "tests: N passed, M failed".
pass=0; fail=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
for t in "$@" tests/cli.sh tests/faults.sh; do
	[ -e "$t" ] || continue
	case "$t" in *.sh) cmd="sh $t";; *) cmd="$t";; esac
	CMOCKA_MESSAGE_OUTPUT=TAP $cmd >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $t exited $rc"; fi
	grep -E '^(not ok|#)' "$log" | head -40
	echo "$t: $p passed, $f failed"
	pass=$((pass + p)); fail=$((fail + f))
done
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
