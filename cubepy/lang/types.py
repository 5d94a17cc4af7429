"""Parameter annotations kernel authors write: Array, Mut, Comptime, Region, and `lines`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.types import DType


@dataclass(frozen=True)
class ArraySpec:
    """What ``Array[T]`` / ``Mut[Array[T]]`` / ``Array`` mean as a parameter annotation."""

    dtype: DType | None = None
    mutable: bool = False

    def __repr__(self) -> str:
        inner = f"Array[{self.dtype}]" if self.dtype else "Array"
        return f"Mut[{inner}]" if self.mutable else inner


class Array:
    """A global array parameter, read-only. ``Array[f32]`` fixes the element type; bare
    ``Array`` takes it from the argument. Wrap in ``Mut[...]`` to write to it.

    Example::

        @cb.kernel
        def copy(x: Array[f32], y: Mut[Array[f32]]):
            y[cb.ABSOLUTE_POS] = x[cb.ABSOLUTE_POS]
    """

    def __class_getitem__(cls, dtype: DType) -> ArraySpec:
        if not isinstance(dtype, DType):
            raise TypeError(f"Array[...] takes a cubepy dtype such as cb.f32, not {dtype!r}")
        return ArraySpec(dtype)


class Mut:
    """``Mut[Array[T]]``: an array the kernel may write (it comes back to the host)."""

    def __class_getitem__(cls, inner: Any) -> ArraySpec:
        if inner is Array:
            return ArraySpec(None, True)
        if isinstance(inner, ArraySpec):
            return ArraySpec(inner.dtype, True)
        raise TypeError(f"Mut[...] wraps Array or Array[T], not {inner!r}")


@dataclass(frozen=True)
class ComptimeSpec:
    pytype: Any = None


class Comptime:
    """``Comptime[int]``: a launch value baked into the compiled code (part of the cache key).

    Example::

        @cb.kernel
        def scale(y: Mut[Array[f32]], k: Comptime[int]):
            for j in cb.unroll(range(k)):
                ...
    """

    def __class_getitem__(cls, pytype: Any) -> ComptimeSpec:
        return ComptimeSpec(pytype)


@dataclass(frozen=True)
class RegionSpec:
    dtype: DType | None
    strategy: Any


class Region:
    """``Region[T, Strategy]``: each unit sees only its own disjoint part of a mutable array,
    indexed locally and checked against that part. Strategies: Linear1D, Strided1D,
    Tile2D(th, tw), or a subclass of UnsafePartitioning."""

    def __class_getitem__(cls, params: Any) -> RegionSpec:
        if not (isinstance(params, tuple) and len(params) == 2):
            raise TypeError("Region takes two parameters: Region[T, Strategy]")
        dtype, strategy = params
        if isinstance(strategy, type):
            strategy = strategy()
        return RegionSpec(dtype, strategy)


class LinesArg:
    """An array passed as Lines of ``width`` elements (made by `cubepy.lines`, once per launch,
    so a plain slotted class)."""

    __slots__ = ("array", "width")

    def __init__(self, array: Any, width: int):
        self.array, self.width = array, width

    def __repr__(self) -> str:
        return f"cb.lines({type(self.array).__name__}, {self.width})"


_LINE_WIDTHS = frozenset((1, 2, 4, 8, 16))


def lines(array: Any, width: int) -> LinesArg:
    """Pass ``array`` to a kernel so that each element is a Line of ``width`` values.

    The last axis must be divisible by ``width``; ``len(x)`` in the kernel counts Lines.

    Example::

        saxpy[count, dim](cb.lines(x, 4), cb.lines(y, 4), 2.0)
    """
    if width not in _LINE_WIDTHS or width.__class__ is not int:
        raise ValueError(f"cb.lines: width must be 1, 2, 4, 8 or 16, got {width!r}")
    return LinesArg(array, width)
