"""PyTorch tensors as kernel arguments, registered the first time one is passed (torch is never
imported by cubepy itself: `register` receives the module the user imported).

- CUDA tensors are device arrays of platform "cuda", read without ``__cuda_array_interface__``
  (which costs microseconds per call), with a raw reader for the direct warm path.
- CPU tensors are host arrays: a zero-copy NumPy view (``tensor.detach().numpy()``), so a ``Mut``
  tensor is written in place. A tensor that requires grad is taken as a read-only ``Array``; as a
  ``Mut`` argument only where autograd does not record (grad mode off, as inside a custom op's
  forward), since autograd cannot see a kernel's write.
- Other devices (meta, mps, xla, ...) and non-contiguous tensors are refused with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .device_arrays import DeviceArray, NotContiguous, from_cuda_array_interface, register_device_array

_NUMPY_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "float32", "float64")


def register(torch: Any) -> None:
    """Register ``torch.Tensor`` with the runtime (called once, with the imported module)."""
    dtypes = {getattr(torch, name): np.dtype(name) for name in _NUMPY_NAMES if hasattr(torch, name)}
    grad_enabled = torch.is_grad_enabled

    def describe(t):
        if not t.is_cuda:
            if not t.is_cpu:
                raise ValueError(f"is a tensor on device '{t.device}', which no cubepy backend reads; move it "
                                 "with .cpu() or .cuda()")
            return None
        dtype = dtypes.get(t.dtype)
        if dtype is None:       # a dtype NumPy lacks (bfloat16): the interface's own checks
            return from_cuda_array_interface(t)
        if not t.is_contiguous():
            raise NotContiguous(f"strides {tuple(t.stride())} (in elements)")
        return DeviceArray(t, t.data_ptr(), tuple(t.shape), dtype, False, "cuda", device_id=t.get_device())

    def quick_facts(t):
        dtype = dtypes.get(t.dtype)
        if dtype is None:
            return None
        return (dtype, t.dim(), t.is_cuda, t.is_cpu, t.is_contiguous())

    def raw(t):
        dtype = dtypes.get(t.dtype)
        if dtype is None or not t.is_cuda:
            return None
        return (dtype, t.shape, t.data_ptr(), t.is_contiguous(), False, t.get_device())

    def host(t, mutable: bool) -> np.ndarray:
        if not t.is_contiguous():
            raise NotContiguous(f"strides {tuple(t.stride())} (in elements)")
        if t.requires_grad:
            if mutable and grad_enabled():
                raise ValueError("is a tensor that requires grad, and autograd cannot see a kernel's in-place "
                                 "write; launch inside a cubepy.torch.op (whose forward autograd does not "
                                 "record), under torch.no_grad(), or pass a tensor without grad")
            t = t.detach()
        if t.dtype not in dtypes:
            raise ValueError(f"is a tensor of {t.dtype}, which NumPy lacks, on the CPU; convert it with "
                             ".float() or keep it on a CUDA device")
        return t.numpy()

    register_device_array(torch.Tensor, describe, quick_facts, raw=raw, platform="cuda", host=host)
