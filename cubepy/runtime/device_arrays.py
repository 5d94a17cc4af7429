"""Arrays that already live on a device (CuPy arrays, PyTorch CUDA tensors, JAX arrays, ...), used
in place.

The core never imports a vendor library: anything exposing ``__cuda_array_interface__`` or DLPack
(``__dlpack__`` with a CUDA ``__dlpack_device__``) is understood here, and a backend may register
a faster describer for its own array type.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from math import prod
from typing import Any

import numpy as np

from . import dlpack


class DeviceArray:
    """A C-contiguous array in device memory: a pointer, a shape and a dtype.

    ``owner`` keeps the original object (and so its memory) alive while cubepy holds this. A plain
    slotted class: one is made per argument per launch, so it must be cheap.
    """

    __slots__ = ("owner", "ptr", "shape", "dtype", "readonly", "platform", "stream", "size", "nbytes", "device_id")

    def __init__(self, owner: Any, ptr: int, shape: tuple, dtype: np.dtype, readonly: bool,
                 platform: str = "cuda", stream: int | None = None, device_id: int | None = None):
        self.owner, self.ptr, self.shape, self.dtype = owner, ptr, shape, dtype
        self.readonly, self.platform, self.stream = readonly, platform, stream
        self.device_id = device_id        # which device of the platform holds it (None: not known)
        self.size = prod(shape)
        self.nbytes = self.size * dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def reshape(self, *shape: int) -> DeviceArray:
        return DeviceArray(self.owner, self.ptr, tuple(shape), self.dtype, self.readonly, self.platform, self.stream,
                           self.device_id)

    def overlaps(self, other: DeviceArray) -> bool:
        return (self.platform == other.platform and self.ptr < other.ptr + other.nbytes
                and other.ptr < self.ptr + self.nbytes)

    def __repr__(self) -> str:
        return f"DeviceArray({self.platform}, ptr={self.ptr:#x}, shape={self.shape}, dtype={self.dtype})"


class NotContiguous(ValueError):
    """A device array whose strides are not C-contiguous."""


def from_cuda_array_interface(obj) -> DeviceArray:
    """Describe any object with ``__cuda_array_interface__`` (version 2 or 3)."""
    cai = obj.__cuda_array_interface__
    shape = tuple(int(s) for s in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    strides = cai.get("strides")
    if strides is not None:
        expected, step = [], dtype.itemsize
        for s in reversed(shape):
            expected.append(step)
            step *= s
        if tuple(strides) != tuple(reversed(expected)) and np.prod(shape) > 1:
            raise NotContiguous(f"strides {tuple(strides)}")
    ptr, readonly = cai["data"]
    return DeviceArray(obj, int(ptr or 0), shape, dtype, bool(readonly), "cuda", cai.get("stream"))


def from_dlpack(obj) -> DeviceArray:
    """Describe an object exporting DLPack memory that a platform's kernels read in place."""
    found = dlpack.device_of(obj)
    platform = dlpack.PLATFORMS.get(found[0]) if found else None
    capsule = dlpack.capsule_of(obj, platform)
    view = dlpack.read_capsule(capsule)
    platform = dlpack.PLATFORMS.get(view.device_type)
    if platform is None:
        raise ValueError(f"is DLPack memory on device type {view.device_type}, which no backend reads in place")
    # The capsule owns the export: kept alive with the object until cubepy is done with the array.
    return DeviceArray((obj, capsule), view.ptr, view.shape, view.dtype, view.readonly, platform,
                       device_id=view.device_id)


def _dlpack_platform(value) -> str | None:
    found = dlpack.device_of(value)
    return dlpack.PLATFORMS.get(found[0]) if found else None


_DESCRIBERS: dict[type, Callable[[Any], DeviceArray]] = {}
QUICK_FACTS: dict[type, Callable[[Any], tuple]] = {}
RAW_READERS: dict[type, tuple[str | None, Callable[..., tuple | None]]] = {}
HOST_VIEWS: dict[type, Callable[[Any, bool], np.ndarray]] = {}
OWNERS: dict[type, Callable[[Any], Any]] = {}


