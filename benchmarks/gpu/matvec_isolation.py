"""What makes MATVEC_3D_STENCIL's tuned port slower checked than unchecked (docs/benchmarks.md):
variants of cubepy's two ports, one thing moved at a time, in one process.

    python benchmarks/gpu/matvec_isolation.py [--device cuda] [--sizes default,32x]

The tuned port has Comptime strides and ``fastmath="algebraic"``; the plain port run-time strides
and strict FP. Variants: each port checked and unchecked, and the tuned port with strict FP
(``fastmath=None``), so that the cost of the checks is seen with and without the algebraic
rewrites. Every launch is at 256 units a cube (no autotuning: the same shape for all). Each
output is poisoned, then checked against the suite's NumPy reference, then timed: 20 launches
between two of the device's events (the suite's `EventTimer`), median of 9 rounds, device-resident
arrays (CuPy on cuda).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root
from benchmarks.rajaperf.app import POISON, cubes  # noqa: E402
from benchmarks.rajaperf.apps import APPS  # noqa: E402
from benchmarks.rajaperf.apps.matvec_3d_stencil import matvec_3d, matvec_3d_tuned  # noqa: E402
from benchmarks.rajaperf.memory import memory_for  # noqa: E402
from benchmarks.rajaperf.timing import EventTimer  # noqa: E402

SIZES = {"default": 1, "32x": 32}


def median_us(dev, launch, reps: int = 20, rounds: int = 9) -> float:
    launch()
    dev.synchronize()
    timer = EventTimer(dev)
    return statistics.median(timer.sample(launch, reps) for _ in range(rounds)) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", default="default,32x")
    args = ap.parse_args()
    dev = cb.device(args.device)
    app = APPS["MATVEC_3D_STENCIL"]
    strict = cb.kernel(matvec_3d_tuned.__wrapped__, fastmath=None)
    print(f"{dev.properties.name}; MATVEC_3D_STENCIL, 256 units a cube; us per launch (median)")
    for size in args.sizes.split(","):
        problem = app.set_up(app.default_size * SIZES[size])
        want = problem.copy_arrays()
        app.reference(problem, want)
        memory = memory_for(dev)
        arrays = {k: memory.upload(v) for k, v in problem.arrays.items()}
        base = app.plain(problem, arrays, dev, True).launches[0].args     # the suite's arguments
        count = cubes(problem.size, 256)
        variants = {}
        for name, kernel, rtol in (("plain", matvec_3d, 1e-12), ("tuned", matvec_3d_tuned, app.tuned_rtol),
                                   ("tuned, strict FP", strict, 1e-12)):
            for checked in (False, True):
                launcher = kernel[count, 256]
                variants[f"{name}, {'checked' if checked else 'unchecked'}"] = (
                    lambda launcher=launcher, checked=checked: launcher(*base, device=dev, checked=checked), rtol)
        rows = {}
        for label, (launch, rtol) in variants.items():
            arrays["b"].fill(POISON)
            launch()
            got, zones = memory.download(arrays["b"]), problem.arrays["real_zones"]
            np.testing.assert_allclose(got[zones], want["b"][zones], rtol=rtol, err_msg=label)
            assert np.isnan(np.delete(got, zones)).all(), f"{label} wrote outside the real zones"
            rows[label] = median_us(dev, launch)
        print(f"{size} ({problem.size} zones):")
        for label, us in rows.items():
            unchecked = rows[label.replace("checked", "unchecked")] if label.endswith(", checked") else us
            print(f"  {label:28s} {us:9.1f} us   checked / unchecked {us / unchecked:6.3f}")


if __name__ == "__main__":
    main()
