"""Explicit residency, and the warning for the per-launch transfer trap.

A NumPy array passed to a GPU kernel is copied there on every launch (and back, if ``Mut``). In a
loop that is slow, so the runtime counts uploads of the same array for the same argument and warns
once, naming the argument and `preload`. ``cb.preload(x)`` copies an array to a device once and
returns a `Resident` handle that kernels read in place, launch after launch; ``cb.preload_mut(y)``
gives one kernels may write; ``.to_host()`` copies the data back.

    x_dev, y_dev = cb.preload(x), cb.preload_mut(y)
    for _ in range(100):
        saxpy[count, dim](x_dev, y_dev, 2.0)
    y_dev.to_host(out=y)

On host devices (``cpu``, ``interp``) the handle holds a private host copy, so a host array is
left untouched until ``to_host(out=...)`` on every device alike.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, caller_loc
from ..log import logger
from .device_arrays import RAW_READERS, DeviceArray, describer, owner_of, register_device_array
from .devices import Device, current_device, host_device
from .devices import device as get_device
from .graph_breaks import register_entry_point
from .profiling import ACTIVE as PROFILES
from .profiling import record
from .registry import backend_for_platform


class TransferWarning(UserWarning):
    """The same host array was copied to a device launch after launch."""


class Resident:
    """An array kept on a device across launches (see `preload`). Pass it to kernels in place of
    the host array; ``to_host()`` copies it back. ``mutable`` is False for `preload`'s handles,
    which kernels may only read."""

    __slots__ = ("device", "data", "mutable", "shape", "dtype")

    def __init__(self, device: Device, data: Any, mutable: bool, shape: tuple, dtype: np.dtype):
        self.device, self.data, self.mutable, self.shape, self.dtype = device, data, mutable, shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __len__(self) -> int:
        return self.shape[0]

    def to_host(self, out: np.ndarray | None = None) -> np.ndarray:
        """The data as a NumPy array: a new one, or written into ``out`` (same shape and dtype)."""
        if out is not None and (out.shape != self.shape or out.dtype != self.dtype):
            raise ArgumentTypeError(f"to_host(out=...) needs shape {self.shape} and dtype {self.dtype}, got "
                                    f"{out.shape} and {out.dtype}")
        if isinstance(self.data, np.ndarray):
            if out is None:
                return self.data.copy()
            np.copyto(out, self.data)
            return out
        self.device.synchronize()
        if PROFILES:
            record("to_host", d2h_count=1, d2h_bytes=self.dtype.itemsize * int(np.prod(self.shape)))
        return self.device.backend.to_host(self.data, out, self.device.properties)

    def copy(self) -> Resident:
        """Another handle with a copy of the data, on the same device."""
        if hasattr(type(self.data), "copy"):          # NumPy, CuPy and pyopencl arrays copy on their device
            return Resident(self.device, self.data.copy(), self.mutable, self.shape, self.dtype)
        data = self.device.backend.to_device(self.to_host(), self.device.properties)    # through the host
        return Resident(self.device, data, self.mutable, self.shape, self.dtype)

    # --- DLPack and the CUDA array interface: other libraries use the data in place ----------

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        """Export the data through DLPack, zero-copy (the array API protocol). A `preload` handle
        exports read-only to consumers of DLPack 1.0 flags (host memory); to older ones, and on
        CUDA, the flag does not exist, and a consumer's writes change what kernels read."""
        data = self.data
        export = getattr(data, "__dlpack__", None)
        if export is None:
            raise BufferError(f"an array on device '{self.device.name}' cannot be exported through DLPack; copy it "
                              "back with .to_host()")
        if isinstance(data, np.ndarray) and not self.mutable and max_version is not None and max_version >= (1, 0):
            data = data.view()
            data.flags.writeable = False
            export = data.__dlpack__
        kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                    ("copy", copy)) if v is not None}
        return export(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(DLPack device type, device id)`` of the data: (1, 0) on the host, (2, index) on CUDA."""
        found = getattr(self.data, "__dlpack_device__", None)
        if found is None:
            raise BufferError(f"an array on device '{self.device.name}' has no DLPack device")
        return found()

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA array interface (v3) of CUDA data (read-only for `preload` handles)."""
        interface = getattr(self.data, "__cuda_array_interface__", None)
        if interface is None:
            raise AttributeError(f"an array on device '{self.device.name}' is not in CUDA memory")
        return interface if self.mutable else {**interface, "data": (interface["data"][0], True)}

    def __array__(self, dtype=None, copy=None):
        """Host handles only: the runtime binds them as host arrays, without a copy."""
        if not isinstance(self.data, np.ndarray):
            raise TypeError(f"this array lives on device '{self.device.name}'; copy it back with .to_host()")
        view = self.data if self.mutable else self.data.view()
        if not self.mutable:
            view.flags.writeable = False
        return view if dtype is None else view.astype(dtype)

    def __repr__(self) -> str:
        kind = "preload_mut" if self.mutable else "preload"
        return f"<cubepy {kind} array {self.shape} {self.dtype} on {self.device.name}>"


def from_dlpack(obj: Any, device: Device | str | None = None) -> Resident:
    """A handle on the memory of a DLPack producer (a torch tensor, a JAX or CuPy array, ...),
    zero-copy: kernels read and write it in place, and its owner sees their writes.

    Host memory goes to ``device`` (default: the current device if it runs on the host, else
    ``cpu``); CUDA memory to ``device`` (default: ``cuda:<its index>``).
    """
    from . import dlpack

    where = dlpack.device_of(obj)
    if where is None:
        raise ArgumentTypeError(f"cb.from_dlpack takes an object with __dlpack__ and __dlpack_device__, got "
                                f"{type(obj).__name__}")
    kind, index = where
    if kind in (dlpack.KDL_CPU, dlpack.KDL_CUDA_HOST):
        dev = _device_for_host(device)
        data = np.from_dlpack(obj)
        return Resident(dev, data, data.flags.writeable, data.shape, data.dtype)
    platform = dlpack.PLATFORMS.get(kind)
    name = None if platform is None else backend_for_platform(platform)
    if device is None and name is None:
        raise ArgumentTypeError(f"cb.from_dlpack: memory on DLPack device type {kind} ({platform or 'unknown'}) "
                                "has no cubepy backend")
    dev = get_device(name, index=index) if device is None else get_device(device) if isinstance(device, str) \
        else device
    dev.require()
    if platform is None or not dev.backend.accepts_platform(platform):
        raise ArgumentTypeError(f"cb.from_dlpack: device '{dev.name}' cannot adopt memory of DLPack device type "
                                f"{kind} ({platform or 'unknown'})")
    readonly = dlpack.read_capsule(dlpack.capsule_of(obj, platform)).readonly     # the backend's array may not say
    data = dev.backend.from_dlpack(obj, dev.properties)
    return Resident(dev, data, not readonly, tuple(data.shape), np.dtype(data.dtype))


def _device_for_host(device) -> Device:
    if device is not None:
        dev = get_device(device) if isinstance(device, str) else device
    else:
        dev = host_device()
    dev.require()
    return dev


def preload(array, device: Device | str | None = None) -> Resident:
    """Copy ``array`` to ``device`` (default: the current device) once; kernels read the handle in
    place on every launch. Passing it for a ``Mut`` parameter is an error: use `preload_mut`."""
    return _preload(array, device, mutable=False)


def preload_mut(array, device: Device | str | None = None) -> Resident:
    """Like `preload`, for arrays kernels write; ``.to_host()`` brings the results back."""
    return _preload(array, device, mutable=True)


def _preload(array, device, mutable: bool) -> Resident:
    dev = current_device() if device is None else get_device(device) if isinstance(device, str) else device
    dev.require()
    if np.ndim(array) == 0:
        raise ArgumentTypeError(f"cb.preload takes an array, got {type(array).__name__} {array!r}")
    host = np.ascontiguousarray(array)
    data = dev.backend.to_device(host, dev.properties)
    if not dev.host_memory and PROFILES:
        record("cb.preload", h2d_count=1, h2d_bytes=host.nbytes)
    return Resident(dev, data, mutable, host.shape, host.dtype)


def _describe(r: Resident) -> DeviceArray | None:
    if isinstance(r.data, np.ndarray):
        return None                       # a host handle: bound as a host array, through __array__
    d = describer(r.data)(r.data)
    if r.mutable:
        return d
    return DeviceArray(d.owner, d.ptr, d.shape, d.dtype, True, d.platform, d.stream, d.device_id)


def _quick_facts(r: Resident) -> tuple:
    return (r.dtype, len(r.shape), r.mutable, r.data.__class__)


def _raw(r: Resident, platforms: frozenset[str]) -> tuple | None:
    entry = RAW_READERS.get(r.data.__class__)
    if entry is None:
        return None
    if entry[0] is None:
        found = entry[1](r.data, platforms)
    elif entry[0] in platforms:
        found = entry[1](r.data)
    else:
        return None
    if found is None or r.mutable:
        return found
    return (*found[:4], True, found[5])


register_device_array(Resident, _describe, _quick_facts, raw=_raw, owner=lambda r: owner_of(r.data))
register_entry_point(Resident, "to_host")


# --- the per-launch transfer trap --------------------------------------------------------------

UPLOADS_BEFORE_WARNING = 3
_uploads: dict[tuple[str, str], list] = {}   # (kernel, parameter) -> [weakref to the owner, count, (address, bytes)]
_warned: set[tuple[str, str]] = set()


def note_download(kernel_name: str, array: np.ndarray) -> None:
    """Backends call this when they copy a launch's results back into a host array (the host waits)."""
    if PROFILES:
        record(kernel_name, d2h_count=1, d2h_bytes=array.nbytes, syncs=1)


def note_upload(kernel_name: str, param_name: str, array: np.ndarray) -> None:
    """Backends call this when they copy a host array to the device for a launch: the same array
    for the same argument on `UPLOADS_BEFORE_WARNING` launches in a row warns, once."""
    if PROFILES:
        record(kernel_name, h2d_count=1, h2d_bytes=array.nbytes)
    key = (kernel_name, param_name)
    if key in _warned:
        return
    origin = array                 # the array that owns the memory: views made per launch count as one
    while isinstance(origin.base, np.ndarray):
        origin = origin.base
    where = (array.__array_interface__["data"][0], array.nbytes)
    entry = _uploads.get(key)
    if entry is not None and entry[0]() is origin and entry[2] == where:
        entry[1] += 1
    else:
        try:
            entry = _uploads[key] = [weakref.ref(origin), 1, where]
        except TypeError:          # an array that takes no weak reference: not tracked
            return
    if entry[1] >= UPLOADS_BEFORE_WARNING:
        _warned.add(key)
        del _uploads[key]
        loc = caller_loc()
        message = (f"kernel '{kernel_name}': argument '{param_name}' is the same NumPy array on each of the last "
                   f"{entry[1]} launches and is copied to the device every time; copy it once with "
                   f"{param_name}_dev = cb.preload({param_name}) (cb.preload_mut for Mut arguments) and pass that")
        logger.info("transfer warning: %s", message)
        if loc is None:
            warnings.warn(message, TransferWarning, stacklevel=2)
        else:
            warnings.warn_explicit(message, TransferWarning, loc.filename, loc.line)
