#!/bin/sh
# tests/cuda/bench.sh: `make bench-cuda`: the CUDA backend's benchmark and
# its peers through the image's python3 + torch, in the same run, then the
# table with the ratios. BENCH_OUT (default build-cuda/bench) keeps the TSVs.
set -e
bin=$1
out=${BENCH_OUT:-build-cuda/bench}
mkdir -p "$out"
"$bin" ${BENCH_ARGS:-} "$out"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	PYTHONUNBUFFERED=1 python3 tests/cuda/bench_torch.py "$out"
else
	echo "bench-cuda: no python3 with CUDA torch here: peers not measured, ratios unavailable"
fi
