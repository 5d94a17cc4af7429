"""Launch topology: CubeDim and CubeCount, their parsing, and the device's limits on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ArgumentTypeError, ArgumentValueError

if TYPE_CHECKING:
    from .devices import Device


@dataclass(frozen=True)
class _Extent3:
    x: int = 1
    y: int = 1
    z: int = 1

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.x, self.y, self.z)


class CubeDim(_Extent3):
    """Units per cube along x, y, z (a CUDA block, an OpenCL work-group): ``cb.CubeDim(16, 16)``."""


class CubeCount(_Extent3):
    """Cubes per launch along x, y, z (a CUDA grid): ``cb.CubeCount(4096)``."""


def topology(value, what: str, kernel_name: str) -> tuple[int, int, int]:
    """``value`` (an int, a tuple of up to 3 ints, a CubeDim or CubeCount) as an (x, y, z) tuple."""
    if value.__class__ is int and value >= 1:   # the common case, without building anything
        return (value, 1, 1)
    return parse_topology(value, what, kernel_name)


def parse_topology(value, what: str, kernel_name: str) -> tuple[int, int, int]:
    if isinstance(value, _Extent3):
        t = value.as_tuple()
    elif isinstance(value, int) and not isinstance(value, bool):
        t = (value, 1, 1)
    elif isinstance(value, tuple) and 1 <= len(value) <= 3:
        t = tuple(value) + (1,) * (3 - len(value))
    else:
        raise ArgumentTypeError(f"{what} must be an int, a tuple of up to 3 ints or cb.{what}, got {value!r}",
                                kernel_name)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in t):
        raise ArgumentValueError(f"{what} must hold positive ints, got {t}", kernel_name)
    return t


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

