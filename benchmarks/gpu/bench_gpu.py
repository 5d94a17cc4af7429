"""GPU benchmarks on a CUDA device: cubepy against hand-written CUDA (CuPy RawKernel), Triton and
CuPy, all measured in the same process on the same (default) stream.

    python benchmarks/gpu/bench_gpu.py [--log2n 28] [--reps 30] [--out results.json]

Rows: copy, saxpy and triad with cb.lines(.., 4) (checked and unchecked) against float4 CUDA,
plain CUDA and Triton; a cube reduction and a plane reduction against cupy.sum; warm launch host
overhead against RawKernel and Triton; cold compile (NVRTC) and a fresh process with a warm disk
cache. GPU time: CUDA events around batches of back-to-back launches, median of 5 batches of
``reps / 5``. Each cubepy result is checked before it is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from benchmarks.fresh_process import child_env, warm_up  # noqa: E402
from tests.kernels import (  # noqa: E402
    copy,
    copy_unchecked,
    cube_sum,
    plane_sum,
    saxpy,
    saxpy_unchecked,
    stream_triad,
    stream_triad_unchecked,
)


def make_kernels(checked: bool):
    if checked:
        return saxpy, stream_triad, copy
    return saxpy_unchecked, stream_triad_unchecked, copy_unchecked


CUDA_SRC = r"""
extern "C" __global__ void saxpy4(const float4* __restrict__ x, float4* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float4 p = x[i], q = y[i];
    q.x = a * p.x + q.x; q.y = a * p.y + q.y; q.z = a * p.z + q.z; q.w = a * p.w + q.w; y[i] = q; }
}
extern "C" __global__ void saxpy1(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void triad4(float4* __restrict__ a, const float4* __restrict__ b,
                                  const float4* __restrict__ c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float4 p = b[i], q = c[i];
    a[i] = make_float4(p.x + s * q.x, p.y + s * q.y, p.z + s * q.z, p.w + s * q.w); }
}
extern "C" __global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
"""

COLD = textwrap.dedent("""
    import time, cupy as cp, cubepy as cb
    from cubepy import Array, Mut, f32
    t0 = time.perf_counter()
    @cb.kernel
    def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]
    x = cp.ones(4096, cp.float32); y = cp.ones(4096, cp.float32)
    cp.cuda.get_current_stream().synchronize()
    t1 = time.perf_counter()
    saxpy[16, 256](x, y, 2.0, device="cuda")
    cb.device("cuda").synchronize()
    t2 = time.perf_counter()
    assert float(y[0]) == 3.0
    print(f"{(t2 - t1) * 1e3:.1f} {(t2 - t0) * 1e3:.1f}")
