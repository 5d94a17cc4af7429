"""Trace-time stand-ins for things that are not plain IR values: arrays, regions, ranges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir.nodes import Buffer


@dataclass(eq=False)
class ArrayRef:
    """A global, shared or local array as kernel code sees it.

    ``shape`` holds a traced i32 per dimension (global arrays) or Python ints (shared/local).
    ``param`` is the parameter name for global arrays (error messages and the Mut hint).
    """

    buffer: Buffer
    shape: tuple
    param: str | None = None

    @property
    def name(self) -> str:
        return self.buffer.name


@dataclass(eq=False)
class RegionRef:
    """One unit's part of a mutable array: per dimension ``(base, step, length)``."""

    array: ArrayRef
    parts: list
    param: str

    @property
    def shape(self) -> tuple:
        return tuple(length for _, _, length in self.parts)


@dataclass(frozen=True)
class FormatString:
    """An f-string with runtime values: text pieces and ``(value, conversion, spec)`` triples.
    Only ``print`` takes one (`printing.py`)."""

    pieces: tuple


@dataclass(frozen=True)
class RangeSpec:
    start: Any
    stop: Any
    step: Any


@dataclass(frozen=True)
class Unroll:
    """``cb.unroll(range(...))``: bounds must be known at compile time."""

    range: RangeSpec


@dataclass
class Sym:
    """A traced or static number with Python operators, for partitioning strategies."""

    value: Any
    ops: Any = field(repr=False)

    def _wrap(self, v):
        return Sym(v, self.ops)

    def _bin(self, name, other, reverse=False):
        o = other.value if isinstance(other, Sym) else other
        a, b = (o, self.value) if reverse else (self.value, o)
        return self._wrap(self.ops.binary(name, a, b))

    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o, True)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._bin("sub", o, True)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o, True)
    def __floordiv__(self, o): return self._bin("floordiv", o)
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)
    def __mod__(self, o): return self._bin("mod", o)
    def __rmod__(self, o): return self._bin("mod", o, True)


def unwrap(x):
    return x.value if isinstance(x, Sym) else x
