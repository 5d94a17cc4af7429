"""Arrays that already live on a device (CuPy arrays, PyTorch CUDA tensors, ...), used in place.

The core never imports a vendor library: anything exposing ``__cuda_array_interface__`` is
understood here, and a backend may register a faster describer for its own array type.
"""

from __future__ import annotations

from collections.abc import Callable
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


_DESCRIBERS: dict[type, Callable[[Any], DeviceArray]] = {}
QUICK_FACTS: dict[type, Callable[[Any], tuple]] = {}
RAW_READERS: dict[type, tuple[str, Callable[[Any], tuple]]] = {}


def register_device_array(cls: type, describe: Callable[[Any], DeviceArray],
                          quick_facts: Callable[[Any], tuple] | None = None,
                          raw: Callable[[Any], tuple] | None = None, platform: str | None = None) -> None:
    """Let a backend describe its own array type faster than through the generic interfaces.

    ``quick_facts(a)`` returns what specializes a launch and what the full check looked at
    (dtype, rank, read-only, contiguous), so that warm launches can skip the full check.

    ``raw(a)`` returns ``(dtype, shape, pointer, c_contiguous, readonly)`` without building a
    `DeviceArray`: launches through a backend's direct launcher read arguments with it. Give it
    only for a type whose every instance lives on ``platform`` (e.g. "cuda").
    """
    _DESCRIBERS[cls] = describe
    if quick_facts is not None:
        QUICK_FACTS[cls] = quick_facts
    if raw is not None:
        if platform is None:
            raise ValueError("a raw reader needs the platform its arrays live on")
        RAW_READERS[cls] = (platform, raw)


def describer(value) -> Callable[[Any], DeviceArray] | None:
    """How to describe ``value`` as a DeviceArray, or None if it is not a device array."""
    found = _DESCRIBERS.get(value.__class__)
    if found is not None:
        return found
    if hasattr(value, "__cuda_array_interface__"):
        return from_cuda_array_interface
    return None
