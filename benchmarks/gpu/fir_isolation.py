"""What separates cubepy's plain FIR from Base_CUDA's (docs/benchmarks.md, "What FIR's plain port
misses, isolated"): hand-written variants of the Base_CUDA kernel, in one process with cubepy's.

    python benchmarks/gpu/fir_isolation.py          # needs CuPy and an NVIDIA GPU

The variants move one thing at a time: the 16 taps in ``__constant__`` memory (Base_CUDA) or
read through a ``const double* __restrict__`` pointer, with FMA contraction or ``--fmad=false``
(cubepy's strict FP), or loaded once per lane and broadcast with ``__shfl_sync``; cubepy's
``fir`` with the taps as a CuPy array (read through a pointer) or as a NumPy array (passed by value
in the launch's parameters and read from the constant bank: `cubepy.runtime.inline_arrays`). Each is checked
against NumPy after its output is poisoned, then timed: 50 launches between two CUDA events,
median of 9 rounds, at 1e6 and 32e6 iterates.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: benchmarks.rajaperf
from benchmarks.rajaperf.apps.fir import COEFFICIENTS, fir  # noqa: E402

SOURCE = r'''
__constant__ double taps_const[16];
extern "C" __global__ void __launch_bounds__(256)
fir_const(double* out, const double* in, long long coefflen, long long iend) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) { double s = 0.0; for (long long j = 0; j < coefflen; ++j) s += taps_const[j] * in[i + j]; out[i] = s; }
}
extern "C" __global__ void __launch_bounds__(256)
fir_global(double* __restrict__ out, const double* __restrict__ in, const double* __restrict__ coeff,
           long long coefflen, long long iend) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < iend) { double s = 0.0; for (long long j = 0; j < coefflen; ++j) s += coeff[j] * in[i + j]; out[i] = s; }
}
extern "C" __global__ void __launch_bounds__(256)
fir_shuffle(double* __restrict__ out, const double* __restrict__ in, const double* __restrict__ coeff,
            int coefflen, int iend) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  double mine = (threadIdx.x & 31) < coefflen ? coeff[threadIdx.x & 31] : 0.0;   // coefflen <= 32
  double s = 0.0;
  for (int j = 0; j < coefflen; ++j) { double c = __shfl_sync(0xffffffffu, mine, j); if (i < iend) s += c * in[i + j]; }
  if (i < iend) out[i] = s;
}
'''


def median_us(cp, launch, reps: int = 50, rounds: int = 9) -> float:
    launch()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(rounds):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(reps):
            launch()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / reps * 1e3)
    return statistics.median(times)


def main() -> None:
    import cupy as cp

    modules = {fmad: cp.RawModule(code=SOURCE, options=("--std=c++17", f"--fmad={fmad}")) for fmad in ("true", "false")}
    coeff = cp.asarray(np.array(COEFFICIENTS))
    for module in modules.values():
        cp.ndarray((16,), cp.float64, memptr=module.get_global("taps_const"))[...] = coeff
    dev = cb.device("cuda")
    print(f"{dev.properties.name}; 16 taps, f64; ratio to Base_CUDA (taps in __constant__, FMA)")
    for n in (1_000_000, 32_000_000):
        inp = cp.asarray(np.random.default_rng(1).random(n + 15))
        out = cp.zeros(n)
        want = sum(c * inp[j:j + n] for j, c in enumerate(COEFFICIENTS))
        g = (n + 255) // 256
        variants = {}
        for fmad, m in modules.items():
            const, glob, shuffle = (m.get_function(k) for k in ("fir_const", "fir_global", "fir_shuffle"))
            variants[f"taps in __constant__, fmad={fmad}"] = (
                lambda k=const: k((g,), (256,), (out, inp, np.int64(16), np.int64(n))))
            variants[f"taps through a pointer, fmad={fmad}"] = (
                lambda k=glob: k((g,), (256,), (out, inp, coeff, np.int64(16), np.int64(n))))
            variants[f"taps by shuffle, fmad={fmad}"] = (
                lambda k=shuffle: k((g,), (256,), (out, inp, coeff, np.int32(16), np.int32(n))))
        taps = np.array(COEFFICIENTS)           # a host array: passed by value, in the constant bank
        for checked in (True, False):
            variants[f"cubepy fir, checked={checked}"] = (
                lambda c=checked: fir[g, 256](out, inp, coeff, device=dev, checked=c))
            variants[f"cubepy fir, NumPy taps, checked={checked}"] = (
                lambda c=checked: fir[g, 256](out, inp, taps, device=dev, checked=c))
        base = None
        for name, launch in variants.items():
            out[...] = -1.0                                 # poisoned: an unwritten element fails the check
            launch()
            cp.cuda.Device().synchronize()
            ok = bool(cp.allclose(out, want, rtol=1e-12))
            us = median_us(cp, launch)
            base = base or us
            print(f"n={n:>9} {name:44s} {us:9.2f} us {us / base:6.2f}x  {'ok' if ok else 'WRONG'}", flush=True)


if __name__ == "__main__":
    main()
