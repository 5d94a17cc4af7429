"""``stream=`` on launches: an OpenCL queue of the device's context (PoCL here), and a clear error
on devices that run each launch to completion. CUDA streams are tested in tests/gpu."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32


@cb.kernel
def scale(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = 3.0 * x[i]


@pytest.mark.parametrize("name", ["interp", "cpu"])
def test_host_devices_take_no_stream(name):
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="takes no stream"):
        scale.launch(1, 8, x, x.copy(), device=name, stream=1)
    with pytest.raises(ValueError, match="takes no stream"):
        scale[1, 8](x, x.copy(), device=name, stream=1)


@pytest.fixture
def ocl():
    pytest.importorskip("pyopencl")
    try:
        return cb.device("opencl")
    except cb.BackendUnavailableError as e:
        pytest.skip(str(e))


def test_opencl_launches_on_a_queue_of_the_devices_context(ocl, rng):
    import pyopencl as cl
    import pyopencl.array as cla

    ctx = ocl.backend.queue(ocl.properties).context
    queue = cl.CommandQueue(ctx)
    x = rng.random(1000).astype(np.float32)
    y = np.full(1000, np.nan, np.float32)
    scale.launch(4, 256, x, y, device=ocl, stream=queue)          # NumPy arguments: there and back
    np.testing.assert_array_equal(y, 3 * x)
    dx, dy = cla.to_device(queue, x), cla.empty(queue, 1000, np.float32)
    for _ in range(2):
        scale[4, 256](dx, dy, device=ocl, stream=queue)
    ocl.synchronize()
    np.testing.assert_array_equal(dy.get(queue), 3 * x)


def test_opencl_refuses_other_streams(ocl):
    import pyopencl as cl

    x = np.ones(8, np.float32)
    other = cl.CommandQueue(cl.Context([ocl.backend.queue(ocl.properties).device]))
    with pytest.raises(ValueError, match="queue of another OpenCL context"):
        scale.launch(1, 8, x, x.copy(), device=ocl, stream=other)
    with pytest.raises(TypeError, match="takes a pyopencl.CommandQueue"):
        scale.launch(1, 8, x, x.copy(), device=ocl, stream=7)
