"""A branch on loaded data on the CPU: a gang (which skips a side no lane takes) against LLVM's
vectorized unit loop (which if-converts the branch and runs both sides under masks).

    python benchmarks/cpu/branch_gangs.py [--n 4194304] [--reps 15]

The kernel is ENERGY's shape (`if d[i] <= 0:` around four loads, a division and a square root,
else a store of 0), in f64 and f32, with the branch taken by none, 1%, half and all of the units
at random. Both builds come from the same source: the gang one as the backend chooses it
(`backends/cpu/gang_choice.py`), the unit-loop one with that choice turned off for its compile.
Times are medians of interleaved rounds; the ratio is the median of the per-round ratios.
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root
# the two builds share a source: a trace restored from the disk cache would give both one build
os.environ["CUBEPY_TRACE_INDEX"] = "0"

import numpy as np  # noqa: E402

import cubepy as cb  # noqa: E402
from benchmarks.cpu.bench_cpu import interleaved  # noqa: E402
from cubepy import Array, Mut, f32, f64  # noqa: E402


def rare_branch(ty):
    """A new kernel object (its own compiled builds) of ENERGY's shape in element type ``ty``."""
    @cb.kernel
    def rare(q: Mut[Array[ty]], d: Array[ty], a: Array[ty], b: Array[ty], c: Array[ty], floor: ty):
        i = cb.ABSOLUTE_POS
        if i < len(q):
            if d[i] <= 0.0:
                s = (a[i] * b[i] + c[i] * c[i]) / (1.0 + a[i])
                r = floor
                if s > floor:
                    r = cb.sqrt(s)
                q[i] = r * a[i] + b[i]
            else:
                q[i] = 0.0
    return rare


def unit_loop_build(kernel, args, dev):
    """Compile ``kernel`` for ``args`` with the branch heuristic off: its regions stay unit loops."""
    from cubepy.backends.cpu.gang_choice import GangChoiceMixin

    chosen = GangChoiceMixin._skippable_branch
    GangChoiceMixin._skippable_branch = lambda self, ops: False
    try:
        kernel[len(args[0]) // 256, 256](*args, device=dev)
    finally:
        GangChoiceMixin._skippable_branch = chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--reps", type=int, default=15)
    opts = parser.parse_args()
    from cubepy.bench.machine import cpu_model, simd_width_bits

    dev = cb.device("cpu")
    print(f"cpu: {cpu_model()} ({simd_width_bits()}-bit SIMD, {os.cpu_count()} cores); {dev}")
    n, count = opts.n, opts.n // 256
    rng = np.random.default_rng(0)
    for ty, dt in ((f64, np.float64), (f32, np.float32)):
        gang, unit = rare_branch(ty), rare_branch(ty)
        args = [np.zeros(n, dt)] + [rng.random(n).astype(dt) for _ in range(4)] + [dt(0.25)]
        unit_loop_build(unit, args, dev)
        assert "gif_run" in gang.source(*args, device=dev, dim=256)
        assert "gif_run" not in unit.source(*args, device=dev, dim=256)
        for taken in (0.0, 0.01, 0.5, 1.0):
            args[1] = np.where(rng.random(n) < taken, -1.0, 1.0).astype(dt)
            outs = [np.full(n, np.nan, dt), np.full(n, np.nan, dt)]
            gang[count, 256](outs[0], *args[1:], device=dev)
            unit[count, 256](outs[1], *args[1:], device=dev)
            np.testing.assert_array_equal(outs[0], outs[1])
            t = interleaved({"unit loop": lambda: unit[count, 256](*args, device=dev),
                             "gang": lambda: gang[count, 256](*args, device=dev)}, opts.reps)
            print(f"{dt.__name__:8s} n={n} taken {taken:4.0%}: unit loop {t['unit loop'] * 1e3:7.3f} ms, "
                  f"gang {t['gang'] * 1e3:7.3f} ms, gang / unit loop {t[('gang', 'ratio')]:.2f}")


if __name__ == "__main__":
    main()
