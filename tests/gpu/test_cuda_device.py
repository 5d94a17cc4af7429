"""The CUDA backend on a real NVIDIA GPU vs the interpreter (skipped without CuPy and a GPU)."""

from __future__ import annotations

import gpu_kernels as g
import numpy as np
import pytest
from device_tests import *  # noqa: F403

import cubepy as cb


@pytest.fixture(scope="module")
def dev():
    try:
        return cb.device("cuda")
    except cb.BackendUnavailableError as e:
        pytest.skip(f"no CUDA device: {e}")


def _launch_device_arrays(dev, kfn, count, dim, args):
    """Launch through the backend with device arrays (the runtime's argument checker still takes NumPy only)."""
    from cubepy.runtime.args import bind_arguments
    from cubepy.runtime.kernel import _topology

    cp = pytest.importorskip("cupy")
    host = [cp.asnumpy(a) if isinstance(a, cp.ndarray) else a for a in args]
    bound = bind_arguments(kfn.signature, host, {}, kfn.__name__)
    ir, exe = kfn._specialize(bound.specs, _topology(dim, "CubeDim", kfn.__name__), dev, None)
    values = [args[p.param_index] if isinstance(args[p.param_index], cp.ndarray) else bound.values[p.param_index]
              for p in ir.params]
    dev.backend.launch(exe, ir, _topology(count, "CubeCount", ""), _topology(dim, "CubeDim", ""), values,
                       dev.properties, {})


def test_device_arrays_in_place(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, cp.float32)
    ptr = y.data.ptr
    _launch_device_arrays(dev, g.saxpy, 4, 256, [x, y, 2.0])
    dev.synchronize()
    assert y.data.ptr == ptr
    np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(1000) + 1)


def test_device_array_oob_raised_at_synchronize(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(64, dtype=cp.float32)
    y = cp.zeros(64, cp.float32)
    _launch_device_arrays(dev, g.oob, 1, 64, [x, y])
    with pytest.raises(cb.OutOfBoundsError, match="out of bounds for array 'x' of shape"):
        dev.synchronize()
    dev.synchronize()


def test_properties(dev):
    p = dev.properties
    assert p.plane_dim == 32 and p.max_units_per_cube >= 1024 and p.compute_units > 0
    assert p.shared_memory_per_cube >= 48 * 1024
