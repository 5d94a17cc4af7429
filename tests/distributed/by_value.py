"""A kernel made inside a function: it pickles by value (its qualified name has <locals>)."""

import cubepy as cb
from cubepy import Array, Mut, f32

SCALE = 2.0


def _make():
    @cb.kernel
    def by_value_kernel(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] * SCALE
    return by_value_kernel


by_value_kernel = _make()
