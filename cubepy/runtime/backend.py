"""The contract every backend implements (what a backend must and may provide).

A backend is a module in ``cubepy.backends`` exposing ``BACKEND``, an object with:

must:
- ``name: str``
- ``probe(**options) -> DeviceProperties``: the device's real properties; raise
  BackendUnavailableError (one clear line) if the vendor library or driver is missing.
- ``compile(kernel: ir.Kernel, properties) -> object``: a compiled executable for one
  specialization (the runtime caches it in memory by specialization key).
- ``launch(executable, kernel, cube_count, cube_dim, args, properties, options) -> None``:
  ``args`` follow ``kernel.params``: for a global Buffer a host NumPy array (C-contiguous; a Line
  buffer of width w arrives with a trailing axis of w), for a ScalarParam a NumPy scalar.
  A checked kernel that indexed out of bounds raises OutOfBoundsError (asynchronous backends:
  at the next synchronize).
may:
- ``device_array_platforms: frozenset[str]``: the platforms of `DeviceArray` arguments it uses in
  place (e.g. ``{"cuda"}``); the runtime refuses device arrays of other platforms (default: none).
  Such arguments arrive as `cubepy.runtime.device_arrays.DeviceArray` (pointer, shape, dtype).
  A backend may `register_device_array` its own array type for a fast, vendor-aware describer.
- ``synchronize(properties)``: wait for queued work and raise deferred errors (default: nothing).
- ``source(kernel, properties, form) -> str``: generated code, for ``kernel.source``.
- ``direct_launcher(executable, kernel, properties, cube_count, cube_dim, options)
  -> DirectLauncher | None``: an entry for warm launches whose array arguments are all device
  arrays with a raw reader (see `DirectLauncher`); None where the backend cannot offer one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..ir.nodes import Kernel
from .properties import DeviceProperties


class Backend(Protocol):
    name: str

    def probe(self, **options: Any) -> DeviceProperties: ...

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Any: ...

    def launch(self, executable: Any, kernel: Kernel, cube_count: tuple[int, int, int],
               cube_dim: tuple[int, int, int], args: list, properties: DeviceProperties,
               options: dict) -> None: ...


@dataclass(frozen=True)
class DirectLauncher:
    """A backend's launch entry for the generated warm path, for one executable and launch shape.

    ``submit(*values)`` enqueues the kernel with one value per slot, in order, and returns False,
    enqueuing nothing, if a value does not fit its slot (the launch then takes the full path).
    Each slot is ``("pointer", param, alignment)`` (a device address), ``("extent", param, axis)``
    (an int: the extent of that axis of the array as the kernel sees it, so a Line array's last
    axis counts Lines) or ``("scalar", param)``; ``param`` indexes ``kernel.params``.
    """

    slots: tuple[tuple, ...]
    submit: Callable[..., bool]
