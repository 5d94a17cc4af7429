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


def test_device_arrays_in_place(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, cp.float32)
    ptr = y.data.ptr
    g.saxpy.launch(4, 256, x, y, 2.0, device=dev)
    dev.synchronize()
    assert y.data.ptr == ptr
    np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(1000) + 1)


def test_torch_cuda_tensors_in_place(dev):
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    ptr = y.data_ptr()
    g.saxpy.launch(4, 256, x, y, 2.0, device=dev)
    dev.synchronize()
    assert y.data_ptr() == ptr
    np.testing.assert_allclose(y.cpu().numpy(), 2 * np.arange(1000) + 1)


def test_lines_of_device_arrays(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(1024, dtype=cp.float32)
    y = cp.ones(1024, cp.float32)
    g.saxpy.launch(1, 256, cb.lines(x, 4), cb.lines(y, 4), 2.0, device=dev)
    dev.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(1024) + 1)


def test_device_array_oob_raised_at_synchronize(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(64, dtype=cp.float32)
    y = cp.zeros(64, cp.float32)
    g.oob.launch(1, 64, x, y, device=dev)
    with pytest.raises(cb.OutOfBoundsError, match="out of bounds for array 'x' of shape"):
        dev.synchronize()
    dev.synchronize()


def test_properties(dev):
    p = dev.properties
    assert p.plane_dim == 32 and p.max_units_per_cube >= 1024 and p.compute_units > 0
    assert p.shared_memory_per_cube >= 48 * 1024


def test_warm_launches_of_cupy_arrays_take_the_direct_path(dev):
    cp = pytest.importorskip("cupy")
    x, y = cp.arange(1000, dtype=cp.float32), cp.ones(1000, cp.float32)
    launcher = g.saxpy[4, 256]
    launcher(x, y, 2.0, device=dev)
    assert hasattr(launcher.warm_path, "source")
    for _ in range(9):
        launcher(x, y, 2.0, device=dev)
    dev.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 1 + 10 * 2 * np.arange(1000))


def test_warm_launches_from_several_threads(dev):
    cp = pytest.importorskip("cupy")
    import threading

    launcher = g.saxpy[4, 256]
    launcher(cp.zeros(1000, cp.float32), cp.zeros(1000, cp.float32), 1.0, device=dev)
    ys = [cp.zeros(1000, cp.float32) for _ in range(4)]
    x = cp.arange(1000, dtype=cp.float32)
    errors = []

    def work(t):
        try:
            for _ in range(50):
                launcher(x, ys[t], float(t + 1), device=dev)
            cp.cuda.get_current_stream().synchronize()
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dev.synchronize()
    assert not errors
    for t, y in enumerate(ys):
        np.testing.assert_allclose(cp.asnumpy(y), 50 * (t + 1) * np.arange(1000))


def test_dlpack_only_arrays_in_place(dev):
    """An array that offers only DLPack (as JAX arrays do), wrapping a CUDA tensor."""
    torch = pytest.importorskip("torch")

    class DLPackOnly:
        def __init__(self, t):
            self.t = t

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    ptr = y.data_ptr()
    g.saxpy.launch(4, 256, DLPackOnly(x), DLPackOnly(y), 2.0, device=dev)
    dev.synchronize()
    assert y.data_ptr() == ptr
    np.testing.assert_allclose(y.cpu().numpy(), 2 * np.arange(1000) + 1)


def test_torch_tensors_take_the_direct_warm_path_and_cpu_tensors_stay_host_arrays(dev):
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    launcher = g.saxpy[4, 256]
    for _ in range(3):
        launcher(x, y, 2.0, device=dev)
    assert hasattr(launcher.warm_path, "source")
    dev.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), 1 + 3 * 2 * np.arange(1000))
    hx, hy = torch.arange(1000, dtype=torch.float32), torch.ones(1000, dtype=torch.float32)
    launcher(hx, hy, 2.0, device=dev)          # CPU tensors: copied there and back, like NumPy arrays
    np.testing.assert_allclose(hy.numpy(), 1 + 2 * np.arange(1000))
    with pytest.raises(ValueError, match="not C-contiguous"):
        launcher(x[::2], y[:500], 2.0, device=dev)


def test_launches_on_given_streams(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(4096, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    for stream in (s, s.ptr):
        y = cp.zeros(4096, cp.float32)
        g.saxpy.launch(16, 256, x, y, 1.0, device=dev, stream=stream)
        g.saxpy[16, 256](x, y, 1.0, device=dev, stream=stream)
        s.synchronize()
        np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(4096))
    hy = np.zeros(4096, np.float32)               # NumPy arguments: copies on the stream too
    g.saxpy.launch(16, 256, np.arange(4096, dtype=np.float32), hy, 1.0, device=dev, stream=s)
    np.testing.assert_allclose(hy, np.arange(4096))
    with s:                                        # the current stream: the warm path
        y = cp.zeros(4096, cp.float32)
        for _ in range(3):
            g.saxpy[16, 256](x, y, 1.0, device=dev)
    dev.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 3 * np.arange(4096))
    with pytest.raises(TypeError, match="stream= takes a cupy.cuda.Stream"):
        g.saxpy.launch(16, 256, x, y, 1.0, device=dev, stream="default")


def test_torch_streams(dev):
    torch = pytest.importorskip("torch")
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    y = torch.zeros(4096, dtype=torch.float32, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    g.saxpy.launch(16, 256, x, y, 1.0, device=dev, stream=stream)
    stream.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), np.arange(4096))


def test_an_error_on_one_stream_is_not_lost_when_another_stream_waits(dev):
    cp = pytest.importorskip("cupy")
    x = cp.arange(64, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    g.oob.launch(1, 64, x, cp.zeros(64, cp.float32), device=dev, stream=s)
    hy = np.zeros(1000, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="out of bounds for array 'x'"):
        g.saxpy.launch(4, 256, np.ones(1000, np.float32), hy, 1.0, device=dev)   # waits: reads every record
    dev.synchronize()


def test_preloaded_arrays_take_the_direct_warm_path(dev):
    x = np.arange(1000, dtype=np.float32)
    x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(np.ones(1000, np.float32), device=dev)
    launcher = g.saxpy[4, 256]
    for _ in range(3):
        launcher(x_dev, y_dev, 2.0, device=dev)
    assert hasattr(launcher.warm_path, "source")
    np.testing.assert_allclose(y_dev.to_host(), 1 + 3 * 2 * x)
    with pytest.raises(ValueError, match="is Mut but the array passed is read-only"):
        launcher(x_dev, x_dev, 2.0, device=dev)
