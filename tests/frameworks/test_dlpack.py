"""DLPack both ways: cubepy arrays exported to torch, JAX and NumPy, and theirs adopted, zero-copy."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from tests.conftest import poisoned
from tests.kernels import saxpy

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")

HOST_DEVICES = ("cpu", "interp")


def _cuda() -> bool:
    return torch.cuda.is_available() and any(d.backend_name == "cuda" and d.available for d in cb.devices())


@pytest.mark.parametrize("where", HOST_DEVICES)
def test_a_preloaded_array_is_seen_by_torch_in_place(where, rng):
    y = rng.standard_normal(300).astype(np.float32)
    handle = cb.preload_mut(y, device=where)
    tensor = torch.from_dlpack(handle)
    saxpy[2, 256](np.ones(300, np.float32), handle, 2.0, device=where)
    torch.testing.assert_close(tensor, torch.from_numpy(y + 2))          # the kernel's write, no copy
    tensor.mul_(0)
    np.testing.assert_array_equal(handle.to_host(), 0)                  # and torch's write, seen by cubepy


@pytest.mark.parametrize("where", HOST_DEVICES)
def test_a_read_only_handle_exports_read_only(where, rng):
    x = rng.standard_normal(10).astype(np.float32)
    handle = cb.preload(x, device=where)
    view = np.from_dlpack(handle)
    np.testing.assert_array_equal(view, x)
    assert not view.flags.writeable
    np.testing.assert_array_equal(np.asarray(jax.dlpack.from_dlpack(handle)), x)
    assert handle.__dlpack_device__() == (1, 0)


def test_torch_memory_is_adopted_in_place_and_written_by_kernels(rng):
    x = torch.from_numpy(rng.standard_normal(500).astype(np.float32))
    y = torch.from_numpy(poisoned(500, np.float32))
    y.zero_()
    handle = cb.from_dlpack(y)
    assert handle.mutable and handle.device.host_memory and handle.shape == (500,)
    saxpy[2, 256](x, handle, 3.0, device=handle.device)
    torch.testing.assert_close(y, 3 * x)


def test_jax_host_memory_is_adopted_read_only(rng):
    x = jax.device_put(rng.standard_normal(64).astype(np.float32), jax.devices("cpu")[0])
    handle = cb.from_dlpack(x)
    np.testing.assert_array_equal(handle.to_host(), np.asarray(x))
    with pytest.raises(ValueError, match="is Mut but the array passed is read-only"):
        saxpy[1, 64](np.ones(64, np.float32), handle, 1.0, device=handle.device)


def test_from_dlpack_names_what_it_cannot_take():
    with pytest.raises(TypeError, match="takes an object with __dlpack__"):
        cb.from_dlpack([1, 2, 3])


def test_an_opencl_array_says_it_cannot_be_exported():
    opencl = next((d for d in cb.devices() if d.backend_name == "opencl" and d.available), None)
    if opencl is None:
        pytest.skip("no OpenCL device")
    handle = cb.preload(np.ones(4, np.float32), device=opencl)
    with pytest.raises(BufferError, match="cannot be exported through DLPack"):
        handle.__dlpack__()
    assert not hasattr(handle, "__cuda_array_interface__")


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU with CuPy")
def test_cuda_round_trips_with_torch_and_cupy(rng):
    import cupy as cp

    dev = cb.device("cuda")
    y = rng.standard_normal(1000).astype(np.float32)
    handle = cb.preload_mut(y, device=dev)
    tensor = torch.from_dlpack(handle)
    assert tensor.is_cuda and tensor.data_ptr() == handle.__cuda_array_interface__["data"][0]
    saxpy[4, 256](cp.ones(1000, cp.float32), handle, 2.0, device=dev)
    torch.cuda.synchronize()
    torch.testing.assert_close(tensor.cpu(), torch.from_numpy(y + 2))
    adopted = cb.from_dlpack(torch.zeros(1000, device="cuda"))
    assert adopted.device.backend_name == "cuda"
    saxpy[4, 256](cp.ones(1000, cp.float32), adopted, 1.5, device=dev)
    np.testing.assert_array_equal(adopted.to_host(), 1.5)
    assert cp.from_dlpack(cb.preload(np.arange(5, dtype=np.float32), device=dev)).sum() == 10
    assert cb.preload(np.ones(3, np.float32), device=dev).__cuda_array_interface__["data"][1] is True
