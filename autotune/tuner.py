"""`autotune`: pick a kernel's launch shape (and tuned Comptime values) by measuring on the device."""

from __future__ import annotations

import inspect
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import cubepy as cb
from cubepy.errors import ArgumentTypeError, CubeError
from cubepy.lang.types import ArraySpec, ComptimeSpec, LinesArg, RegionSpec
from cubepy.log import logger
from cubepy.runtime.devices import Device, current_device
from cubepy.runtime.devices import device as get_device
from cubepy.runtime.fake_launches import skipped
from cubepy.runtime.graph_breaks import register_entry_point
from cubepy.runtime.kernel import KernelFunction

from .cache import TuningCache
from .space import Config, configs


class Tuned:
    """A kernel with its launch shape chosen by measurement. Call it like a launch:
    ``tuned(*args, device=None)``. See `autotune`."""

    def __init__(self, kernel: KernelFunction, grid: Callable, key: Callable | None, dims, comptime: dict | None,
                 reps: int, rounds: int):
        if not isinstance(kernel, KernelFunction):
            raise ArgumentTypeError(f"cb.autotune takes a @cb.kernel, got {type(kernel).__name__}")
        names = kernel.signature.names
        for name in comptime or {}:
            index = names.index(name) if name in names else -1
            if index < 0 or not isinstance(kernel.signature.annotations[index], ComptimeSpec):
                raise ArgumentTypeError(f"autotune: '{name}' is not a Comptime parameter of the kernel",
                                        kernel.__name__)
        self.kernel, self.grid, self.key_of = kernel, grid, key or self._default_key
        self._grid_takes_comptime = len(inspect.signature(grid).parameters) >= 3
        sig = kernel.signature
        self._kinds = tuple(("tuned" if n in (comptime or {}) else "comptime") if isinstance(a, ComptimeSpec) else
                            "array" if isinstance(a, (ArraySpec, RegionSpec)) else "scalar"
                            for n, a in zip(sig.names, sig.annotations))
        self.dims, self.comptime, self.reps, self.rounds = dims, dict(comptime or {}), reps, rounds
        self._best: dict[tuple, Config] = {}
        self._chosen: dict[tuple, Config] = {}     # (device, key of the arguments) -> config, for repeat calls
        self.measured = 0          # configs measured by this object (cache hits measure none)

    # --- public -----------------------------------------------------------------------------

    def __call__(self, *args, device: Device | str | None = None) -> None:
        if skipped():               # fake tensors (a derived fake implementation): nothing to tune or run
            return
        dev = self._device(device)
        key = (id(dev), self.key_of(args))
        try:
            config = self._chosen.get(key)
        except TypeError:           # a user key that is not hashable: the text form below
            key, config = None, None
        if config is None:
            config = self.best(*args, device=dev)
            if key is not None:
                self._chosen[key] = config
        self._launch(config, args, dev)

    def best(self, *args, device: Device | str | None = None) -> Config:
        """The fastest config for these arguments' key on the device: from memory, from the on-disk
        cache, or measured now (on copies of the arguments the kernel writes)."""
        dev = self._device(device)
        key = (id(dev), self._key_text(args))
        found = self._best.get(key)
        if found is None:
            found = self._best[key] = self._tune(args, dev, key[1])
        return found

    # --- tuning -----------------------------------------------------------------------------

    def _tune(self, args: tuple, dev: Device, key: str) -> Config:
        candidates = configs(dev.properties, self.dims, self.comptime)
        if not candidates:
            raise ArgumentTypeError(f"autotune: no cube size fits device '{dev.name}'", self.kernel.__name__)
        cache = TuningCache(self.kernel.__name__, self.kernel.source_digest, _device_key(dev))
        times, fresh, failure = {}, {}, None
        for config in candidates:
            ms = cache.get(key, config.label)
            if ms is None:
                try:
                    ms = self._measure(config, args, dev)
                except CubeError as e:      # a config the kernel or device cannot take
                    ms, failure = float("inf"), e
                fresh[(key, config.label)] = ms
                self.measured += 1
            times[config] = ms
        if fresh:
            cache.put(fresh)
        best = min(candidates, key=lambda c: times[c])
        logger.info("autotune '%s' on %s, key %s: %s at %.4f ms (%d of %d configs measured now, the rest cached)",
                    self.kernel.__name__, dev.name, key, best.label, times[best], len(fresh), len(candidates))
        if times[best] == float("inf"):      # every config failed: raise why (again, if it was cached)
            if failure is None:
                self._measure(best, args, dev)
            raise failure if failure is not None else ArgumentTypeError("autotune: every config failed",
                                                                         self.kernel.__name__)
        return best

    def _measure(self, config: Config, args: tuple, dev: Device) -> float:
        scratch = self._scratch(args)
        count, dim, full, named = self._shape(config, scratch)
        launch = self.kernel.compile(*full, dim=dim, device=dev, **named)[count]     # compiles; not timed
        launch(*full, **named)
        dev.synchronize()
        samples = []
        for _ in range(self.rounds):
            start, stop = dev.event(), dev.event()
            start.record()
            for _ in range(self.reps):
                launch(*full, **named)
            stop.record()
            samples.append(stop.elapsed_ms(start) / self.reps)
        return statistics.median(samples)

    def _launch(self, config: Config, args: tuple, dev: Device) -> None:
        count, dim, full, named = self._shape(config, args)
        self.kernel[count, dim](*full, device=dev, **named)

    def _shape(self, config: Config, args: tuple) -> tuple:
        """``(count, dim, positional arguments, named arguments)`` of a launch of ``config``."""
        chosen = dict(config.comptime)
        count = self.grid(args, config.dim, chosen) if self._grid_takes_comptime else self.grid(args, config.dim)
        # Tuned Comptime values go after the caller's arguments, by position where they follow them
        # directly, so that the kernel's launcher (and its warm path) serves repeated launches.
        names, full = self.kernel.signature.names, list(args)
        while len(full) < len(names) and names[len(full)] in chosen:
            full.append(chosen.pop(names[len(full)]))
        dim = config.dim[0] if config.dim[1:] == (1, 1) else config.dim
        return count, dim, tuple(full), chosen

    def _scratch(self, args: tuple) -> tuple:
        """The arguments with every one the kernel writes replaced by a copy."""
        sig = self.kernel.signature
        out = list(args)
        for i, (name, ann) in enumerate(zip(sig.names, sig.annotations)):
            if i < len(args) and (isinstance(ann, RegionSpec) or isinstance(ann, ArraySpec) and ann.mutable):
                out[i] = _copy(args[i], name, self.kernel.__name__)
        return tuple(out)

    # --- keys -------------------------------------------------------------------------------

    def _key_text(self, args: tuple) -> str:
        """The key as text (what the disk cache stores): shapes as ints, dtypes by name."""
        key = self.key_of(args)
        if self.key_of == self._default_key:
            key = tuple((tuple(int(s) for s in k[0]), str(k[1]).rpartition(".")[2], k[2]) if isinstance(k, tuple)
                        and len(k) == 3 else k for k in key)
        return repr(key)

    def _default_key(self, args: tuple) -> tuple:
        """Shapes and dtypes of the arrays (the objects themselves: cheap to build and to hash on
        every call; `_key_text` spells them out), types of the scalars, untuned Comptime values."""
        out = []
        for arg, kind in zip(args, self._kinds):
            if kind == "comptime":
                out.append(arg)
            elif kind == "tuned":
                out.append(None)
            elif kind == "array":
                if arg.__class__ is LinesArg:
                    out.append((arg.array.shape, _dtype(arg.array), arg.width))
                else:
                    out.append((arg.shape, _dtype(arg), 1))
            else:
                out.append(arg.__class__.__name__)
        return tuple(out)

    def _device(self, device) -> Device:
        if device is None:
            return current_device()
        return get_device(device) if isinstance(device, str) else device


