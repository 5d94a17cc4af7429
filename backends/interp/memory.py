"""Buffers as flat arrays of elements, and the bounds check that turns indices into addresses.

Every buffer is one flat array of elements (rows of w for a Line buffer): a global buffer is a
flat view of the caller's array (writes land in it), shared memory holds one copy per cube and
local memory one copy per unit, one after another, so an address also says whose copy it is.
"""

from __future__ import annotations

import math

import numpy as np

from cubepy.errors import ArgumentValueError
from cubepy.ir.nodes import Buffer

from .values import np_dtype, poison


class Memory:
    """One buffer: ``flat`` elements, its logical ``shape`` and whose copy each address is in."""

    def __init__(self, buf: Buffer, flat: np.ndarray, shape: tuple[int, ...], copies: str | None):
        self.buf = buf
        self.flat = flat
        self.shape = shape
        self.size = math.prod(shape)                  # elements in one copy
        self.copies = copies                          # None (global), "cube" or "unit"
        self.strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

    @classmethod
    def global_(cls, buf: Buffer, arr: np.ndarray) -> Memory:
        if not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous:
            raise ArgumentValueError(f"array '{buf.name}' must be a C-contiguous NumPy array")
        w = buf.type.width
        flat = arr.reshape(-1) if w == 1 else arr.reshape(-1, w)
        shape = arr.shape if w == 1 else arr.shape[:-1]
        return cls(buf, flat, tuple(shape), None)

    @classmethod
    def private(cls, buf: Buffer, copies: int) -> Memory:
        """Shared (one per cube) or local (one per unit) memory, poisoned."""
        shape = tuple(buf.shape)
        n = copies * math.prod(shape)
        w = buf.type.width
        flat = poison((n,) if w == 1 else (n, w), np_dtype(buf.type))
        return cls(buf, flat, shape, "cube" if buf.kind == "shared" else "unit")

    def in_bounds(self, idx: list[np.ndarray]) -> np.ndarray | None:
        """Which units' index tuples lie inside the shape (None: all of them)."""
        ok = None
        for i, n in zip(idx, self.shape):
            good = (i >= 0) & (i < n)
            ok = good if ok is None else ok & good
        return None if ok is None or ok.all() else ok

    def address(self, idx: list[np.ndarray], copy: np.ndarray | None) -> np.ndarray:
        """Flat addresses of in-bounds index tuples; ``copy`` is the cube or unit id per entry."""
        if len(idx) == 1 and copy is None:
            return idx[0]
        addr = np.zeros(len(idx[0]) if idx else 1, np.int64) if copy is None else copy * self.size
        for i, s in zip(idx, self.strides):
            addr = addr + i.astype(np.int64) * s
        return addr

    def index_of(self, addr: int) -> tuple[tuple[int, ...], int | None]:
        """The index tuple of a flat address, and the copy (cube or unit) it is in."""
        copy, rest = divmod(int(addr), self.size) if self.copies else (None, int(addr))
        return tuple(int(i) for i in np.unravel_index(rest, self.shape)), copy
