"""Kernels several test modules launch."""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Mut, f32


@cb.kernel
def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]
