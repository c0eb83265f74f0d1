#!/bin/sh
# tests/golden.sh: golden outputs. "sh tests/golden.sh regenerate" rewrites
# fixtures/golden/packet.md from fixtures/findings/sample.json (through the
# test binary, which compares against it otherwise); "sh tests/golden.sh"
# only checks. Run from the repository root (make golden does).
set -e
cd "$(dirname "$0")/.."
B=${B:-build}
make --no-print-directory "$B/tests/test_markdown" >/dev/null
case "${1:-check}" in
regenerate)
	OPREVIEW_GOLDEN=regenerate "$B/tests/test_markdown"
	git --no-pager diff --stat -- fixtures/golden 2>/dev/null || true ;;
check)
	"$B/tests/test_markdown" ;;
*)
	echo "usage: sh tests/golden.sh [regenerate|check]" >&2; exit 2 ;;
esac