""")


def gpu_ms(dev, fn, reps, batches=5):
    """GPU time per launch: cubepy events (CUDA events on CuPy's current stream) around a batch of
    back-to-back launches (so the host's launch cost overlaps the GPU's work, as in a real
    pipeline), median over batches."""
    fn()
    dev.synchronize()
    per_batch = max(1, reps // batches)
    times = []
    for _ in range(batches):
        start, stop = dev.event(), dev.event()
        start.record()
        for _ in range(per_batch):
            fn()
        stop.record()
        times.append(stop.elapsed_ms(start) / per_batch)
    return statistics.median(times)


def host_us(cp, contenders: dict, batch=200, rounds=21) -> dict:
    """Host time to enqueue one launch, per contender: in each round every contender runs a batch
    of ``batch`` launches (few enough that the GPU's launch queue never fills and blocks the
    host), synchronized after each batch; the contenders take turns, so drift in the host's speed
    affects all alike. Median over rounds."""
    for fn in contenders.values():
        for _ in range(batch):
            fn()
    cp.cuda.get_current_stream().synchronize()
    samples = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            t = time.perf_counter()
            for _ in range(batch):
                fn()
            samples[name].append((time.perf_counter() - t) / batch * 1e6)
            cp.cuda.get_current_stream().synchronize()
    return {name: statistics.median(s) for name, s in samples.items()}


def triton_kernels():
    try:
        import torch
        import triton
        import triton.language as tl
    except Exception as e:  # depends on the machine
        return None, f"triton unavailable: {e}"

    @triton.jit
    def saxpy_tl(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def triad_tl(a_ptr, b_ptr, c_ptr, s, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(a_ptr + offs, tl.load(b_ptr + offs, mask=mask) + s * tl.load(c_ptr + offs, mask=mask), mask=mask)

    return (torch, triton, saxpy_tl, triad_tl), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=28)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out", default="benchmarks/gpu/results.json")
    ns = ap.parse_args()
    import cupy as cp

    dev = cb.device("cuda")
    print(dev)
    n, reps = 1 << ns.log2n, ns.reps
    n4 = n // 4
    grid4 = (n4 + 255) // 256
    x = cp.random.random(n, dtype=cp.float32)
    y0 = cp.random.random(n, dtype=cp.float32)
    y = y0.copy()
    c = cp.random.random(n, dtype=cp.float32)
    mod = cp.RawModule(code=CUDA_SRC, options=("-std=c++17",))
    saxpy4, saxpy1, triad4, copy4 = (mod.get_function(k) for k in ("saxpy4", "saxpy1", "triad4", "copy4"))
    rows, a = [], 2.0

    def row(name, ms, nbytes, ok=True):
        rows.append({"name": name, "ms": ms, "GB/s": nbytes / ms / 1e6, "correct": bool(ok)})
        print(f"  {name:40s} {ms:8.3f} ms  {nbytes / ms / 1e6:8.1f} GB/s  correct={bool(ok)}")

    print(f"bandwidth, n = 2^{ns.log2n} float32, {reps} launches in 5 batches timed by CUDA events")
    row("device copy (cupy copyto)", gpu_ms(dev, lambda: cp.copyto(y, x), reps), 8 * n)
    for checked in (False, True):
        saxpy, triad, copy = make_kernels(checked)
        tag = "checked" if checked else "unchecked"
        y[...] = y0
        saxpy[grid4, 256](cb.lines(x, 4), cb.lines(y, 4), a, device=dev)
        dev.synchronize()
        ok = cp.allclose(y, a * x + y0)
        row(f"cubepy saxpy lines4 {tag}", gpu_ms(dev, lambda saxpy=saxpy: saxpy[grid4, 256](
            cb.lines(x, 4), cb.lines(y, 4), a, device=dev), reps), 12 * n, ok)
        triad[grid4, 256](cb.lines(y, 4), cb.lines(x, 4), cb.lines(c, 4), a, device=dev)
        dev.synchronize()
        ok = cp.allclose(y, x + a * c)
        row(f"cubepy triad lines4 {tag}", gpu_ms(dev, lambda triad=triad: triad[grid4, 256](
            cb.lines(y, 4), cb.lines(x, 4), cb.lines(c, 4), a, device=dev), reps), 12 * n, ok)
        copy[grid4, 256](cb.lines(x, 4), cb.lines(y, 4), device=dev)
        dev.synchronize()
        ok = bool((y == x).all())
        row(f"cubepy copy lines4 {tag}", gpu_ms(dev, lambda copy=copy: copy[grid4, 256](
            cb.lines(x, 4), cb.lines(y, 4), device=dev), reps), 8 * n, ok)
    fa, fn4 = cp.float32(a), cp.int32(n4)
    row("CUDA saxpy float4 (RawKernel)", gpu_ms(dev, lambda: saxpy4((grid4,), (256,), (x, y, fa, fn4)), reps), 12 * n)
    row("CUDA saxpy float (RawKernel)", gpu_ms(dev, lambda: saxpy1(((n + 255) // 256,), (256,), (
        x, y, fa, cp.int32(n))), reps), 12 * n)
    row("CUDA triad float4 (RawKernel)", gpu_ms(dev, lambda: triad4((grid4,), (256,), (y, x, c, fa, fn4)), reps),
        12 * n)
    row("CUDA copy float4 (RawKernel)", gpu_ms(dev, lambda: copy4((grid4,), (256,), (x, y, fn4)), reps), 8 * n)
    tri, why = triton_kernels()
    if tri is not None:
        torch, triton, saxpy_tl, triad_tl = tri
        tx, ty, tc = (torch.as_tensor(v, device="cuda") for v in (x, y, c))
        grid = (triton.cdiv(n, 1024),)
        row("Triton saxpy (BLOCK 1024)", gpu_ms(dev, lambda: saxpy_tl[grid](tx, ty, a, n, BLOCK=1024), reps), 12 * n)
        row("Triton triad (BLOCK 1024)", gpu_ms(dev, lambda: triad_tl[grid](ty, tx, tc, a, n, BLOCK=1024), reps),
            12 * n)
    else:
        print("  " + why)

    print(f"reductions over 2^{ns.log2n} float32")
    expected = float(cp.sum(x, dtype=cp.float64))
    total = cp.zeros(1, cp.float32)
    cubes = dev.properties.compute_units * 8
    launches = (("cubepy cube reduction (smem + sync)",
                 lambda: cube_sum[cubes, 256](cb.lines(x, 4), total, 256, device=dev)),
                ("cubepy plane reduction (plane_sum)",
                 lambda: plane_sum[cubes, 256](cb.lines(x, 4), total, device=dev)))
    for name, launch in launches:
        total[...] = 0
        launch()
        dev.synchronize()
        ok = abs(float(total[0]) - expected) <= 1e-3 * expected
        row(name, gpu_ms(dev, lambda launch=launch: (total.fill(0), launch()), reps), 4 * n, ok)
    row("cupy.sum", gpu_ms(dev, lambda: cp.sum(x), reps), 4 * n)

    print("warm launch host overhead, n = 4096 (median over 21 interleaved rounds of 200 launches each)")
    sx, sy = cp.ones(4096, cp.float32), cp.ones(4096, cp.float32)
    saxpy, _, _ = make_kernels(True)
    contenders = {
        "cubepy kernel[...](cupy arrays)": lambda: saxpy[16, 256](sx, sy, a, device=dev),
        "cubepy kernel[...](cupy arrays), default device": lambda: saxpy[16, 256](sx, sy, a),
        "cubepy kernel[...](cb.lines(cupy, 4))": lambda: saxpy[4, 256](cb.lines(sx, 4), cb.lines(sy, 4), a,
                                                                        device=dev),
        "cupy.RawKernel": lambda: saxpy1((16,), (256,), (sx, sy, fa, cp.int32(4096))),
    }
    if tri is not None:
        tsx, tsy = torch.as_tensor(sx, device="cuda"), torch.as_tensor(sy, device="cuda")
        contenders["cubepy kernel[...](torch tensors)"] = lambda: saxpy[16, 256](tsx, tsy, a, device=dev)
        contenders["Triton"] = lambda: saxpy_tl[(4,)](tsx, tsy, a, 4096, BLOCK=1024)
    overhead = host_us(cp, contenders)
    for name, us in overhead.items():
        print(f"  {name:40s} {us:8.2f} us")

    print("compile: saxpy, cold NVRTC compile (fresh cache) and a fresh process with a warm disk cache")
    cache = tempfile.mkdtemp()
    env = child_env(cache)
    script = os.path.join(cache, "cold_saxpy.py")   # a file: cubepy reads a kernel's source
    with open(script, "w") as f:
        f.write(COLD)
    warm_up(script)
    cold, warm = [subprocess.run([sys.executable, script], env=env, capture_output=True, text=True)
                  for _ in range(2)]
    for run in (cold, warm):
        if run.returncode:
            raise SystemExit(f"compile timing script failed:\n{run.stderr[-3000:]}")
    cold_first, _ = map(float, cold.stdout.split())
    warm_first, warm_total = map(float, warm.stdout.split())
    print(f"  cold: first launch to result {cold_first:8.1f} ms (trace, render, NVRTC, load)")
    print(f"  warm disk cache, fresh process: first launch to result {warm_first:8.1f} ms, "
          f"whole script {warm_total:.1f} ms")
    with open(ns.out, "w") as f:
        json.dump({"device": repr(dev), "n": n, "reps": reps, "rows": rows, "launch_overhead_us": overhead,
                   "cold_compile_ms": cold_first, "warm_cache_first_launch_ms": warm_first}, f, indent=1)
    print(f"wrote {ns.out}")


if __name__ == "__main__":
    main()
