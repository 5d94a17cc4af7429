"""What the interpreter's race checks cost: the default (one store's units writing different
values to one element is refused) against race mode (``races=True``: every conflicting access,
reads included, tracked across the launch).

    python benchmarks/interp/bench_race_checks.py [--reps 7] [--log2n 20]

Rows: saxpy (each store's addresses increase, so the default check is one comparison pass) and a
scatter through a permutation (addresses in no order: the default check sorts them).
Median of ``--reps`` launches on the ``interp`` device, host clock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from tests.kernels import saxpy, scatter  # noqa: E402


def _median_ms(launch, reps: int) -> float:
    launch()                                                   # compile / trace once
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        launch()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--log2n", type=int, default=20)
    args = ap.parse_args()
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    perm = rng.permutation(n).astype(np.int32)
    default, race_mode = cb.device("interp"), cb.device("interp", races=True)
    cubes = n // 256
    rows = {
        "saxpy": lambda dev: saxpy[cubes, 256](x, y, 2.0, device=dev),
        "scatter (permuted)": lambda dev: scatter[cubes, 256](x, perm, y, device=dev),
    }
    print(f"interp, 2^{args.log2n} elements, median of {args.reps} launches (ms)")
    print(f"{'kernel':<20} {'default':>9} {'races=True':>11} {'ratio':>6}")
    for name, launch in rows.items():
        a = _median_ms(lambda: launch(default), args.reps)
        b = _median_ms(lambda: launch(race_mode), args.reps)
        print(f"{name:<20} {a:9.1f} {b:11.1f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
