"""Launch topology: CubeDim and CubeCount, their parsing, and the device's limits on them."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from ..errors import ArgumentTypeError, ArgumentValueError

if TYPE_CHECKING:
    from .devices import Device


class _Extent3(tuple):
    """Three extents (x, y, z): an immutable tuple, so that the objects a launch makes anew each
    time (``k[cb.CubeCount(n), cb.CubeDim(256)]``) cost about half of what a frozen dataclass did."""

    __slots__ = ()

    def __new__(cls, x=1, y=1, z=1, *more, **unknown):
        if more or unknown:
            kind = cls.__name__
            if more:
                raise TypeError(f"cb.{kind} takes up to 3 extents (x, y, z), got {3 + len(more)}: {(x, y, z, *more)}")
            raise TypeError(f"cb.{kind} takes the extents x, y and z, not {', '.join(map(repr, unknown))}")
        if x.__class__ is not int or y.__class__ is not int or z.__class__ is not int:
            kind = cls.__name__
            x, y, z = (_extent(kind, axis, v) for axis, v in zip("xyz", (x, y, z)))
        return _new_tuple(cls, (x, y, z))

    x = property(operator.itemgetter(0), doc="extent along x")
    y = property(operator.itemgetter(1), doc="extent along y")
    z = property(operator.itemgetter(2), doc="extent along z")

    def __getnewargs__(self):
        return tuple(self)

    def __eq__(self, other):          # a CubeDim is not a CubeCount, nor a plain tuple
        return other.__class__ is self.__class__ and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(x={self[0]}, y={self[1]}, z={self[2]})"

    def as_tuple(self) -> tuple[int, int, int]:
        return tuple(self)


_new_tuple = tuple.__new__


class CubeDim(_Extent3):
    """Units per cube along x, y, z (a CUDA block, an OpenCL work-group): ``cb.CubeDim(16, 16)``."""


class CubeCount(_Extent3):
    """Cubes per launch along x, y, z (a CUDA grid): ``cb.CubeCount(4096)``."""


def topology(value, what: str, kernel_name: str) -> tuple[int, int, int]:
    """``value`` (an int, a tuple of up to 3 ints, a CubeDim or CubeCount; NumPy integers too)
    as an (x, y, z) tuple. A CubeCount may have a zero extent: the launch then runs nothing."""
    if value.__class__ is int and value >= 1:   # the common case, without building anything
        return (value, 1, 1)
    return parse_topology(value, what, kernel_name)


def parse_topology(value, what: str, kernel_name: str) -> tuple[int, int, int]:
    if isinstance(value, _Extent3):
        t = value.as_tuple()
    elif isinstance(value, tuple) and 1 <= len(value) <= 3:
        t = tuple(value) + (1,) * (3 - len(value))
    elif _integer(value) is not None:
        t = (value, 1, 1)
    else:
        raise ArgumentTypeError(f"{what} must be an int, a tuple of up to 3 ints or cb.{what}, got {value!r}",
                                kernel_name)
    ints = tuple(_integer(v) for v in t)
    least = 0 if what == "CubeCount" else 1
    if any(v is None or v < least for v in ints):
        kind = "non-negative" if least == 0 else "positive"
        raise ArgumentValueError(f"{what} must hold {kind} ints, got {t}", kernel_name)
    return ints


def _extent(kind: str, axis: str, value) -> int:
    extent = _integer(value)
    if extent is None:
        raise TypeError(f"cb.{kind}: extent {axis} must be an int, got {value!r}")
    return extent


def _integer(value) -> int | None:
    """``value`` as an int if it is an integer (an int or a NumPy integer, not a bool), else None."""
    if isinstance(value, bool) or hasattr(value, "dtype") and value.dtype.kind == "b":
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def check_limits(kernel_name: str, dev: Device, count, dim) -> None:
    """Refuse a topology above the device's maxima, naming the axis, the value and the limit."""
    p = dev.properties
    units = dim[0] * dim[1] * dim[2]
    if units > p.max_units_per_cube:
        raise ArgumentValueError(f"CubeDim{dim} has {units} units; device '{dev.name}' allows at most "
                                 f"{p.max_units_per_cube} per cube", kernel_name)
    for axis, v, most in zip("xyz", dim, p.max_cube_dim):
        if v > most:
            raise ArgumentValueError(f"CubeDim.{axis} = {v} exceeds device '{dev.name}' maximum {most}", kernel_name)
    for axis, v, most in zip("xyz", count, p.max_cube_count):
        if v > most:
            raise ArgumentValueError(f"CubeCount.{axis} = {v} exceeds device '{dev.name}' maximum {most}",
                                     kernel_name)

