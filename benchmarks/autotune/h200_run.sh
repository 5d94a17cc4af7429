#!/usr/bin/env bash
# The autotuner on the GPU machine, in one call of under 5 minutes: install (offline, as
# benchmarks/gpu/device_run.sh does), the autotune tests on cuda (ten tunings in a row among
# them), then the autotune benchmark on cuda. Logs and JSON go to the folder given (default $OUT).
#
#   bash benchmarks/autotune/h200_run.sh [OUT_DIR]
#
# Writes OUT_DIR/autotune-tests.log, OUT_DIR/autotune-h200.json and OUT_DIR/autotune-h200.txt.
set -u
out=${1:-${OUT:-/tmp/out}}; mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || cat "$out/install.log"
export PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cubepy-autotune-cache CUBEPY_TEST_SEED=${CUBEPY_TEST_SEED:-1234}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
CUBEPY_TEST_DEVICES=cuda timeout 100 python3 -m pytest -p no:cacheprovider -q -rfs tests/autotune \
    2>&1 | tee "$out/autotune-tests.log" | tail -5
# synthetic: the search on the cost model (seconds); repeat: ten tunings in a row of two kernels;
# compiles: 8 cube shapes in process vs in the worker pool; real: 1,200 configs of polyval measured
# exhaustively, strategies replayed on them, one live pattern search. JSON is written after each part.
timeout 200 python3 -m benchmarks.autotune.bench_autotune --device cuda --n 4194304 \
    --parts ${AUTOTUNE_PARTS:-synthetic,repeat,compiles,real} --out "$out/autotune-h200.json" 2>&1 | tee "$out/autotune-h200.txt"
