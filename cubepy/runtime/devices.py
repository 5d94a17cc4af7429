"""Devices: discovery, selection and the default device."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .. import settings
from ..errors import ArgumentValueError, BackendUnavailableError
from .backend import Backend
from .events import Event
from .profiling import ACTIVE as PROFILES
from .profiling import record
from .properties import DeviceProperties
from .registry import backend_for_platform, backend_names, load_backend


@dataclass(eq=False)
class Device:
    """A device of one backend with its properties. ``available`` is False (and ``reason`` says
    why, in one line) when the backend's vendor library or driver is missing.

    Example::

        >>> dev = cb.device("interp", plane_dim=64)
        >>> dev.properties.plane_dim
        64
    """

    backend_name: str
    options: dict = field(default_factory=dict)
    properties: DeviceProperties | None = None
    backend: Backend | None = None
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.properties is not None

    @property
    def name(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.backend_name}({opts})" if opts else self.backend_name

    @property
    def index(self) -> int | None:
        """Which device of its platform this is (the GPU's index), where the backend says."""
        return self.backend.device_index(self.properties) if self.available else None

    @property
    def host_memory(self) -> bool:
        """Whether kernels of this device work on host memory (``cpu``, ``interp``): its arrays are
        NumPy arrays, and ``cb.preload`` keeps a host copy."""
        return self.available and self.backend.host_memory

    def key(self) -> tuple:
        return (self.backend_name, tuple(sorted(self.options.items())), self.properties)

    def require(self) -> None:
        if not self.available:
            raise BackendUnavailableError(f"device '{self.name}' is not available: {self.reason}")

    def synchronize(self) -> None:
        """Wait for this device's queued work; raise errors it recorded (e.g. out of bounds)."""
        self.require()
        if PROFILES:
            record("synchronize", syncs=1)
        self._wait()

    def _wait(self) -> None:
        self.backend.synchronize(self.properties)

    def stream(self, stream: Any) -> AbstractContextManager:
        """``with dev.stream(s):`` launches on this device go on stream ``s`` (the warm path
        included): on ``cuda`` a ``cupy.cuda.Stream``, a ``torch.cuda.Stream``, an object with
        ``__cuda_stream__`` or a raw handle. ``None`` leaves the current stream."""
        self.require()
        if stream is None:
            return nullcontext()
        if not self.backend.takes_streams:
            raise ArgumentValueError(f"device '{self.name}' runs each launch to completion and takes no stream")
        return self.backend.use_stream(stream, self.properties)

    def event(self) -> Event:
        """An event for timing work on this device (see `cubepy.runtime.events`)."""
        self.require()
        return self.backend.event(self.properties)

    def __repr__(self) -> str:
        if not self.available:
            return f"<Device {self.name}: unavailable: {self.reason}>"
        return f"<Device {self.properties.describe()}>"


_devices: dict[tuple, Device] = {}
_current: Device | None = None
# options of the runtime, not the backend's probe: read from `Device.options`
RUNTIME_OPTIONS = ("shape_generic",)
_scoped: ContextVar[Device | None] = ContextVar("cubepy_device", default=None)


def device(name: str | None = None, **options: Any) -> Device:
    """The device of backend ``name`` (one of `cb.backend_names()`: ``"cpu"``, ``"cuda"``, ...;
    ``"cuda:1"`` is the second GPU) with backend options such as ``plane_dim``, and the runtime's
    own: ``shape_generic=False`` compiles every CubeDim on its own, ``True`` shares code between
    them where the backend can (default: the backend's choice; `cubepy.runtime.shapes`). With no
    name: the default device.

    Raises BackendUnavailableError (one clear line) when that backend cannot run here.
    """
    if name is None:
        return current_device()
    if ":" in name:
        name, _, rest = name.partition(":")
        if rest:
            options.setdefault("index", int(rest))
    # The option's type is part of the key: True == 1 must not find the device of plane_dim=1.
    key = (name, tuple(sorted((k, type(v).__name__, v) for k, v in options.items())))
    cached = _devices.get(key)
    if cached is None:
        cached = _probe(name, options)      # an unknown name: ArgumentValueError, naming the known ones
        _devices[key] = cached
    cached.require()
    return cached


def _probe(name: str, options: dict) -> Device:
    try:
        backend = load_backend(name)
        props = backend.probe(**{k: v for k, v in options.items() if k not in RUNTIME_OPTIONS})
        return Device(name, dict(options), props, backend)
    except BackendUnavailableError as e:
        return Device(name, dict(options), reason=e.message)
    except (ArgumentValueError, TypeError):
        raise
    except Exception as e:  # a driver failing in its own way is still one line, not a crash
        return Device(name, dict(options), reason=f"{type(e).__name__}: {e}".splitlines()[0])


class DeviceList(list):
    """The list `devices` returns: a list of `Device`, shown one device per line."""

    def __repr__(self) -> str:
        return "[\n" + "".join(f"  {d!r},\n" for d in self) + "]"

    __str__ = __repr__


def devices() -> DeviceList:
    """Every backend's devices (each GPU of a backend that has several: ``cuda``, ``cuda:1``, ...);
    unavailable backends appear once, with a one-line reason. ``print(cb.devices())`` shows one
    per line; ``cubepy devices`` prints a table."""
    out = DeviceList()
    for name in backend_names():
        key = (name, ())
        if key not in _devices:
            _devices[key] = _probe(name, {})
        first = _devices[key]
        out.append(first)
        for index in range(1, first.backend.device_count() if first.available else 1):
            out.append(device(name, index=index))
    return out


def set_device(dev: Device | str, **options: Any) -> Device:
    """Make ``dev`` the default device for launches without ``device=``."""
    global _current
    _current = dev if isinstance(dev, Device) else device(dev, **options)
    _current.require()
    return _current


@contextmanager
def use_device(dev: Device | str, **options: Any) -> Iterator[Device]:
    """``with cb.use_device("cpu"):`` launches without ``device=`` in this block (of this thread
    or task) go to ``dev``; the default outside is unchanged."""
    chosen = dev if isinstance(dev, Device) else device(dev, **options)
    chosen.require()
    token = _scoped.set(chosen)
    try:
        yield chosen
    finally:
        _scoped.reset(token)


def current_device() -> Device:
    """The default device: `use_device`'s in this block, else set_device's, else CUBEPY_DEVICE's,
    else the first available."""
    scoped = _scoped.get()
    if scoped is not None:
        return scoped
    global _current
    if _current is None:
        named = settings.default_device()
        if named:
            try:
                _current = device(named)
            except (ArgumentValueError, BackendUnavailableError) as e:
                raise type(e)(f"CUBEPY_DEVICE={named!r}: {e.message}; set CUBEPY_DEVICE to an available device "
                              "(cubepy devices lists them) or unset it") from None
        else:
            _current = _best_device()
    return _current


def platform_device(platform: str, index: int | None = None) -> Device:
    """The device whose memory ``platform`` names (a DLPack or framework device type: "cuda"), of
    the first backend taking it (`Backend.accepts_platform`); ``index`` picks the GPU."""
    name = backend_for_platform(platform)
    if name is None:
        raise BackendUnavailableError(f"no installed cubepy backend runs on {platform} memory")
    return device(name) if index is None else device(name, index=index)


def host_device() -> Device:
    """The default device if it works on host memory, else the first available one that does
    (the CPU backend): where kernels on NumPy data and CPU tensors run inside frameworks."""
    dev = current_device()
    if dev.host_memory:
        return dev
    for name in backend_names():
        key = (name, ())
        if key not in _devices:
            _devices[key] = _probe(name, {})
        if _devices[key].host_memory:
            return _devices[key]
    raise BackendUnavailableError("no device working on host memory is available")


def _best_device() -> Device:
    """The first GPU in preference order, else the first device working on host memory (the CPU
    backend), among backends that are `default_candidate`s; backends are probed one by one and only
    until one qualifies, so a process that launches on CUDA never starts the OpenCL or HIP drivers."""
    seen = []
    for name in backend_names():
        try:
            if not load_backend(name).default_candidate:
                continue
        except BackendUnavailableError:
            pass                        # probed below, so that the reason is shown
        key = (name, ())
        if key not in _devices:
            _devices[key] = _probe(name, {})
        d = _devices[key]
        if d.available and d.properties.supports("gpu"):
            return d
        seen.append(d)
    for d in seen:
        if d.available and d.host_memory:
            return d
    raise BackendUnavailableError("no device is available: " + "; ".join(f"{d.name}: {d.reason}" for d in seen
                                                                          if not d.available))
