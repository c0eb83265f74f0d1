#!/bin/sh
# tests/golden.sh: golden outputs. "sh tests/golden.sh regenerate" rewrites
# fixtures/golden/packet.md from fixtures/findings/sample.json, the workbook's
# sheet XML in fixtures/golden/xlsx/ from fixtures/findings/xlsx-test.json and
# fixtures/golden/findings.json from the run archive fixtures/archive (through
# the test binaries, which compare against them otherwise); "sh tests/golden.sh"
# only checks. Run from the repository root (make golden does).
set -e
cd "$(dirname "$0")/.."
B=${B:-build}
make --no-print-directory "$B/tests/test_markdown" "$B/tests/test_analyze" "$B/tests/test_xlsx" >/dev/null
case "${1:-check}" in
regenerate)
	OPREVIEW_GOLDEN=regenerate "$B/tests/test_markdown"
	OPREVIEW_GOLDEN=regenerate "$B/tests/test_analyze"
	OPREVIEW_GOLDEN=regenerate "$B/tests/test_xlsx"
	git --no-pager diff --stat -- fixtures/golden 2>/dev/null || true ;;
check)
	"$B/tests/test_markdown"
	"$B/tests/test_analyze"
	"$B/tests/test_xlsx" ;;
*)
	echo "usage: sh tests/golden.sh [regenerate|check]" >&2; exit 2 ;;
esac
