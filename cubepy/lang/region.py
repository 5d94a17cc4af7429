"""Partitioning strategies for `Region` parameters.

A strategy maps a unit to its part of an array: for each array dimension a triple
``(base, step, length)``, so that the unit's local index ``j`` along that dimension is the
array index ``base + j * step`` for ``0 <= j < length``. It is written with ordinary Python
arithmetic on the topology values of ``t`` (a `Topology`), which the frontend traces into IR.

The built-in strategies are proven disjoint and covering by tests; a user strategy subclasses
`UnsafePartitioning` (its author promises disjointness) and can be checked exhaustively for
given sizes with `cubepy.verify_partitioning`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class Topology:
    """What a strategy may read (the frontend supplies traced values for each field).

    Fields: ``unit`` (this unit's index over the whole launch), ``units`` (units in the launch),
    ``unit_x``/``unit_y`` (position in its cube), ``cube_x``/``cube_y`` (its cube's position),
    ``cube_dim_x``/``cube_dim_y``, ``cube_count_x``/``cube_count_y``; and ``min(a, b)``,
    ``max(a, b)``.
    """

    unit: Any
    units: Any
    unit_x: Any
    unit_y: Any
    cube_x: Any
    cube_y: Any
    cube_dim_x: Any
    cube_dim_y: Any
    cube_count_x: Any
    cube_count_y: Any

    def min(self, a, b):  # pragma: no cover - supplied by the frontend
        raise NotImplementedError

    def max(self, a, b):  # pragma: no cover
        raise NotImplementedError


class Partitioning:
    """Base of all strategies. ``ndim`` is the array rank the strategy partitions."""

    ndim = 1
    proven_disjoint = True

    def part(self, shape: tuple, t: Topology) -> list[tuple]:
        """Return ``[(base, step, length), ...]``, one triple per array dimension."""
        raise NotImplementedError

    def key(self) -> tuple:
        """What identifies this strategy in the specialization key."""
        return (type(self).__module__, type(self).__qualname__, tuple(sorted(vars(self).items())))


class UnsafePartitioning(Partitioning):
    """Subclass for a user strategy: you promise disjointness; check it with
    `cubepy.verify_partitioning(strategy, shape, count, dim)`."""

    proven_disjoint = False


@dataclass(frozen=True)
class Linear1D(Partitioning):
    """Unit ``u`` of ``N`` owns the contiguous chunk ``[u*c, min((u+1)*c, n))``, ``c = ceil(n/N)``."""

    def part(self, shape, t):
        n = shape[0]
        chunk = (n + t.units - 1) // t.units
        start = t.min(t.unit * chunk, n)
        return [(start, 1, t.min(chunk, n - start))]


@dataclass(frozen=True)
class Strided1D(Partitioning):
    """Unit ``u`` of ``N`` owns ``u, u+N, u+2N, ...`` (coalesced on GPUs)."""

    def part(self, shape, t):
        n = shape[0]
        start = t.min(t.unit, n)
        return [(start, t.units, (n - start + t.units - 1) // t.units)]


@dataclass(frozen=True)
class Tile2D(Partitioning):
    """A 2-D array cut in tiles: each cube owns ``(th*CUBE_DIM_Y) x (tw*CUBE_DIM_X)`` elements,
    each unit a ``th x tw`` sub-tile of it (clipped at the array's edge)."""

    th: int = 1
    tw: int = 1
    ndim = 2

    def __post_init__(self):
        if not (isinstance(self.th, int) and isinstance(self.tw, int) and self.th > 0 and self.tw > 0):
            raise ValueError(f"Tile2D(th, tw) takes positive ints, got ({self.th!r}, {self.tw!r})")

    def part(self, shape, t):
        rows, cols = shape[0], shape[1]
        row0 = t.min((t.cube_y * t.cube_dim_y + t.unit_y) * self.th, rows)
        col0 = t.min((t.cube_x * t.cube_dim_x + t.unit_x) * self.tw, cols)
        return [(row0, 1, t.min(self.th, rows - row0)), (col0, 1, t.min(self.tw, cols - col0))]
