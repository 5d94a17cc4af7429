"""What checked mode costs each RAJAPerf port on the CPU: checked time over unchecked time.

    python benchmarks/cpu/checked_cost.py [--kernels DEL_DOT_VEC_2D,LTIMES] [--variant plain] [--rounds 41]

For every app of the suite (``cubepy.bench``) at its default size on the ``cpu`` device, the port
built checked (the default) and unchecked, each run once after its outputs are poisoned and
compared (the two must write the same values), then timed on one set of arrays round by round, interleaved
(`bench_cpu.interleaved`): prints each build's median milliseconds and the median over rounds of
checked / unchecked, which a noisy machine moves far less than either time.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
from cubepy.bench.apps import APPS  # noqa: E402
from cubepy.bench.machine import cpu_model, simd_width_bits  # noqa: E402

import cubepy as cb  # noqa: E402
from benchmarks.cpu.bench_cpu import interleaved  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(APPS), help="comma-separated app names")
    ap.add_argument("--variant", choices=("plain", "tuned"), default="plain")
    ap.add_argument("--rounds", type=int, default=41)
    opts = ap.parse_args()
    dev = cb.device("cpu")
    print(f"cpu: {cpu_model()} ({simd_width_bits()}-bit SIMD, {os.cpu_count()} cores); {dev}; "
          f"{opts.variant} ports, median of {opts.rounds} interleaved rounds", flush=True)
    for name in opts.kernels.split(","):
        app = APPS[name]
        problem = app.set_up(app.default_size)
        arrays = {checked: problem.copy_arrays() for checked in (True, False)}
        reps = {checked: app.port(opts.variant, problem, arrays[checked], dev, checked) for checked in (True, False)}
        for checked, rep in reps.items():
            app.poison(arrays[checked])
            rep()
        for out in app.written_arrays():
            if not np.array_equal(np.asarray(arrays[True][out]), np.asarray(arrays[False][out]), equal_nan=True):
                raise SystemExit(f"{name}: the checked and unchecked ports wrote different '{out}'")
        # timed on one set of arrays: two copies of a large array can differ in speed by more than
        # the checks do (pages placed differently), which would show up as a cost of one build
        shared = problem.copy_arrays()
        reps = {checked: app.port(opts.variant, problem, shared, dev, checked) for checked in (True, False)}
        times = interleaved({"unchecked": reps[False], "checked": reps[True]}, opts.rounds)
        print(f"{name:<20} unchecked {times['unchecked'] * 1e3:8.3f} ms  checked {times['checked'] * 1e3:8.3f} ms  "
              f"checked / unchecked {times[('checked', 'ratio')]:.3f}", flush=True)


if __name__ == "__main__":
    main()
