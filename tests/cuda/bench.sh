#!/bin/sh
# tests/cuda/bench.sh: `make bench-cuda`: the CUDA backend's benchmark, its
# peers (torch in the image's python3, served to bench_cuda on a pipe and
# timed in the same rounds), then the table with the ratios. BENCH_OUT
# (default build-cuda/bench) keeps the TSVs; BENCH_ARGS passes options to
# bench_cuda (--warm, --seed S, --max-rounds N, --budget SECONDS, --no-peers).
set -e
bin=$1
out=${BENCH_OUT:-build-cuda/bench}
mkdir -p "$out"
"$bin" ${BENCH_ARGS:-} "$out"
if command -v python3 >/dev/null 2>&1; then
	python3 tests/cuda/bench_torch.py --table "$out"
else
	echo "bench-cuda: no python3 here: the table with the ratios is not built"
fi
