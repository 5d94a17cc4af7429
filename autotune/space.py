"""The search space: cube shapes from the device's real maxima times tuned Comptime values, Line
widths and ``fastmath`` modes, with the neighbourhood that the pattern search walks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import product
from typing import Any

from cubepy.runtime.properties import DeviceProperties

FASTMATH_MODES = (None, "algebraic")
MOST_CONFIGS = 2_000_000       # a space is enumerated once; larger ones are a mistake (or need a `valid` filter)


@dataclass(frozen=True)
class Config:
    """One candidate: the units per cube, the values of tuned Comptime parameters, the Line width
    of tuned array parameters and the kernel's ``fastmath`` mode."""

    dim: tuple[int, int, int]
    comptime: tuple[tuple[str, Any], ...] = ()
    lines: tuple[tuple[str, int], ...] = ()
    fastmath: str | None = None

    @property
    def label(self) -> str:
        """A stable text form, the config's key in the caches: ``dim=256x1x1 unroll=4 lines:x=4``."""
        parts = [f"dim={'x'.join(map(str, self.dim))}"] + [f"{k}={v!r}" for k, v in self.comptime]
        parts += [f"lines:{k}={w}" for k, w in self.lines]
        if self.fastmath is not None:
            parts.append(f"fastmath={self.fastmath}")
        return " ".join(parts)

    def to_json(self) -> dict:
        """The config as JSON-ready data (what shipped config files hold)."""
        out: dict[str, Any] = {"dim": list(self.dim)}
        if self.comptime:
            out["comptime"] = dict(self.comptime)
            try:
                json.dumps(out["comptime"])
            except TypeError:
                raise TypeError(f"config {self.label}: Comptime values must be numbers, strings or booleans to "
                                "be written to a config file") from None
        if self.lines:
            out["lines"] = dict(self.lines)
        if self.fastmath is not None:
            out["fastmath"] = self.fastmath
        return out

    @classmethod
    def from_json(cls, data: dict) -> Config:
        return cls(_dim3(data["dim"]), tuple(sorted(data.get("comptime", {}).items())),
                   tuple(sorted((k, int(w)) for k, w in data.get("lines", {}).items())), data.get("fastmath"))


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


