"""Kernels and grids of the autotune tests (module level, so that they pickle by reference and
the compile workers import them)."""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


@cb.kernel
def busy_copy(x: Array[f32], y: Mut[Array[f32]], work: Comptime[int]):
    """y = x, after ``work`` dependent steps per element: the cost grows with ``work``, the
    answer does not (``s - s`` is 0 for finite ``s``, and strict floating point keeps it)."""
    i = cb.ABSOLUTE_POS
    if i < len(x):
        s = x[i]
        for _ in range(work):
            s = s * 0.999 + x[i]
        y[i] = x[i] + (s - s)


@cb.kernel
def scaled(x: Array[f32], y: Mut[Array[f32]], mode: Comptime[int]):
    """mode 0: y = 2x; mode 1: y = 2x (1 + 1e-3), close but not equal; mode 2: only every other
    element written (less work, a wrong answer)."""
    i = cb.ABSOLUTE_POS
    if i < len(x):
        if mode == 0:
            y[i] = 2.0 * x[i]
        elif mode == 1:
            y[i] = 2.002 * x[i]
        elif i % 2 == 0:
            y[i] = 2.0 * x[i]


@cb.kernel
def axpy(x: Array[f32], y: Mut[Array[f32]], a: f32, per_unit: Comptime[int]):
    """y += a x, ``per_unit`` Lines per unit (Line width chosen by the tuner)."""
    base = cb.ABSOLUTE_POS * per_unit
    for k in cb.unroll(range(per_unit)):
        if base + k < len(x):
            y[base + k] = a * x[base + k] + y[base + k]


def one_per_unit(args, dim):
    return (len(args[0]) + dim[0] - 1) // dim[0]


def lines_grid(args, dim, chosen):
    """Cubes for ``len(x)`` elements, ``per_unit`` Lines of the chosen width per unit."""
    per_cube = dim[0] * chosen["per_unit"] * chosen.lines.get("x", 1)
    return (len(args[0]) + per_cube - 1) // per_cube


def targets(device):
    """What ``cubepy tune tests.autotune.kernels:targets`` tunes: axpy at two sizes, on inputs
    drawn from the test seed."""
    import os

    import numpy as np
    from cubepy.autotune import autotune

    rng = np.random.default_rng(int(os.environ.get("CUBEPY_TEST_SEED", "0")))
    tuned = autotune(axpy, lines_grid, dims=[32, 64], comptime={"per_unit": [1, 2]}, workers=0, rounds=2)
    pairs = []
    for n in (1024, 4096):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        pairs.append((tuned, (x, y, 0.5)))
    return pairs
