"""Where the host time of a warm cubepy launch goes on a CUDA device.

    python benchmarks/gpu/profile_launch.py

Prints the generated warm path of saxpy on CuPy arrays, the host time per launch of each path
(the launcher's direct warm path, the generic warm path through the binder and the backend's
launch, the ``kernel.launch`` method, and CuPy's RawKernel for scale), then a cProfile of 3000
warm launches.
"""

import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

import cupy as cp

import cubepy as cb
from cubepy.runtime.warm_path import generic_warm_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from tests.kernels import saxpy  # noqa: E402

RAW = r'''extern "C" __global__ void saxpy1(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }'''


def per_launch_us(fn, batch=200, batches=15) -> float:
    for _ in range(batch):
        fn()
    cp.cuda.get_current_stream().synchronize()
    samples = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - t) / batch * 1e6)
        cp.cuda.get_current_stream().synchronize()
    return statistics.median(samples)


def main():
    dev = cb.device("cuda")
    x, y = cp.ones(4096, cp.float32), cp.ones(4096, cp.float32)
    launcher = saxpy[16, 256]
    launcher(x, y, 2.0, device=dev)
    print(launcher.warm_path.source)
    generic = generic_warm_path(saxpy.compile(x, y, 2.0, dim=256, device=dev), (16, 1, 1), (256, 1, 1))
    raw = cp.RawModule(code=RAW).get_function("saxpy1")
    rows = {
        "kernel[...](cupy arrays): direct warm path": lambda: launcher(x, y, 2.0, device=dev),
        "same, default device": lambda: launcher(x, y, 2.0),
        "cb.lines(cupy, 4)": lambda: saxpy[4, 256](cb.lines(x, 4), cb.lines(y, 4), 2.0, device=dev),
        "generic warm path (binder + backend launch)": lambda: generic((x, y, 2.0)),
        "kernel.launch(...) method": lambda: saxpy.launch(16, 256, x, y, 2.0, device=dev),
        "cupy.RawKernel": lambda: raw((16,), (256,), (x, y, cp.float32(2.0), cp.int32(4096))),
    }
    for name, fn in rows.items():
        print(f"{name:48s} {per_launch_us(fn):7.2f} us")
    cp.cuda.get_current_stream().synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        launcher(x, y, 2.0, device=dev)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
