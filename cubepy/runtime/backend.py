"""The contract every backend implements: subclass `Backend`, override each *must*.

A backend is found through the registry (`cubepy.runtime.registry`): an entry point in the
``cubepy.backends`` group naming a module whose ``BACKEND`` is an instance of a `Backend`
subclass (the built-ins are registered the same way, in cubepy's ``pyproject.toml``). Nothing
outside the backend reads its name to decide anything: what differs between backends is what
they declare here. Every registered backend passes ``tests/backends/test_contract.py``.

must:
- `name`; `probe` (the device's real properties, or BackendUnavailableError in one line);
  `compile` (an executable for one specialization; the runtime caches it per specialization);
  `launch` (run it; a checked kernel that indexed out of bounds raises OutOfBoundsError, an
  asynchronous backend at the next `synchronize`).

may (the defaults describe a backend whose launches run to completion on host memory):
- declarations: `preference`, `default_candidate`, `host_memory`, `takes_streams`,
  `device_array_platforms`, `disk_cached`, `source_forms`, `runtime_cube_dim` (with
  `prefers_shape_generic`, `accepts_shape_generic`, `units_limit` and `units_bound`);
- devices: `device_count`, `device_index`;
- work: `synchronize`, `event` (with `interval`), `use_stream` (with `direct_stream`), `source`, `direct_launcher`,
  `xla_ffi_handler`;
- reuse across processes: `snapshot` and `restore` (`cubepy.runtime.trace_index`: a later
  process skips the trace and the code generation of a specialization it finds there);
- memory (for `cb.preload`, `cb.from_dlpack`, `Resident.to_host`): `to_device`, `to_host`,
  `from_dlpack`.

A backend module must be cheap to import (the registry imports every one to order them): its
vendor library, compilers and code generator load in ``probe`` or ``compile``.

Backends with device memory of their own build on `cubepy.runtime.device_host.DeviceBackend`,
which writes the argument walk, the transfers and the transfer ledger, and the error records once.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ArgumentTypeError, ArgumentValueError
from ..ir.nodes import Kernel
from ..ir.types import RUNTIME_CUBE_UNITS
from .events import Event, EventInterval, HostEvent, HostInterval, Interval
from .profiling import LaunchTally
from .properties import DeviceProperties

MUST = ("probe", "compile", "launch")


class Backend:
    """Base class of every backend. Override the *must* methods; the *may* members have defaults."""

    # --- must ---------------------------------------------------------------------------------

    name: ClassVar[str] = ""
    """The registry name: ``cb.device(name)``."""

    def probe(self, **options: Any) -> DeviceProperties:
        """The device's real properties for these options (``index``, ``plane_dim``, ...); raise
        BackendUnavailableError (one clear line) if the vendor library or driver is missing, and
        ArgumentValueError for an option value the device cannot take."""
        raise NotImplementedError

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Any:
        """A compiled executable of one specialization (`kernel` is the IR after the pipeline)."""
        raise NotImplementedError

    def launch(self, executable: Any, kernel: Kernel, cube_count: tuple[int, int, int],
               cube_dim: tuple[int, int, int], args: list, properties: DeviceProperties, options: dict) -> None:
        """Run ``executable``. ``args`` follow ``kernel.params``: for a global Buffer a host NumPy
        array (C-contiguous; a Line buffer of width w with a trailing axis of w) or a `DeviceArray`
        of one of `device_array_platforms`, for a ScalarParam a NumPy scalar. ``options`` holds
        ``stream`` where the launch names one (only if `takes_streams`)."""
        raise NotImplementedError

    # --- may: what the backend is ---------------------------------------------------------------

    preference: ClassVar[int] = 50
    """Order in `cb.devices()` and for the default device: lower first (GPUs before the CPU)."""

    host_memory: ClassVar[bool] = True
    """Kernels work on host memory: `cb.preload` keeps a NumPy copy and launches read NumPy arrays
    in place. False for a backend with device memory of its own."""

    takes_streams: ClassVar[bool] = False
    """Launches accept ``stream=`` and `use_stream` works."""

    finishes_launches: ClassVar[bool] = False
    """Every launch has finished when `launch` returns (nothing is queued): the default
    `interval` reads the host clock twice, with no events."""

    device_array_platforms: ClassVar[frozenset[str]] = frozenset()
    """Platforms of `DeviceArray` arguments used in place (e.g. ``{"cuda"}``); device arrays of
    other platforms are refused. A backend may `register_device_array` its own array type."""

    default_candidate: ClassVar[bool] = True
    """May be the default device (`cb.device()` without a name). A backend not yet trusted on every
    device it finds says False: it runs only where a user names it, and is never probed unasked."""

    disk_cached: ClassVar[bool] = False
    """Compiled code goes to the disk cache (`cubepy.runtime.disk_cache`), so a compile in another
    process (the autotuner's workers) is a disk load here."""

    source_forms: ClassVar[tuple[str, ...]] = ("source",)
    """The forms `source` takes, besides "ir"."""

    runtime_cube_dim: ClassVar[bool] = False
    """Compiles kernels traced with ``cube_dim`` None (their cube extents are ``builtin`` ops read at
    run time), and launches such an executable with any CubeDim of at most `RUNTIME_CUBE_UNITS`
    units (`units_limit`): the CubeDims a kernel does not specialize on share one compile
    (`cubepy.runtime.shapes`)."""

    def prefers_shape_generic(self, properties: DeviceProperties) -> bool:
        """Whether CubeDims share shape-generic code on this device unless a user says otherwise
        (``cb.device(name, shape_generic=...)``): False where it costs more than it saves."""
        return True

    def accepts_shape_generic(self, kernel: Kernel, properties: DeviceProperties) -> bool:
        """Whether this shape-generic ``kernel`` (``cube_dim`` None) compiles for every CubeDim here;
        False compiles it per CubeDim (e.g. plane ops on sub-groups whose size depends on it)."""
        return True

    def units_limit(self, executable: Any) -> int:
        """The most units per cube a shape-generic ``executable`` launches with."""
        return RUNTIME_CUBE_UNITS

    def units_bound(self, units: int) -> int:
        """The units per cube the shape-generic executable that a CubeDim of ``units`` units shares
        is compiled for (`Kernel.units_bound`): CubeDims of one bound share one executable."""
        return RUNTIME_CUBE_UNITS

    # --- may: devices -----------------------------------------------------------------------------

    def device_count(self) -> int:
        """How many devices of this backend the process sees (``name:1`` is the second)."""
        return 1

    def device_index(self, properties: DeviceProperties) -> int | None:
        """Which device of its platform this is; device arrays of another index are refused."""
        return None

    def accepts_platform(self, platform: str) -> bool:
        """Whether memory of ``platform`` (a DLPack or framework device: "cuda", ...) is this
        backend's device memory: `cubepy.torch`, `cubepy.jax` and `cb.from_dlpack` launch on the
        first such backend."""
        return platform in self.device_array_platforms

    # --- may: work --------------------------------------------------------------------------------

    def synchronize(self, properties: DeviceProperties | None) -> None:
        """Wait for queued work and raise the errors it recorded."""

    def event(self, properties: DeviceProperties) -> Event:
        """An event on the device's clock; the default reads the host clock after `synchronize`."""
        return HostEvent(lambda: self.synchronize(properties))

    def interval(self, properties: DeviceProperties) -> Interval:
        """A timed interval starting now (``cb.profile()`` puts one around each launch that has no
        `launch_tally`); the default records two `event`s, or reads the host clock where
        `finishes_launches`."""
        if self.finishes_launches:
            return HostInterval()
        return EventInterval(lambda: self.event(properties))

    def launch_tally(self, properties: DeviceProperties, executable: Any, kernel_name: str) -> LaunchTally | None:
        """A counter of ``executable``'s profiled launches whose device times the backend reads
        when a profile ends (`cubepy.runtime.profiling.LaunchTally`): a profiled launch then only
        adds one to it, with no interval around it. Asked for while a profile is active; None (the
        default): intervals."""
        return None

    def use_stream(self, stream: Any, properties: DeviceProperties) -> AbstractContextManager:
        """A context in which launches (the warm path too) go on ``stream``."""
        raise ArgumentValueError(f"device '{self.name}' runs each launch to completion and takes no stream")

    def direct_stream(self, stream: Any, properties: DeviceProperties) -> AbstractContextManager | None:
        """A cheaper context than `use_stream` for a launch through a `DirectLauncher` on
        ``stream`` (``stream=`` of a warm launch): it only has to send that launch there, not other
        work (no copies go through a direct launch). None: `use_stream`."""
        return None

    def source(self, kernel: Kernel, executable: Any, properties: DeviceProperties, form: str) -> str | None:
        """The generated code in ``form`` (one of `source_forms`); None: the IR is the source."""
        return None

    def snapshot(self, executable: Any, properties: DeviceProperties) -> bytes | None:
        """What `restore` needs to rebuild ``executable`` in another process without generating its
        code again (the CPU backend: the disk-cache key of its object code, the toolchain and the
        launch layout; CUDA and OpenCL: the rendered source). None (the default): this backend's
        executables are not restored."""
        return None

    def restore(self, kernel: Kernel, properties: DeviceProperties, snapshot: bytes) -> Any:
        """The executable ``snapshot`` describes, for ``kernel`` (the IR it was compiled from), or
        None where that can no longer be (its code left the disk cache, the toolchain changed)."""
        return None

    def direct_launcher(self, executable: Any, kernel: Kernel, properties: DeviceProperties,
                        cube_count: tuple, cube_dim: tuple, options: dict) -> DirectLauncher | None:
        """An entry for warm launches whose arrays are all device arrays with a raw reader (see
        `DirectLauncher`); None where the backend offers none."""
        return None

    def xla_ffi_handler(self, executable: Any, kernel: Kernel, properties: DeviceProperties, cube_count: tuple,
                        cube_dim: tuple, sources: dict, ranks: dict, zeroed: list) -> Any:
        """A native XLA FFI handler for `cubepy.jax`, or None (the Python handler is used)."""
        return None

    # --- may: memory ------------------------------------------------------------------------------

    def to_device(self, array: np.ndarray, properties: DeviceProperties) -> Any:
        """A copy of C-contiguous ``array`` in this device's memory (for `cb.preload`)."""
        return array.copy()

    def to_host(self, data: Any, out: np.ndarray | None, properties: DeviceProperties) -> np.ndarray:
        """``data`` (from `to_device` or `from_dlpack`) as a NumPy array, written into ``out`` if given."""
        if out is None:
            return np.array(data)
        np.copyto(out, data)
        return out

    def from_dlpack(self, obj: Any, properties: DeviceProperties) -> Any:
        """This backend's array on the memory of a DLPack producer (for `cb.from_dlpack`)."""
        raise ArgumentTypeError(f"cb.from_dlpack: device '{self.name}' cannot adopt memory of another library")


def contract_violations(backend: Any, name: str) -> list[str]:
    """What keeps ``backend`` (registered as ``name``) from meeting the contract; empty if nothing."""
    if not isinstance(backend, Backend):
        return [f"BACKEND is a {type(backend).__name__}, not an instance of cubepy.runtime.backend.Backend"]
    problems = []
    if backend.name != name:
        problems.append(f"its name is {backend.name!r}, but it is registered as {name!r}")
    for member in MUST:
        if getattr(type(backend), member) is getattr(Backend, member):
            problems.append(f"it does not override the required method '{member}'")
    if not isinstance(backend.device_array_platforms, frozenset):
        problems.append("device_array_platforms is not a frozenset")
    if not backend.source_forms or "ir" in backend.source_forms:
        problems.append(f"source_forms must name its own forms, not 'ir': {backend.source_forms!r}")
    if not backend.host_memory and type(backend).to_device is Backend.to_device:
        problems.append("a backend with device memory must override to_device and to_host")
    if backend.takes_streams and type(backend).use_stream is Backend.use_stream:
        problems.append("takes_streams is set but use_stream is not overridden")
    return problems


@dataclass(frozen=True)
class DirectLauncher:
    """A backend's launch entry for the generated warm path, for one executable and launch shape.

    ``submit(*values)`` enqueues the kernel with one value per slot, in order, and returns False,
    enqueuing nothing, if a value does not fit its slot (the launch then takes the full path).
    Each slot is ``("pointer", param, alignment)`` (a device address), ``("owner", param, None)``
    (the device array object itself, for a backend that launches with its buffer object rather than
    an address), ``("extent", param, axis)``
    (an int: the extent of that axis of the array as the kernel sees it, so a Line array's last
    axis counts Lines), ``("scalar", param)``, ``("inline", param, nbytes)`` (the bytes of a host
    array the kernel takes by value, at most ``nbytes``) or ``("launch_ok", None, None)`` (an int:
    the answer to the kernel's launch test, `cubepy.runtime.launch_checks`, which the warm path
    computes); ``param`` indexes ``kernel.params``.
    """

    slots: tuple[tuple, ...]
    submit: Callable[..., bool]
