"""Exhaustive check of a partitioning strategy: every element owned by exactly one unit."""

# No `from __future__ import annotations` here: the marking kernels' annotations name the local
# `strategy`, so they must be evaluated where they are written.
import numpy as np

from ..errors import ArgumentValueError
from ..ir.types import i32
from ..lang.builtins import BUILTINS, INTRINSICS
from ..lang.types import Array, Mut, Region

ABSOLUTE_POS = BUILTINS["ABSOLUTE_POS"]
atomic_add, atomic_max = INTRINSICS["atomic_add"], INTRINSICS["atomic_max"]


def verify_partitioning(strategy, shape, count, dim) -> None:
    """Check on the interpreter that ``strategy`` gives each unit of a launch of ``count`` cubes of
    ``dim`` units a part of an array of ``shape`` such that the parts are disjoint and cover it.

    Raises ArgumentValueError naming an element owned twice (and by which units) or not at all.

    Example::

        cb.verify_partitioning(cb.Linear1D(), (1000,), count=4, dim=32)
    """
    from .kernel import kernel as make_kernel
    from .topology import topology

    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    ndim = len(shape)
    size = int(np.prod(shape))
    count_t = topology(count, "CubeCount", "verify_partitioning")
    dim_t = topology(dim, "CubeDim", "verify_partitioning")
    total_units = int(np.prod(count_t)) * int(np.prod(dim_t))

    if ndim == 1:
        def mark(part: Region[i32, strategy], owners: Mut[Array[i32]], counts: Mut[Array[i32]]):
            unit = ABSOLUTE_POS
            for j in range(len(part)):
                element = part[j]
                atomic_add(counts, element, 1)
                atomic_max(owners, element, unit)
    elif ndim == 2:
        def mark(part: Region[i32, strategy], owners: Mut[Array[i32]], counts: Mut[Array[i32]]):
            unit = ABSOLUTE_POS
            for r in range(part.shape[0]):
                for c in range(part.shape[1]):
                    element = part[r, c]
                    atomic_add(counts, element, 1)
                    atomic_max(owners, element, unit)
    else:
        raise ArgumentValueError(f"verify_partitioning handles 1-D and 2-D shapes, got {shape}")

    marker = make_kernel(mark)
    ids = np.arange(size, dtype=np.int32).reshape(shape)
    owners = np.full(size, -1, dtype=np.int32)
    counts = np.zeros(size, dtype=np.int32)
    marker.launch(count_t, dim_t, ids, owners, counts, device="interp")
    twice = np.flatnonzero(counts > 1)
    if twice.size:
        e = int(twice[0])
        raise ArgumentValueError(
            f"{type(strategy).__name__} is not disjoint for shape {shape}, count {count_t}, dim {dim_t}: element "
            f"{np.unravel_index(e, shape)} is owned by {counts[e]} units (one of them unit {owners[e]})")
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        e = int(missing[0])
        raise ArgumentValueError(
            f"{type(strategy).__name__} does not cover shape {shape} with count {count_t}, dim {dim_t} "
            f"({total_units} units): element {np.unravel_index(e, shape)} is owned by no unit")
