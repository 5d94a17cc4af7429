"""Where the host time of a warm cubepy launch goes on a CUDA device (cProfile of 3000 launches).

    python benchmarks/gpu/profile_launch.py
"""

import cProfile
import pstats
import time

import cupy as cp

import cubepy as cb
from cubepy import Array, Mut, f32


@cb.kernel
def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]


def main():
    dev = cb.device("cuda")
    x, y = cp.ones(4096, cp.float32), cp.ones(4096, cp.float32)
    for _ in range(200):
        saxpy[16, 256](x, y, 2.0, device=dev)
    cp.cuda.get_current_stream().synchronize()
    t = time.perf_counter()
    for _ in range(3000):
        saxpy[16, 256](x, y, 2.0, device=dev)
    print(f"kernel[...] launch: {(time.perf_counter() - t) / 3000 * 1e6:.2f} us")
    plan = next(iter(saxpy._plans.values()))
    values = plan.bind((x, y, 2.0))
    args = [values[i] for i in plan.order]
    t = time.perf_counter()
    for _ in range(3000):
        plan.bind((x, y, 2.0))
    print(f"runtime binding only: {(time.perf_counter() - t) / 3000 * 1e6:.2f} us")
    t = time.perf_counter()
    for _ in range(3000):
        dev.backend.launch(plan.executable, plan.ir, (16, 1, 1), (256, 1, 1), args, dev.properties, plan.options)
    print(f"backend launch only: {(time.perf_counter() - t) / 3000 * 1e6:.2f} us")
    cp.cuda.get_current_stream().synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        saxpy[16, 256](x, y, 2.0, device=dev)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(22)


if __name__ == "__main__":
    main()
