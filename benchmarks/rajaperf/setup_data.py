"""RAJAPerf's data set-up (``common/DataUtils.cpp``, ``apps/AppsData.cpp``): the init counter,
its parity factor, the initializers, problem-size formulas and the structured-mesh domain.

Every initializer bumps the counter after filling; the counter's parity picks the factor of the
next ``init_data`` (0.2 for even, 0.1 for odd). A kernel's set-up makes one `DataInit` and calls
its methods in RAJAPerf's order, so the values (and checksums) come out as RAJAPerf's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .glibc_rand import RAND_MAX, rand_values

RAND_SEED = 4793


class DataInit:
    """One kernel's initializer calls, in order (the counter starts at 0)."""

    def __init__(self):
        self.count = 0

    @property
    def factor(self) -> float:
        return 0.1 if self.count % 2 else 0.2

    def _done(self, value):
        self.count += 1
        return value

    def data(self, n: int) -> np.ndarray:
        """``initData``: ``factor * (i + 1.1) / (i + 1.12345)``."""
        i = np.arange(n, dtype=np.float64)
        return self._done(self.factor * (i + 1.1) / (i + 1.12345))

    def const(self, n: int, value, dtype=np.float64) -> np.ndarray:
        """``initDataConst``: every element ``value``."""
        return self._done(np.full(n, value, dtype=dtype))

    def rand_value(self, n: int) -> np.ndarray:
        """``initDataRandValue``: ``srand(4793)``, then ``rand() / RAND_MAX`` per element."""
        return self._done(rand_values(n, RAND_SEED).astype(np.float64) / RAND_MAX)

    def scalar(self) -> float:
        """``initData(Real_type&)``: ``factor * 1.1 / 1.12345``."""
        return self._done(self.factor * 1.1 / 1.12345)


def sqrt_size(target: float, extra: int = 0) -> int:
    """``int(sqrt(target) + extra + sqrt(2) - 1)``: the fudge keeps exact squares exact."""
    return int(math.sqrt(target) + extra + math.sqrt(2) - 1)


def cbrt_size(target: float, extra: int = 0) -> int:
    """``int(cbrt(target) + extra + cbrt(3) - 1)`` with C's ``cbrt`` (NumPy's calls it; Python's
    ``x ** (1/3)`` gives 99.99999999999997 for 1e6, where ``cbrt`` gives 100)."""
    return int(float(np.cbrt(target)) + extra + float(np.cbrt(3.0)) - 1)


@dataclass(frozen=True)
class Domain:
    """``ADomain(n, ndims)``: ``n`` real nodes per dimension, 2 ghost node layers low, 1 high.
    Nodes and zones share one linear index ``i + j*jp + k*kp``."""

    n: int
    ndims: int
    NPNL: int = 2
    NPNR: int = 1
    fields: dict = field(default_factory=dict, compare=False)

    @property
    def nn(self) -> int:
        return self.n + self.NPNL + self.NPNR

    @property
    def jp(self) -> int:
        return self.nn if self.ndims >= 2 else 0

    @property
    def kp(self) -> int:
        return self.nn * self.nn if self.ndims == 3 else 0

    @property
    def lo(self) -> int:
        return self.NPNL

    @property
    def hi(self) -> int:
        """The last real node per dimension (``imax``); real zones are ``lo..hi-1``."""
        return self.NPNL + self.n - 1

    @property
    def nnalls(self) -> int:
        return self.nn ** self.ndims

    @property
    def n_real_zones(self) -> int:
        return (self.n - 1) ** self.ndims

    @property
    def n_real_nodes(self) -> int:
        return self.n ** self.ndims

    def lin(self, i: int, j: int, k: int = 0) -> int:
        return i + j * self.jp + k * self.kp

    def _corner(self, delta: int) -> int:
        lo3 = [self.lo + delta] * self.ndims + [0] * (3 - self.ndims)
        return self.lin(*lo3)

    @property
    def fpz(self) -> int:
        """The first zone including one ghost zone layer on the low side."""
        return self._corner(-1)

    @property
    def lpz(self) -> int:
        """The last zone including one ghost zone layer on the high side."""
        hi3 = [self.hi] * self.ndims + [0] * (3 - self.ndims)
        return self.lin(*hi3)

    def real_zones(self) -> np.ndarray:
        """The linear index of every real zone, i fastest, then j, then k (``Index_type``)."""
        r = np.arange(self.lo, self.hi, dtype=np.int64)
        if self.ndims == 2:
            return (r[None, :] + r[:, None] * self.jp).reshape(-1)
        return (r[None, None, :] + r[None, :, None] * self.jp + r[:, None, None] * self.kp).reshape(-1)

    def positions(self, spacing: tuple[float, ...]) -> list[np.ndarray]:
        """Node coordinates ``(i*dx, j*dy[, k*dz])`` for every node including ghosts."""
        idx = np.arange(self.nn, dtype=np.float64)
        shape = (self.nn,) * self.ndims
        out = []
        for axis, d in enumerate(spacing):           # axis 0 is i (fastest)
            coord = idx * d
            view = [1] * self.ndims
            view[self.ndims - 1 - axis] = self.nn
            out.append(np.broadcast_to(coord.reshape(view), shape).reshape(-1).copy())
        return out


def domain_2d(target: float) -> Domain:
    return Domain(sqrt_size(target, 1), 2)


def domain_3d(target: float) -> Domain:
    return Domain(cbrt_size(target, 1), 3)
