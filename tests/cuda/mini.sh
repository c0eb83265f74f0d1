#!/bin/sh
# tests/cuda/mini.sh OUT: the seed's mini case on the GPU host, after `make
# cuda` and a calibration into fixtures/envelopes/h200.yaml (tests/cuda/
# review.sh makes one): runs fixtures/profiles/mini-h200.yaml with
# build-cuda/opreview (aggressive fusion of the vision stage; the pipeline's
# simulated tail, from measured per-launch device times, beside the tail
# measured by replaying its arrivals on CUDA streams), and writes
# OUT/mini.log, OUT/mini-pipeline.md (the packet's pipeline and validation
# sections) and OUT/mini.tar.gz (the packet).
set -u
out=$1
bin=build-cuda/opreview
{
	echo "== run fixtures/profiles/mini-h200.yaml"
	timeout 120 $bin run --profile fixtures/profiles/mini-h200.yaml --out "$out/mini" --quiet
	echo "run exit $?"
	awk '/^## Pipeline results/,/^## Tail-first/' "$out/mini/packet.md" >"$out/mini-pipeline.md"
	awk '/^## Model validation/,/^## Counters/' "$out/mini/packet.md" >>"$out/mini-pipeline.md"
	grep -n 'replay\|pipeline' "$out/mini/packet.md" | head -20
	tar czf "$out/mini.tar.gz" -C "$out" mini && rm -rf "$out/mini"
} >"$out/mini.log" 2>&1
