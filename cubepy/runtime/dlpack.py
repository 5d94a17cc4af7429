"""DLPack capsules, read per the DLPack / array-API spec.

As a consumer cubepy asks for a versioned capsule (``max_version=(1, 0)``, falling back to the
unversioned protocol for older producers) on the stream its launch will use, and reads either
layout: ``"dltensor"`` (a DLManagedTensor) or ``"dltensor_versioned"`` (a
DLManagedTensorVersioned, whose flags carry read-only). The capsule is kept alive, unconsumed,
for as long as the array is in use; its own destructor then releases the producer's memory, as
the spec allows for a capsule nobody renamed.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

# Device types (dlpack.h) and which platform's kernels read their memory in place.
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL, KDL_CUDA_MANAGED = 1, 2, 3, 4, 13
PLATFORMS = {KDL_CUDA: "cuda", KDL_CUDA_MANAGED: "cuda"}
READ_ONLY_FLAG = 1 << 0
MAX_VERSION = (1, 0)
_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}    # int, uint, float, bool

# Per platform, the stream handle a launch will use now (backends register theirs), handed to
# producers so that they make their data ready on it.
CURRENT_STREAM: dict[str, Callable[[], int]] = {}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


class DLView(NamedTuple):
    """What a capsule describes: the address of element 0, shape, dtype, device, read-only."""

    ptr: int
    shape: tuple
    dtype: np.dtype
    device_type: int
    device_id: int
    readonly: bool


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]


def read_capsule(capsule) -> DLView:
    """The array a "dltensor" or "dltensor_versioned" capsule holds; raises NotContiguous (a
    ValueError) or ValueError for what kernels cannot index."""
    from .device_arrays import NotContiguous

    name = _get_name(capsule)
    if name == b"dltensor_versioned":
        managed = _DLManagedTensorVersioned.from_address(_get_pointer(capsule, name))
        if managed.version.major > MAX_VERSION[0]:
            raise ValueError(f"is a DLPack {managed.version.major}.{managed.version.minor} capsule; cubepy reads "
                             f"DLPack up to {MAX_VERSION[0]}.x")
        t, readonly = managed.dl_tensor, bool(managed.flags & READ_ONLY_FLAG)
    elif name == b"dltensor":
        t, readonly = _DLTensor.from_address(_get_pointer(capsule, name)), False
    else:
        raise ValueError(f"is a capsule named {name!r}, not an unconsumed DLPack capsule")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    kind = _KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise ValueError(f"has DLPack type code {t.dtype.code} ({t.dtype.bits} bits, {t.dtype.lanes} lanes), "
                         "which has no cubepy dtype")
    dtype = np.dtype(np.bool_) if kind == "b" else np.dtype(f"{kind}{t.dtype.bits // 8}")
    if t.strides:
        strides, step = tuple(t.strides[i] for i in range(t.ndim)), 1
        for extent, stride in zip(reversed(shape), reversed(strides)):
            if extent > 1 and stride != step:
                raise NotContiguous(f"strides {strides} (in elements)")
            step *= extent
    return DLView((t.data or 0) + t.byte_offset, shape, dtype, t.device.device_type, t.device.device_id, readonly)


def capsule_of(obj: Any, platform: str | None) -> Any:
    """``obj.__dlpack__(...)``, asking for a versioned capsule on ``platform``'s current stream."""
    kwargs: dict[str, Any] = {"max_version": MAX_VERSION}
    stream = CURRENT_STREAM.get(platform) if platform is not None else None
    if stream is not None:
        handle = stream()
        kwargs["stream"] = handle if handle else 1      # 0 is not allowed: 1 is CUDA's legacy default stream
    try:
        return obj.__dlpack__(**kwargs)
    except TypeError:                                   # a producer from before DLPack 1.0
        kwargs.pop("max_version")
        return obj.__dlpack__(**kwargs)


def device_of(obj: Any) -> tuple[int, int] | None:
    """``obj.__dlpack_device__()`` as ints, or None if it has none (or it fails)."""
    try:
        device_type, device_id = obj.__dlpack_device__()
    except Exception:
        return None
    return int(device_type), int(device_id)
