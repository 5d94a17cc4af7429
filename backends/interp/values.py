"""How IR values look inside the interpreter: NumPy dtypes, poison, constants, shapes.

A value of scalar type is an array of shape ``(N,)`` over the launch's N units, or a 0-d array
when it is the same on every unit (constants, parameters, cube-wide builtins). A Line of width w
is ``(N, w)`` or ``(w,)``. The IR type always says which of the two a 1-d array is.
"""

from __future__ import annotations

import numpy as np

from cubepy.ir.nodes import Const
from cubepy.ir.types import DType, Type

POISON_BYTE = 0x5A


def np_dtype(t: Type | DType) -> np.dtype:
    """The NumPy dtype of an IR type or element type."""
    d = t.dtype if isinstance(t, Type) else t
    return np.dtype(d.numpy_name)


def unit_shape(n: int, t: Type) -> tuple[int, ...]:
    """The shape of a per-unit value of type ``t`` over ``n`` units."""
    return (n,) if t.width == 1 else (n, t.width)


def poison(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Fresh memory that shows where it is read before written: NaN for floats, True for bool,
    the byte 0x5A repeated for integers (0x5A5A5A5A for an i32)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype)
    raw = np.full(tuple(shape) + (dtype.itemsize,), POISON_BYTE, np.uint8)
    return raw.view(dtype).reshape(shape)


def const_value(c: Const) -> np.ndarray:
    """A constant as a 0-d array (``(w,)`` for a Line) of exactly its type's dtype."""
    dtype = np_dtype(c.type)
    try:
        arr = np.asarray(c.value, dtype)
    except OverflowError:  # e.g. -1 for an unsigned type: wrap like a cast
        arr = np.asarray(c.value).astype(dtype)
    if c.type.width > 1 and arr.ndim == 0:
        arr = np.broadcast_to(arr, (c.type.width,))
    return arr


def per_unit(x: np.ndarray, n: int, t: Type) -> np.ndarray:
    """``x`` spread to one entry per unit (a read-only view when it was uniform)."""
    return np.broadcast_to(x, unit_shape(n, t))


def fit(x, t: Type) -> np.ndarray:
    """``x`` as an array of exactly the dtype of ``t``."""
    return np.asarray(x).astype(np_dtype(t), copy=False)
