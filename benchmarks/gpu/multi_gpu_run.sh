#!/usr/bin/env bash
# The runs that need a machine with 2 or more GPUs (the device tool's nvidia-h200-x2 or larger):
# the conformance suite on cuda:1, the wrong-device error with real arrays, torch.distributed with
# NCCL (one process per GPU) and the Dask example with one worker per GPU. Logs go to $OUT.
#   bash benchmarks/gpu/multi_gpu_run.sh
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || cat "$out/install.log"
# NVLink multicast stays off: a program that uses it can take the host's shared GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cubepy-cache XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$out/gpus.txt"
python3 -m cubepy devices | tee "$out/devices.txt"
CUBEPY_TEST_DEVICES=cuda:1 timeout 300 python3 -m pytest -p no:cacheprovider -q -rfs --junitxml "$out/cuda1.xml" \
    tests/conformance tests/gpu/test_cuda_device.py 2>&1 | tee "$out/cuda1.log" | tail -5
timeout 120 python3 - <<'PY' 2>&1 | tee "$out/wrong_device.log"
import cupy as cp, cubepy as cb
from tests.kernels import saxpy
with cp.cuda.Device(1):
    x1 = cp.ones(1024, cp.float32)
y0 = cp.ones(1024, cp.float32)
try:
    saxpy[4, 256](x1, y0, 2.0, device=cb.device("cuda:0"))
    print("NOT REFUSED")
except ValueError as e:
    print("refused:", str(e).splitlines()[0])
PY
timeout 240 python3 examples/torch_distributed.py --backend nccl --world 2 2>&1 | tee "$out/nccl.log" | tail -3
timeout 240 python3 - <<'PY' 2>&1 | tee "$out/dask_gpus.log" | tail -3
import os, subprocess, sys, time, numpy as np, cupy, dask.array as da
from distributed import Client, LocalCluster, Nanny
import cubepy as cb, cubepy.dask
from cubepy import Array, Mut, f32

@cb.kernel
def triple(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * 3.0

if __name__ == "__main__":
    gpus = cupy.cuda.runtime.getDeviceCount()
    with LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        for g in range(gpus):       # one worker per GPU, each seeing only its own
            nanny = Nanny(cluster.scheduler_address, nthreads=1, env={"CUDA_VISIBLE_DEVICES": str(g)})
            client.sync(nanny.start)
        client.wait_for_workers(gpus, timeout=120)
        data = np.arange(gpus * 100_000, dtype=np.float32)
        x = da.from_array(data, chunks=100_000).map_blocks(cupy.asarray)
        y = cubepy.dask.map_blocks(triple, x, count=lambda s: (s[0] + 255) // 256, dim=256)
        result = cupy.asnumpy(y.compute())
        print("dask on", gpus, "GPUs:", bool(np.array_equal(result, data * 3)), client.run(cb.compile_stats))
PY
