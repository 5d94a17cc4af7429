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