register_entry_point(Tuned, "__call__")


def autotune(kernel: KernelFunction, grid: Callable, *, key: Callable | None = None, dims=None,
             comptime: dict[str, list] | None = None, reps: int = 10, rounds: int = 3) -> Tuned:
    """Tune ``kernel``'s launch shape on the device it runs on.

    ``grid(args, dim)`` (or ``grid(args, dim, comptime)``) gives the cube count for a cube of
    ``dim`` units. Candidates: ``dims`` (default: the device's plane size times powers of two, from
    64 units up to its maximum units per cube) times every combination of ``comptime`` values
    (Comptime parameters passed by name). The first call for a ``key(args)`` (default: array
    shapes and dtypes, scalar types, untuned Comptime values) measures each candidate not in the
    on-disk cache on copies of the arguments the kernel writes, with the device's events (median
    of ``rounds`` batches of ``reps`` launches); later calls launch the fastest directly.

    Example::

        from cubepy.autotune import autotune

        tuned = autotune(saxpy, grid=lambda args, dim: (len(args[0]) + dim[0] - 1) // dim[0])
        tuned(x, y, 2.0)              # measured once per array size and device, then cached
    """
    return Tuned(kernel, grid, key, dims, comptime, reps, rounds)


def _device_key(dev: Device) -> str:
    p = dev.properties
    return f"{p.backend}|{p.name}|plane={p.plane_dim}|cubepy={cb.__version__}"


def _dtype(a) -> Any:
    """The element type (a NumPy, CuPy, JAX or torch dtype; its text names it alike in all of them)."""
    dtype = getattr(a, "dtype", None)
    return dtype if dtype is not None else np.asarray(a).dtype


def _copy(value, name: str, kernel_name: str):
    if isinstance(value, LinesArg):
        return LinesArg(_copy(value.array, name, kernel_name), value.width)
    for method in ("copy", "clone"):
        make = getattr(value, method, None)
        if callable(make):
            return make()
    raise ArgumentTypeError(f"autotune measures on a copy of '{name}', which the kernel writes, but a "
                            f"{type(value).__name__} has no copy() or clone()", kernel_name)
