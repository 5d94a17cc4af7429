"""The real kernels of the autotune benchmark (module level: they pickle by reference)."""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


@cb.kernel
def polyval(x: Array[f32], y: Mut[Array[f32]], per_unit: Comptime[int], unroll: Comptime[int]):
    """y = a degree-9 polynomial of x (Horner), ``per_unit`` Lines per unit in loops unrolled
    ``unroll`` times: Line width, unrolling, cube size and fastmath all move its speed."""
    base = cb.ABSOLUTE_POS * per_unit
    for outer in range(per_unit // unroll):
        for inner in cb.unroll(range(unroll)):
            i = base + outer * unroll + inner
            if i < len(x):
                v = x[i]
                acc = v * 0.25 + 0.5
                for _ in cb.unroll(range(8)):
                    acc = acc * v + 0.5
                y[i] = acc


def polyval_grid(args, dim, chosen):
    per_cube = dim[0] * chosen["per_unit"] * chosen.lines.get("x", 1)
    return (len(args[0]) + per_cube - 1) // per_cube


def polyval_space(props, quick: bool = False) -> dict:
    """``autotune`` options of a space of 1,200 configs on a device of 1024 units per cube: 8 cube
    sizes x 15 (per_unit, unroll) pairs x 5 Line widths x 2 fastmath modes (``quick``: 16 of
    them, to check that the benchmark runs)."""
    if quick:
        return {"dims": [64, 256], "comptime": {"per_unit": [1, 4], "unroll": [1]}, "lines": {("x", "y"): [1, 4]},
                "fastmath": [None, "algebraic"]}
    top = min(1024, props.max_units_per_cube)
    dims, size = [], 8
    while size <= top:
        dims.append(size)
        size *= 2
    return {"dims": dims, "comptime": {"per_unit": [1, 2, 4, 8, 16], "unroll": [1, 2, 4, 8, 16]},
            "lines": {("x", "y"): [1, 2, 4, 8, 16]}, "fastmath": [None, "algebraic"],
            "valid": lambda c: dict(c.comptime)["unroll"] <= dict(c.comptime)["per_unit"]}


@cb.kernel
def busy_copy(x: Array[f32], y: Mut[Array[f32]], work: Comptime[int]):
    """y = x after ``work`` dependent steps per element (cost grows with ``work``, the answer not)."""
    i = cb.ABSOLUTE_POS
    if i < len(x):
        s = x[i]
        for _ in range(work):
            s = s * 0.999 + x[i]
        y[i] = x[i] + (s - s)


def one_per_unit(args, dim):
    return (len(args[0]) + dim[0] - 1) // dim[0]
