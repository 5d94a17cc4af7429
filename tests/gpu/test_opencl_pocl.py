"""The OpenCL backend on whatever OpenCL device is here (PoCL's CPU device in CI) vs the interpreter."""

from __future__ import annotations

import gpu_kernels as g
import numpy as np
import pytest
from device_tests import *  # noqa: F403

import cubepy as cb

pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install pyopencl pocl-binary-distribution)")


@pytest.fixture(scope="module")
def dev():
    try:
        return cb.device("opencl", plane_dim=32)
    except cb.BackendUnavailableError as e:
        pytest.skip(f"no OpenCL device: {e}")


def test_source_is_opencl_c(dev):
    src = g.saxpy.source(np.ones(8, np.float32), np.ones(8, np.float32), 1.0, device=dev)
    assert "__kernel" in src and "restrict" in src and "__global const float*" in src


def test_pyopencl_arrays_are_used_in_place(dev):
    import pyopencl.array as cla

    queue = dev.backend.queue(dev.properties)
    x = cla.to_device(queue, np.arange(256, dtype=np.float32))
    y = cla.to_device(queue, np.ones(256, np.float32))
    data = y.base_data
    g.saxpy.launch(1, 256, x, y, 2.0, device=dev)
    dev.synchronize()
    assert y.base_data is data
    np.testing.assert_allclose(y.get(), 2 * np.arange(256) + 1)
    with pytest.raises(ValueError, match="Mut argument 'y' overlaps argument 'x'"):
        g.saxpy.launch(1, 256, x, x, 2.0, device=dev)
