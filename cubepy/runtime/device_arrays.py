"""Arrays that already live on a device (CuPy arrays, PyTorch CUDA tensors, JAX arrays, ...), used
in place.

The core never imports a vendor library: anything exposing ``__cuda_array_interface__`` or DLPack
(``__dlpack__`` with a CUDA ``__dlpack_device__``) is understood here, and a backend may register
a faster describer for its own array type.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import partial
from math import prod
from typing import Any

import numpy as np


class DeviceArray:
    """A C-contiguous array in device memory: a pointer, a shape and a dtype.

    ``owner`` keeps the original object (and so its memory) alive while cubepy holds this. A plain
    slotted class: one is made per argument per launch, so it must be cheap.
    """

    __slots__ = ("owner", "ptr", "shape", "dtype", "readonly", "platform", "stream", "size", "nbytes")

    def __init__(self, owner: Any, ptr: int, shape: tuple, dtype: np.dtype, readonly: bool,
                 platform: str = "cuda", stream: int | None = None):
        self.owner, self.ptr, self.shape, self.dtype = owner, ptr, shape, dtype
        self.readonly, self.platform, self.stream = readonly, platform, stream
        self.size = prod(shape)
        self.nbytes = self.size * dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def reshape(self, *shape: int) -> DeviceArray:
        return DeviceArray(self.owner, self.ptr, tuple(shape), self.dtype, self.readonly, self.platform, self.stream)

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


# DLPack (dlpack.h): device types whose memory a platform's kernels read, the element kinds of
# its type codes, and the DLTensor at the start of the "dltensor" capsule's DLManagedTensor.
DLPACK_PLATFORMS = {2: "cuda", 13: "cuda"}          # kDLCUDA, kDLCUDAManaged
_DLPACK_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}    # int, uint, float, bool


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def read_dltensor(capsule) -> tuple[int, tuple, np.dtype, int]:
    """``(address, shape, dtype, DLPack device type)`` of a "dltensor" capsule; raises
    NotContiguous or ValueError for what kernels cannot index."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(capsule, b"dltensor"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    kind = _DLPACK_KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise ValueError(f"DLPack type code {t.dtype.code} ({t.dtype.bits} bits, {t.dtype.lanes} lanes) "
                         "has no cubepy dtype")
    dtype = np.dtype(np.bool_) if kind == "b" else np.dtype(f"{kind}{t.dtype.bits // 8}")
    if t.strides:
        strides, step = tuple(t.strides[i] for i in range(t.ndim)), 1
        for extent, stride in zip(reversed(shape), reversed(strides)):
            if extent > 1 and stride != step:
                raise NotContiguous(f"strides {strides} (in elements)")
            step *= extent
    return (t.data or 0) + t.byte_offset, shape, dtype, t.device.device_type


def from_dlpack(obj) -> DeviceArray:
    """Describe an object exporting DLPack memory of a platform in `DLPACK_PLATFORMS`."""
    capsule = obj.__dlpack__()
    ptr, shape, dtype, device_type = read_dltensor(capsule)
    platform = DLPACK_PLATFORMS.get(device_type)
    if platform is None:
        raise ValueError(f"its DLPack memory is on device type {device_type}, which no backend reads in place")
    # The capsule owns the export: kept alive with the object until cubepy is done with the array.
    return DeviceArray((obj, capsule), ptr, shape, dtype, False, platform)


def _dlpack_platform(value) -> str | None:
    try:
        device_type, _ = value.__dlpack_device__()
    except Exception:
        return None
    return DLPACK_PLATFORMS.get(int(device_type))


_DESCRIBERS: dict[type, Callable[[Any], DeviceArray]] = {}
QUICK_FACTS: dict[type, Callable[[Any], tuple]] = {}
RAW_READERS: dict[type, tuple[str, Callable[[Any], tuple]]] = {}


def register_device_array(cls: type, describe: Callable[[Any], DeviceArray],
                          quick_facts: Callable[[Any], tuple] | None = None,
                          raw: Callable[[Any], tuple] | None = None, platform: str | None = None) -> None:
    """Let a backend describe its own array type faster than through the generic interfaces.

    ``describe(a)`` returns the `DeviceArray`, or None for an instance in host memory (a type
    such as ``torch.Tensor`` has both), which is then taken as a host array.

    ``quick_facts(a)`` returns what specializes a launch and what the full check looked at
    (dtype, rank, read-only, contiguous), so that warm launches can skip the full check; None
    where it cannot tell (no launch plan is kept then). Without it, it is read from ``raw``.

    ``raw(a)`` returns ``(dtype, shape, pointer, c_contiguous, readonly)`` without building a
    `DeviceArray`, or None for an instance not on ``platform`` (e.g. "cuda"): launches through a
    backend's direct launcher read arguments with it.
    """
    _DESCRIBERS[cls] = describe
    if quick_facts is None and raw is not None:
        quick_facts = partial(_facts_from_raw, raw)
    if quick_facts is not None:
        QUICK_FACTS[cls] = quick_facts
    if raw is not None:
        if platform is None:
            raise ValueError("a raw reader needs the platform its arrays live on")
        RAW_READERS[cls] = (platform, raw)


_MODULE_HOOKS: dict[str, Callable[[Any], None]] = {}


def register_device_array_module(module: str, register: Callable[[Any], None]) -> None:
    """Call ``register(the module)`` the first time an argument of a class from top-level module
    ``module`` (e.g. "torch") is described, so that a backend registers that library's array
    type only once the user has imported it; cubepy never imports it."""
    _MODULE_HOOKS[module] = register


def _facts_from_raw(raw: Callable[[Any], tuple | None], a) -> tuple | None:
    found = raw(a)
    return None if found is None else (found[0], len(found[1]), found[3], found[4])


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
    if found is not None:
        return found
    if hasattr(value, "__cuda_array_interface__"):
        return from_cuda_array_interface
    if hasattr(value, "__dlpack__") and _dlpack_platform(value) is not None:
        return from_dlpack
    return None