def shapes(props: DeviceProperties, units: list[int] | None = None, most: int = 1024) -> list[tuple[int, int, int]]:
    """2-D and 3-D cube shapes of power-of-two extents whose unit count is in ``units`` (default:
    the sizes of `default_dims`) and that fit the device: for kernels over 2-D or 3-D data."""
    units = units or [d[0] for d in default_dims(props, most)]
    out = []
    for total in units:
        for y in _powers(total):
            for z in _powers(total // y):
                dim = (total // (y * z), y, z)
                if fits(dim, props):
                    out.append(dim)
    return out


def fits(dim: tuple[int, int, int], props: DeviceProperties) -> bool:
    """Whether a cube of ``dim`` units is within the device's limits."""
    x, y, z = dim
    mx, my, mz = props.max_cube_dim
    return 0 < x <= mx and 0 < y <= my and 0 < z <= mz and x * y * z <= props.max_units_per_cube


def configs(props: DeviceProperties, dims, comptime: dict[str, list] | None) -> list[Config]:
    """Every combination of the given (or default) cube sizes that fit and tuned Comptime values."""
    return list(Space(props, dims, comptime).configs)


class Space:
    """The candidates of one tuning: ``dims`` (default `default_dims`) that fit the device, times
    every combination of ``comptime`` values, ``lines`` widths (per parameter name, or per tuple of
    names that share one width) and ``fastmath`` modes, kept where ``valid(config)`` is true.

    The first value of every axis is the default config (the reference of verification), unless
    ``default`` names another one.

    Example::

        space = Space(dev.properties, dims=[64, 128, 256], comptime={"unroll": [1, 2, 4]},
                      lines={("x", "y"): [1, 4]}, fastmath=[None, "algebraic"])
        len(space)             # 3 * 3 * 2 * 2 = 36
    """

    def __init__(self, props: DeviceProperties, dims=None, comptime: dict[str, list] | None = None,
                 lines: dict | None = None, fastmath: list | None = None, valid=None, default=None,
                 kernel_name: str | None = None):
        self.props, self.kernel_name = props, kernel_name or "?"
        given = default_dims(props) if dims is None else [_dim3(d) for d in dims]
        self.dims = [d for d in dict.fromkeys(given) if fits(d, props)]
        if not self.dims:
            raise ValueError(self._say(f"no cube size fits device '{props.name}': tried {_dims_text(given)}, the "
                                       f"device takes at most {props.max_units_per_cube} units per cube and "
                                       f"{'x'.join(map(str, props.max_cube_dim))} per axis; give smaller dims"))
        self.comptime = {name: list(values) for name, values in sorted((comptime or {}).items())}
        self.lines = {(k,) if isinstance(k, str) else tuple(k): [int(w) for w in ws] for k, ws in (lines or {}).items()}
        self.fastmath = [None] if fastmath is None else list(fastmath)
        for name, values in [*self.comptime.items(), *(("lines " + "/".join(k), v) for k, v in self.lines.items()),
                             ("fastmath", self.fastmath)]:
            if not values:
                raise ValueError(self._say(f"the values of {name!r} are an empty list: give at least one"))
        for mode in self.fastmath:
            if mode not in FASTMATH_MODES:
                raise ValueError(self._say(f"fastmath value {mode!r} is not a mode: use None or 'algebraic'"))
        self.valid = valid
        # Axes of the neighbourhood: the three extents of the cube (over the values that occur), then
        # one per Comptime parameter, per Line group and fastmath, in value order as listed.
        self.extents = [sorted({d[i] for d in self.dims}) for i in range(3)]
        self.axes = [*self.comptime.values(), *self.lines.values(), self.fastmath]
        self.configs = self._enumerate()
        self.index = {c: i for i, c in enumerate(self.configs)}
        self._coords = {self.coords(c): c for c in self.configs}
        self.default = self._default(default)

    def __len__(self) -> int:
        return len(self.configs)

    def __contains__(self, config: Config) -> bool:
        return config in self.index

    @property
    def digest_text(self) -> str:
        """A text naming exactly this set of candidates (for the cache of choices)."""
        return f"{len(self.configs)}:{self.configs[0].label}:{self.configs[-1].label}:" + ",".join(
            f"{k}={v!r}" for k, v in [("dims", self.dims), ("comptime", self.comptime), ("lines", self.lines),
                                      ("fastmath", self.fastmath), ("default", self.default.label)])

    def make(self, dim, values: tuple) -> Config:
        """The config of a cube shape and one value per non-dim axis (in `axes` order)."""
        names = list(self.comptime)
        comptime = tuple(zip(names, values[:len(names)]))
        widths = values[len(names):len(names) + len(self.lines)]
        lines = tuple(sorted((name, w) for group, w in zip(self.lines, widths) for name in group))
        return Config(dim, comptime, lines, values[-1])

    def values(self, config: Config) -> tuple:
        """One value per non-dim axis, as `make` takes them."""
        lines = dict(config.lines)
        return (*(v for _, v in config.comptime), *(lines[group[0]] for group in self.lines), config.fastmath)

    def coords(self, config: Config) -> tuple[int, ...]:
        """The config's position: the rank of each cube extent, then each axis value's index."""
        ranks = tuple(self.extents[i].index(config.dim[i]) for i in range(3))
        return ranks + tuple(axis.index(v) for axis, v in zip(self.axes, self.values(config)))

    def at(self, coords: tuple[int, ...]) -> Config | None:
        """The valid config at these coordinates, if there is one."""
        return self._coords.get(coords)

    def neighbours(self, config: Config, step: int = 1) -> list[Config]:
        """Valid configs one ``step`` away along one axis, and cube shapes of the same axis moves
        combined (one extent up, another down: the same units in another shape)."""
        here = self.coords(config)
        out = []
        for i in range(len(here)):
            for delta in (-step, step):
                moved = list(here)
                moved[i] += delta
                found = self._coords.get(tuple(moved))
                if found is not None:
                    out.append(found)
        for i in range(3):
            for j in range(3):
                if i != j:
                    moved = list(here)
                    moved[i] += step
                    moved[j] -= step
                    found = self._coords.get(tuple(moved))
                    if found is not None:
                        out.append(found)
        return list(dict.fromkeys(out))

    def lines_through(self, config: Config) -> list[Config]:
        """Valid configs that differ from ``config`` on one axis only (any value of it), and the
        reshaped cubes of `neighbours`: what one move of the pattern search can reach."""
        here = self.coords(config)
        sizes = [len(e) for e in self.extents] + [len(a) for a in self.axes]
        out = []
        for i, size in enumerate(sizes):
            moved = list(here)
            for value in range(size):
                if value != here[i]:
                    moved[i] = value
                    found = self._coords.get(tuple(moved))
                    if found is not None:
                        out.append(found)
        return list(dict.fromkeys(out + self.neighbours(config)))

    # --- building -----------------------------------------------------------------------------

    def _enumerate(self) -> list[Config]:
        total = len(self.dims)
        for axis in self.axes:
            total *= len(axis)
        if total > MOST_CONFIGS:
            raise ValueError(self._say(f"the space has {total:,} configs, more than {MOST_CONFIGS:,}: list fewer "
                                       "values per axis"))
        out, rejected = [], None
        for dim, values in product(self.dims, product(*self.axes)):
            config = self.make(dim, values)
            if self.valid is not None:
                try:
                    keep = self.valid(config)
                except Exception as e:          # the user's constraint failed: say on which config
                    raise type(e)(self._say(f"valid({config.label}) raised {type(e).__name__}: {e}")) from e
                if not keep:
                    rejected = rejected or config
                    continue
            out.append(config)
        if not out:
            raise ValueError(self._say(f"valid() rejects every one of the {total} configs (e.g. {rejected.label}); "
                                       "relax the constraint or list other values"))
        return out

    def _default(self, default) -> Config:
        if default is None:
            return self.configs[0]
        if isinstance(default, dict):
            given = dict(default)
            dim = _dim3(given.pop("dim", self.dims[0]))
            first = self.configs[0]
            comptime = tuple((k, given.pop(k, v)) for k, v in first.comptime)
            lines = tuple((k, int(given.pop(f"lines:{k}", w))) for k, w in first.lines)
            fastmath = given.pop("fastmath", first.fastmath)
            if given:
                raise ValueError(self._say(f"default= names {sorted(given)}, which are not axes of the space "
                                           f"(axes: dim, {', '.join(first.label.split()[1:]) or 'none'})"))
            default = Config(dim, comptime, lines, fastmath)
        if default not in self.index:
            raise ValueError(self._say(f"the default config {default.label} is not in the space (or does not fit "
                                       f"device '{self.props.name}'); give one of its configs"))
        return default

    def _say(self, text: str) -> str:
        return f"autotune '{self.kernel_name}': {text}"


def _powers(n: int) -> list[int]:
    out, p = [], 1
    while p <= n:
        if n % p == 0:
            out.append(p)
        p *= 2
    return out


def _dims_text(dims) -> str:
    return ", ".join("x".join(map(str, d)) for d in dims) or "none"


def _dim3(d) -> tuple[int, int, int]:
    if isinstance(d, int):
        return (d, 1, 1)
    d = tuple(int(v) for v in d)
    return d + (1,) * (3 - len(d))
