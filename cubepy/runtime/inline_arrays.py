"""Small read-only host arrays passed by value, in a launch's parameters.

A NumPy array given to a read-only ``Array`` parameter is normally copied to the device before
the launch. On a device whose ``inline_array_bytes`` is set (CUDA), an array of at most that many
bytes travels inside the launch's parameters instead: no copy, no allocation, and the kernel reads
it from the constant bank (a 16-tap filter's taps: one constant-cache read per tap and warp
instead of one more L1 wavefront). The specialization holds a capacity, the array's byte size
rounded up to a power of two of at least `MIN_CAPACITY_BYTES`, so arrays of nearby lengths share
one compiled kernel and the length itself stays a run-time value, checked as every length is.

The runtime decides which parameters may travel so (`inline_capacity`, `place_inline`); the
compile pipeline keeps only those read at indices the same on the units that run a load together,
within the kernel's budget (`cubepy.ir.inline_arrays`), and the launch stages the others as before.
A device array (CuPy, a CUDA tensor, `cb.preload` on a GPU) always travels by address.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..frontend.spec import ParamSpec

MIN_CAPACITY_BYTES = 64
MAX_INLINE_BYTES = 2048        # the largest budget of any backend (CUDA's): plan keys bucket sizes up to it


def inline_capacity(array: np.ndarray, limit: int) -> int:
    """The room, in elements, a specialization keeps for ``array`` passed by value on a device
    allowing ``limit`` bytes; 0 when it is larger (or the device allows none)."""
    nbytes = array.nbytes
    if nbytes > limit:
        return 0
    room = 1 << max(MIN_CAPACITY_BYTES - 1, nbytes - 1).bit_length()
    return max(1, min(room, limit) // array.itemsize)


def quick_bucket(array: np.ndarray) -> int:
    """What of a host array's size a launch-plan key must tell apart: its capacity bucket when
    small enough to travel by value on some device (0 otherwise), whatever the device."""
    nbytes = array.nbytes
    if nbytes > MAX_INLINE_BYTES:
        return 0
    return max(MIN_CAPACITY_BYTES - 1, nbytes - 1).bit_length()


def by_value_kind(spec: ParamSpec) -> bool:
    """Whether a parameter's kind lets its argument travel by value: a read-only, non-Line array."""
    return spec.kind == "array" and not spec.mutable and spec.width == 1


def eligible(spec: ParamSpec, value) -> bool:
    """Whether an argument may travel by value: bound to a read-only, non-Line array parameter as
    a host array (a NumPy array, or the host view of a CPU tensor)."""
    return by_value_kind(spec) and value.__class__ is np.ndarray


def place_inline(specs: tuple[ParamSpec, ...], values: list, limit: int) -> tuple[ParamSpec, ...]:
    """``specs`` with the capacity of each argument that may travel by value on a device allowing
    ``limit`` bytes per kernel."""
    if not limit:
        return specs
    return tuple(replace(s, inline=inline_capacity(v, limit)) if eligible(s, v) else s
                 for s, v in zip(specs, values))

__all__ = ["MAX_INLINE_BYTES", "MIN_CAPACITY_BYTES", "by_value_kind", "eligible", "inline_capacity", "place_inline",
           "quick_bucket"]
