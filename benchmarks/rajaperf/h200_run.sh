#!/usr/bin/env bash
# The RAJAPerf suite on the GPU machine: install cubepy (offline), then run every kernel at both
# sizes on CUDA against the hand-written CUDA, numba-cuda and Triton, then the transfer study.
# Writes rajaperf_cuda.json, rajaperf_cuda.png and the logs to $OUT (default /tmp/out).
#   bash benchmarks/rajaperf/h200_run.sh
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || cat "$out/install.log"
export PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=${CUBEPY_CACHE_DIR:-/tmp/cubepy-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
set -o pipefail
timeout 540 python3 -m benchmarks.rajaperf --device cuda --sizes default,32x --progress plain \
    --json "$out/rajaperf_cuda.json" --plot "$out/rajaperf_cuda.png" 2>&1 | tee "$out/rajaperf_cuda.log"
