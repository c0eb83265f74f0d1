#!/bin/sh
# tests/cuda/review.sh OUT: the review on the GPU host, after `make cuda`:
# calibrates the GPU into fixtures/envelopes/h200.yaml (a copy in OUT),
# runs fixtures/profiles/h200.yaml with build-cuda/opreview (the packet,
# tarred, in OUT/review.tar.gz, its log in OUT/review.log) and replays it
# there.
set -u
out=$1
bin=build-cuda/opreview
{
	echo "== calibrate --device cuda"
	$bin calibrate --device cuda --name h200 --force --out fixtures/envelopes/h200.yaml
	echo "calibrate exit $?"
	cp fixtures/envelopes/h200.yaml "$out/h200.yaml"
	echo "== run fixtures/profiles/h200.yaml"
	timeout 150 $bin run --profile fixtures/profiles/h200.yaml --out "$out/review" --quiet
	echo "run exit $?"
	$bin replay "$out/review/run" --no-papi >"$out/review/replay.txt" 2>&1
	echo "replay exit $? (on the GPU)"
	tar czf "$out/review.tar.gz" -C "$out" review && rm -rf "$out/review"
} >"$out/review.log" 2>&1
