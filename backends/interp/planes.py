"""Plane operations, vectorized over all planes of the launch.

The units of a cube with linear index in [p*P, (p+1)*P) form plane p. Per-unit arrays are
reshaped to (planes, P) (padding a partial last plane of each cube); ``valid`` marks lanes that
exist and are active, and only those take part.
"""

from __future__ import annotations

import numpy as np

from cubepy.ir.opcodes import (
    PLANE_COMBINE,
    PLANE_REDUCE,
    PLANE_SCANS,
    PLANE_SHUFFLES,
    PLANE_SOURCE_LANE,
    plane_identity,
)
from cubepy.ir.types import DType

from .ops import maximum, minimum

# the NumPy ufunc of each combiner (`PLANE_COMBINE`, `PLANE_SOURCE_LANE`)
_UFUNC = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
          "xor": np.bitwise_xor, "sub": np.subtract}
_IEEE = {"plane_min": minimum, "plane_max": maximum}


class Planes:
    def __init__(self, num_cubes: int, units_per_cube: int, plane_dim: int):
        self.C, self.U, self.P = num_cubes, units_per_cube, plane_dim
        self.per_cube = -(-units_per_cube // plane_dim)
        self.pad = self.per_cube * plane_dim - units_per_cube
        self.lane = np.arange(plane_dim)

    def split(self, x: np.ndarray, fill=0) -> np.ndarray:
        """(N, ...) -> (planes, P, ...), padding partial planes with ``fill``."""
        x = x.reshape((self.C, self.U) + x.shape[1:])
        if self.pad:
            x = np.concatenate([x, np.full((self.C, self.pad) + x.shape[2:], fill, x.dtype)], axis=1)
        return x.reshape((self.C * self.per_cube, self.P) + x.shape[2:])

    def join(self, y: np.ndarray) -> np.ndarray:
        """(planes, P, ...) -> (N, ...)."""
        y = y.reshape((self.C, self.per_cube * self.P) + y.shape[2:])[:, : self.U]
        return y.reshape((self.C * self.U,) + y.shape[2:])

    def everywhere(self, r: np.ndarray) -> np.ndarray:
        """A per-plane result (planes, ...) given to every lane."""
        return self.join(np.broadcast_to(r[:, None], (r.shape[0], self.P) + r.shape[1:]))

    def apply(self, code: str, active: np.ndarray, x, arg, dtype: DType | None) -> np.ndarray:
        """The plane op ``code`` on per-unit ``x`` of element type ``dtype`` (None for plane_elect),
        and its second operand ``arg``."""
        valid = self.split(active, False)
        if code == "plane_elect":
            return self.join(valid & (np.cumsum(valid, axis=1) == 1))
        xp = self.split(x)
        v = valid if xp.ndim == 2 else valid[..., None]     # Lines: each element separately
        if code in PLANE_REDUCE:
            fn = _UFUNC[PLANE_COMBINE[code]]
            init = plane_identity(code, dtype) if code in _IEEE else None
            if code in _IEEE and xp.dtype.kind == "f":   # NaN wins, -0.0 < +0.0: in any order
                return self.everywhere(_tree_reduce(_IEEE[code], np.where(v, xp, init)))
            kw = {} if init is None else {"initial": init}
            return self.everywhere(fn.reduce(xp, axis=1, where=v, dtype=xp.dtype, **kw))
        if code == "plane_all":
            return self.everywhere(np.logical_and.reduce(xp | ~v, axis=1))
        if code == "plane_any":
            return self.everywhere(np.logical_or.reduce(xp & v, axis=1))
        if code == "plane_ballot":
            bits = np.left_shift(np.uint64(1), self.lane.astype(np.uint64))
            bits = bits if xp.ndim == 2 else bits[:, None]
            return self.everywhere(np.bitwise_or.reduce(np.where(xp & v, bits, np.uint64(0)), axis=1))
        if code in PLANE_SCANS:
            xs = np.where(v, xp, 0)
            out = np.zeros_like(xs)
            if code == "plane_inclusive_sum":
                np.cumsum(xs, axis=1, dtype=xs.dtype, out=out)
            else:
                np.cumsum(xs[:, :-1], axis=1, dtype=xs.dtype, out=out[:, 1:])
            return self.join(out)
        if code in PLANE_SHUFFLES:
            return self.join(self._shuffle(code, xp, valid, arg))
        raise ValueError(f"unknown plane op {code!r}")

    def _shuffle(self, code, xp, valid, arg):
        """Each lane reads lane ``src``; a source out of range or inactive gives the lane its own
        value (``plane_shuffle`` and ``plane_broadcast`` take the lane modulo P)."""
        a = self.split(np.broadcast_to(arg, (self.C * self.U,)).astype(np.int64))
        inst, left, right = PLANE_SOURCE_LANE[code]
        lane = self.lane
        operand = {"a": a, "lane": lane, "last": self.P - 1}
        src = _UFUNC[inst](operand[left], operand[right])
        inside = (src >= 0) & (src < self.P)
        src = np.where(inside, src, lane)
        ok = inside & np.take_along_axis(valid, src, axis=1)
        if xp.ndim == 3:
            src, ok = src[..., None], ok[..., None]
        return np.where(ok, np.take_along_axis(xp, src, axis=1), xp)


def _tree_reduce(fn, x: np.ndarray) -> np.ndarray:
    """Reduce axis 1 (a power of two long) with an associative and commutative ``fn``."""
    while x.shape[1] > 1:
        half = x.shape[1] // 2
        x = fn(x[:, :half], x[:, half:])
    return x[:, 0]
