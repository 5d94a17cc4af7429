"""The same cubepy kernels on WebGPU (through the adapter's Vulkan driver) and on CUDA, in one
process, on the same GPU: what the WGSL path and its arithmetic workarounds cost.

    python benchmarks/gpu/bench_wgpu.py [--log2n 24] [--reps 50] [--out benchmarks/gpu/wgpu.json]

Rows: saxpy and triad (bandwidth-bound), and poly (a Horner loop of 64 steps per element, bound by
multiply-adds, where the workarounds against contraction cost most; ``--poly-steps``), each checked, on `cuda` and
on `wgpu`. GPU time from each backend's events (CUDA events; WebGPU timestamp queries) around
batches of back-to-back launches, median of 5 batches. Each result is compared with CUDA's before
it is timed. Arrays stay on the device (`cb.preload`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from bench_gpu import gpu_ms  # noqa: E402  (this folder: the same timing for every GPU benchmark)

from tests.kernels import poly, saxpy, triad  # noqa: E402


def rows(dev, n: int, reps: int, steps: int) -> dict:
    """GPU ms per launch of each kernel on ``dev``, and the outputs of one launch each."""
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    px = rng.uniform(-1.0, 1.0, n // 16).astype(np.float32)      # poly: fewer elements, 64 steps each
    xd, zd, pxd = cb.preload(x, device=dev), cb.preload(z, device=dev), cb.preload(px, device=dev)
    yd, outd, pyd = (cb.preload_mut(a, device=dev) for a in (y.copy(), np.zeros(n, np.float32),
                                                            np.zeros(n // 16, np.float32)))
    cubes = (n + 511) // 512          # WebGPU allows 65,535 cubes per axis
    runs = {
        "saxpy": (lambda: saxpy[cubes, 512](xd, yd, 2.0, device=dev), 3 * 4 * n, None),
        "triad": (lambda: triad[cubes, 512](xd, zd, outd, 2.0, device=dev), 3 * 4 * n, outd),
        "poly": (lambda: poly[(n // 16 + 511) // 512, 512](pxd, pyd, steps, device=dev), 2 * steps * (n // 16), pyd),
    }
    out = {}
    for name, (fn, work, result) in runs.items():
        fn()
        dev.synchronize()
        answer = None if result is None else result.to_host().copy()
        ms = gpu_ms(dev, fn, reps)
        out[name] = {"ms": ms, "work": work, "answer": answer}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out", default="benchmarks/gpu/wgpu.json")
    ap.add_argument("--reference", default="cuda", help="the device WebGPU is compared with")
    ap.add_argument("--poly-steps", type=int, default=64, help="Horner steps per element of poly")
    ns = ap.parse_args()
    n = 1 << ns.log2n
    ref = ns.reference
    devices = {ref: cb.device(ref), "wgpu": cb.device("wgpu")}
    print(f"{devices['wgpu']}\nn = 2^{ns.log2n} f32; GPU time by each backend's events, median of 5 batches")
    found = {name: rows(dev, n, ns.reps, ns.poly_steps) for name, dev in devices.items()}
    report = {}
    for kernel in ("saxpy", "triad", "poly"):
        want = found[ref][kernel]["answer"]
        got = found["wgpu"][kernel]["answer"]
        same = want is None or np.array_equal(got, want)
        for name in devices:
            row = found[name][kernel]
            rate = row["work"] / row["ms"] / 1e6
            unit = "GB/s" if kernel != "poly" else "GFLOP/s"
            ratio = row["ms"] / found[ref][kernel]["ms"]
            print(f"{kernel:6s} {name:5s} {row['ms']:9.4f} ms  {rate:8.1f} {unit}  {ratio:5.2f}x {ref}"
                  + ("" if name == ref else f"  same bits as {ref}: {same}"))
            report[f"{kernel}/{name}"] = {"ms": row["ms"], "rate": rate, f"ratio_to_{ref}": ratio, "same_bits": same}
    Path(ns.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
