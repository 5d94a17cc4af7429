"""The search space of launch shapes, from the device's real maxima."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any

from cubepy.runtime.properties import DeviceProperties


@dataclass(frozen=True)
class Config:
    """One candidate: the units per cube and the values of tuned Comptime parameters."""

    dim: tuple[int, int, int]
    comptime: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """A stable text form, the config's key in the on-disk cache: ``dim=256x1x1 unroll=4``."""
        parts = [f"dim={'x'.join(map(str, self.dim))}"] + [f"{k}={v!r}" for k, v in self.comptime]
        return " ".join(parts)


def default_dims(props: DeviceProperties, most: int = 1024) -> list[tuple[int, int, int]]:
    """1-D cube sizes to try: the plane size times powers of two, from 64 units (or one plane, if
    larger) up to the device's maximum units per cube and x extent."""
    plane = max(1, props.plane_dim)
    top = min(props.max_units_per_cube, props.max_cube_dim[0], most)
    size = max(plane, 64 if plane < 64 else plane)
    out = []
    while size <= top:
        out.append((size, 1, 1))
        size *= 2
    return out or [(min(plane, top), 1, 1)]


def fits(dim: tuple[int, int, int], props: DeviceProperties) -> bool:
    """Whether a cube of ``dim`` units is within the device's limits."""
    x, y, z = dim
    mx, my, mz = props.max_cube_dim
    return 0 < x <= mx and 0 < y <= my and 0 < z <= mz and x * y * z <= props.max_units_per_cube


def configs(props: DeviceProperties, dims, comptime: dict[str, list] | None) -> list[Config]:
    """Every combination of the given (or default) cube sizes that fit and tuned Comptime values."""
    dims = default_dims(props) if dims is None else [_dim3(d) for d in dims]
    names = sorted(comptime or {})
    values = list(product(*((comptime or {})[n] for n in names)))
    return [Config(d, tuple(zip(names, v))) for d in dims if fits(d, props) for v in values]


def _dim3(d) -> tuple[int, int, int]:
    if isinstance(d, int):
        return (d, 1, 1)
    d = tuple(int(v) for v in d)
    return d + (1,) * (3 - len(d))
