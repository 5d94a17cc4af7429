"""saxpy over 2**28 float32 on a CUDA GPU: cubepy (cb.lines(x, 4)) vs a hand-written float4 kernel vs CuPy.

    python benchmarks/gpu/bench_saxpy.py [--log2n 28] [--reps 20]

GPU time is the median of ``reps`` launches timed with CUDA events; the bandwidth counts 12 bytes
per element (read x and y, write y). Warm launch host overhead: host wall time per launch of a
small problem, averaged over many launches (cubepy's backend launch path with device arrays, vs
cupy.RawKernel).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f32

try:
    import cubepy.backends  # noqa: F401
except ImportError:  # a plain checkout: map cubepy.backends onto ./backends
    _root = Path(__file__).resolve().parents[2] / "backends"
    _spec = importlib.util.spec_from_file_location("cubepy.backends", _root / "__init__.py",
                                                   submodule_search_locations=[str(_root)])
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["cubepy.backends"] = _mod
    _spec.loader.exec_module(_mod)
    cb.backends = _mod

HAND = r"""
extern "C" __global__ void saxpy4(const float4* __restrict__ x, float4* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 xv = x[i], yv = y[i];
    yv.x = a * xv.x + yv.x; yv.y = a * xv.y + yv.y; yv.z = a * xv.z + yv.z; yv.w = a * xv.w + yv.w;
    y[i] = yv;
  }
}
"""


def saxpy_kernel(checked: bool):
    @cb.kernel(checked=checked)
    def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]
    return saxpy


def gpu_ms(cp, fn, reps):
    fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def host_us(cp, fn, n=2000):
    for _ in range(50):
        fn()
    cp.cuda.get_current_stream().synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    cp.cuda.get_current_stream().synchronize()
    return dt / n * 1e6


def cubepy_launcher(kfn, dev, xd, yd, a, dim):
    """A warm launch through the backend with device arrays (the runtime's args check wants NumPy)."""
    from cubepy.runtime.args import bind_arguments
    from cubepy.runtime.kernel import _topology

    w = xd.shape[-1] if xd.ndim == 2 else 1
    hx = np.empty(xd.shape, np.float32)
    host = [cb.lines(hx.reshape(-1), w), cb.lines(hx.reshape(-1).copy(), w), a] if w > 1 else [hx, hx.copy(), a]
    bound = bind_arguments(kfn.signature, host, {}, kfn.__name__)
    ir, exe = kfn._specialize(bound.specs, _topology(dim, "CubeDim", ""), dev, None)
    n = xd.shape[0]
    count = ((n + dim - 1) // dim, 1, 1)
    args = [xd, yd, np.float32(a)]
    backend, props = dev.backend, dev.properties
    return lambda: backend.launch(exe, ir, count, (dim, 1, 1), args, props, {}), exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=20)
    ns = ap.parse_args()
    import cupy as cp

    dev = cb.device("cuda")
    print(dev)
    n = 1 << ns.log2n
    a = 2.0
    x = cp.random.random(n, dtype=cp.float32)
    y0 = cp.random.random(n, dtype=cp.float32)
    y = y0.copy()
    gb = 12 * n / 1e9
    rows = []
    for checked in (False, True):
        kfn = saxpy_kernel(checked)
        launch, exe = cubepy_launcher(kfn, dev, x.reshape(-1, 4), y.reshape(-1, 4), a, 256)
        y[...] = y0
        launch()
        dev.synchronize()
        ok = bool(cp.allclose(y, a * x + y0))
        ms = gpu_ms(cp, launch, ns.reps)
        rows.append((f"cubepy lines4 checked={checked}", ms, gb / ms * 1e3, ok))
    hand = cp.RawKernel(HAND, "saxpy4")
    n4 = n // 4
    hand_launch = lambda: hand(((n4 + 255) // 256,), (256,), (x, y, cp.float32(a), cp.int32(n4)))
    y[...] = y0
    hand_launch()
    ok = bool(cp.allclose(y, a * x + y0))
    ms = gpu_ms(cp, hand_launch, ns.reps)
    rows.append(("hand float4 RawKernel", ms, gb / ms * 1e3, ok))
    ew = cp.ElementwiseKernel("float32 x, float32 a", "float32 y", "y = a * x + y", "saxpy_ew")
    ms = gpu_ms(cp, lambda: ew(x, cp.float32(a), y), ns.reps)
    rows.append(("cupy ElementwiseKernel", ms, gb / ms * 1e3, True))
    ms = gpu_ms(cp, lambda: y.__iadd__(a * x), ns.reps)
    rows.append(("cupy y += a * x", ms, gb / ms * 1e3, True))
    print(f"saxpy n=2^{ns.log2n} float32, median of {ns.reps} (CUDA events)")
    for name, ms, gbs, ok in rows:
        print(f"  {name:32s} {ms:8.3f} ms  {gbs:7.1f} GB/s  correct={ok}")

    small_x, small_y = cp.ones(4096, cp.float32), cp.ones(4096, cp.float32)
    launch, _ = cubepy_launcher(saxpy_kernel(True), dev, small_x.reshape(-1, 4), small_y.reshape(-1, 4), a, 256)
    hand_small = lambda: hand((4,), (256,), (small_x, small_y, cp.float32(a), cp.int32(1024)))
    print("warm launch host overhead (n=4096, mean of 2000 launches)")
    print(f"  cubepy backend launch           {host_us(cp, launch):8.2f} us")
    print(f"  cupy.RawKernel                  {host_us(cp, hand_small):8.2f} us")
    kfn = saxpy_kernel(True)
    hx, hy = np.ones(4096, np.float32), np.ones(4096, np.float32)
    full = lambda: kfn[4, 256](cb.lines(hx, 4), cb.lines(hy, 4), a, device=dev)
    print(f"  cubepy kernel[...] NumPy args   {host_us(cp, full, 500):8.2f} us  (incl. H2D, D2H copies)")


if __name__ == "__main__":
    main()