def register_device_array(cls: type, describe: Callable[[Any], DeviceArray],
                          quick_facts: Callable[[Any], tuple] | None = None,
                          raw: Callable[[Any], tuple] | None = None, platform: str | None = None,
                          host: Callable[[Any, bool], np.ndarray] | None = None,
                          owner: Callable[[Any], Any] | None = None) -> None:
    """Let a backend describe its own array type faster than through the generic interfaces.

    ``describe(a)`` returns the `DeviceArray`, or None for an instance in host memory (a type
    such as ``torch.Tensor`` has both), which is then taken as a host array: through
    ``host(a, mutable)`` (a NumPy view of its memory; it raises ValueError, with the reason, for
    an instance a kernel may not use, or not write when ``mutable``), else ``np.asarray``.

    ``quick_facts(a)`` returns what specializes a launch and what the full check looked at
    (dtype, rank, read-only, contiguous), so that warm launches can skip the full check; None
    where it cannot tell (no launch plan is kept then). Without it, it is read from ``raw``.

    ``raw(a)`` returns ``(dtype, shape, pointer, c_contiguous, readonly, device id or None)`` without building a
    `DeviceArray`, or None for an instance not on ``platform`` (e.g. "cuda"): launches through a
    backend's direct launcher read arguments with it. A type whose instances live on several
    platforms (`DeviceArray`, `Resident`) gives ``platform=None`` and ``raw(a, platforms)``, which
    returns None for an instance on none of ``platforms`` (those the launching backend takes).

    ``owner(a)`` returns the array of the backend's own type behind a wrapper (a `Resident`'s
    data), which a direct launcher's ``owner`` slot receives; without it, ``a`` itself.
    """
    _DESCRIBERS[cls] = describe
    if quick_facts is None and raw is not None:
        if platform is None:
            raise ValueError("a raw reader of several platforms needs quick_facts")
        quick_facts = partial(_facts_from_raw, raw)
    if quick_facts is not None:
        QUICK_FACTS[cls] = quick_facts
    if raw is not None:
        RAW_READERS[cls] = (platform, raw)
    if host is not None:
        HOST_VIEWS[cls] = host
    if owner is not None:
        OWNERS[cls] = owner


def host_view(value, mutable: bool) -> np.ndarray:
    """``value``, an array in host memory, as a NumPy array (a view where its type allows)."""
    view = HOST_VIEWS.get(value.__class__)
    return np.asarray(value) if view is None else view(value, mutable)


_MODULE_HOOKS: dict[str, Callable[[Any], None]] = {}


def register_device_array_module(module: str, register: Callable[[Any], None]) -> None:
    """Call ``register(the module)`` the first time an argument of a class from top-level module
    ``module`` (e.g. "torch") is described, so that a backend registers that library's array
    type only once the user has imported it; cubepy never imports it."""
    _MODULE_HOOKS[module] = register


def _raw_device_array(d: DeviceArray, platforms: frozenset[str]) -> tuple | None:
    # a DeviceArray's pointer is an address only where the platform's arrays are read raw
    if d.platform not in platforms or d.ptr is None:
        return None
    return (d.dtype, d.shape, d.ptr, True, d.readonly, d.device_id)


# A DeviceArray itself is an argument too (adapters that hold raw pointers pass one).
register_device_array(DeviceArray, lambda d: d, lambda d: (d.dtype, len(d.shape), d.platform, d.readonly),
                      raw=_raw_device_array, owner=lambda d: d.owner)


def owner_of(a) -> Any:
    """The array of a backend's own type behind ``a`` (``register_device_array``'s ``owner``)."""
    found = OWNERS.get(a.__class__)
    return a if found is None else found(a)


def _register_torch(torch) -> None:
    from .torch_tensors import register

    register(torch)


register_device_array_module("torch", _register_torch)


def _facts_from_raw(raw: Callable[[Any], tuple | None], a) -> tuple | None:
    found = raw(a)
    return None if found is None else (found[0], len(found[1]), found[3], found[4])


def _inherited(cls: type) -> Callable[[Any], DeviceArray] | None:
    """The describer of the nearest registered base class of ``cls``, copied with its other entries
    to ``cls`` (a ``torch.nn.Parameter`` is read as the ``torch.Tensor`` it is; through the generic
    interface a CUDA parameter that requires grad refuses ``__cuda_array_interface__``)."""
    for base in cls.__mro__[1:]:
        found = _DESCRIBERS.get(base)
        if found is not None:
            for table in (_DESCRIBERS, QUICK_FACTS, RAW_READERS, HOST_VIEWS, OWNERS):
                if base in table:
                    table[cls] = table[base]
            return found
    return None


def describer(value) -> Callable[[Any], DeviceArray] | None:
    """How to describe ``value`` as a DeviceArray, or None if it is not a device array."""
    cls = value.__class__
    if cls is np.ndarray:
        return None
    found = _DESCRIBERS.get(cls)
    if found is None and _MODULE_HOOKS:
        hook = _MODULE_HOOKS.pop(getattr(cls, "__module__", "").partition(".")[0], None)
        if hook is not None:
            hook(sys.modules[cls.__module__.partition(".")[0]])
            found = _DESCRIBERS.get(cls)
    if found is None:
        found = _inherited(cls)
    if found is not None:
        return found
    if hasattr(value, "__cuda_array_interface__"):
        return from_cuda_array_interface
    if hasattr(value, "__dlpack__") and _dlpack_platform(value) is not None:
        return from_dlpack
    return None
