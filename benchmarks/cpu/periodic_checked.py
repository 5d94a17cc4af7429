"""What checked mode costs a periodic stencil, whose neighbours are indexed modulo the length.

    python benchmarks/cpu/periodic_checked.py [--reps 21] [--n 16777216]

``y[i] = x[(i - 1) % n] + x[i] + x[(i + 1) % n]`` over f32 on the ``cpu`` device, checked (the
default) and unchecked, timed interleaved with numba ``@njit(parallel=True)`` running the same
loop; prints the median milliseconds and the median ratio over rounds. Since 2026-12-05 the
bounds prover knows ``e % len(x)`` lies in ``[0, len(x))`` unless x is empty, so the checked
kernel tests only ``len(x) > 0`` for the two neighbours (docs/design.md, bounds proofs).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import cubepy as cb  # noqa: E402
from benchmarks.cpu.bench_cpu import import_numba, interleaved  # noqa: E402
from cubepy import Array, Mut, f32  # noqa: E402


@cb.kernel
def periodic(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(y):
        y[i] = x[(i - 1) % len(x)] + x[i] + x[(i + 1) % len(x)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--n", type=int, default=1 << 24)
    args = ap.parse_args()
    from cubepy.bench.machine import cpu_model, simd_width_bits

    dev = cb.device("cpu")
    print(f"cpu: {cpu_model()} ({simd_width_bits()}-bit SIMD, {os.cpu_count()} cores); {dev}")
    n = args.n
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    want = np.roll(x, 1) + x + np.roll(x, -1)
    outs = {name: np.full(n, np.nan, np.float32) for name in ("checked", "unchecked", "numba")}
    launch = periodic[-(-n // 256), 256]
    fns = {"checked": lambda: launch(x, outs["checked"], device=dev),
           "unchecked": lambda: launch(x, outs["unchecked"], device=dev, checked=False)}
    numba, why = import_numba()
    if numba is not None:
        @numba.njit(parallel=True, fastmath=False)
        def stencil(x, y):
            m = x.shape[0]
            for i in numba.prange(m):
                y[i] = x[(i - 1) % m] + x[i] + x[(i + 1) % m]
        fns["numba"] = lambda: stencil(x, outs["numba"])
    else:
        print(why)
    found = interleaved(fns, args.reps)
    for name, out in outs.items():
        if name in fns:
            np.testing.assert_allclose(out, want, rtol=1e-6)
    for name in fns:
        print(f"{name:<10} {found[name] * 1e3:8.2f} ms  {found[name, 'ratio']:.3f} of checked")


if __name__ == "__main__":
    main()
