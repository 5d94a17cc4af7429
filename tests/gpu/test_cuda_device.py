"""The CUDA backend itself on a real NVIDIA GPU: device arrays (CuPy, torch, DLPack) used in place, the
warm path, threads and streams (skipped without a GPU). The launch tests every device runs are in
tests/conformance."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from tests.kernels import make_shifted, oob, saxpy


@pytest.fixture(scope="module")
def cuda_device():
    try:
        return cb.device("cuda")
    except cb.BackendUnavailableError as e:
        pytest.skip(f"no CUDA device: {e}")


def test_device_arrays_in_place(cuda_device):
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, cp.float32)
    ptr = y.data.ptr
    saxpy.launch(4, 256, x, y, 2.0, device=cuda_device)
    cuda_device.synchronize()
    assert y.data.ptr == ptr
    np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(1000) + 1)


def test_torch_cuda_tensors_in_place(cuda_device):
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    ptr = y.data_ptr()
    saxpy.launch(4, 256, x, y, 2.0, device=cuda_device)
    cuda_device.synchronize()
    assert y.data_ptr() == ptr
    np.testing.assert_allclose(y.cpu().numpy(), 2 * np.arange(1000) + 1)


def test_lines_of_device_arrays(cuda_device):
    cp = pytest.importorskip("cupy")
    x = cp.arange(1024, dtype=cp.float32)
    y = cp.ones(1024, cp.float32)
    saxpy.launch(1, 256, cb.lines(x, 4), cb.lines(y, 4), 2.0, device=cuda_device)
    cuda_device.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(1024) + 1)


def test_device_array_oob_raised_at_synchronize(cuda_device):
    cp = pytest.importorskip("cupy")
    x = cp.arange(64, dtype=cp.float32)
    y = cp.zeros(64, cp.float32)
    oob.launch(1, 64, x, y, device=cuda_device)
    with pytest.raises(cb.OutOfBoundsError, match="out of bounds for array 'x' of shape"):
        cuda_device.synchronize()
    cuda_device.synchronize()


def test_properties(cuda_device):
    p = cuda_device.properties
    assert p.plane_dim == 32 and p.max_units_per_cube >= 1024 and p.compute_units > 0
    assert p.shared_memory_per_cube >= 48 * 1024


def test_warm_launches_of_cupy_arrays_take_the_direct_path(cuda_device):
    cp = pytest.importorskip("cupy")
    x, y = cp.arange(1000, dtype=cp.float32), cp.ones(1000, cp.float32)
    launcher = saxpy[4, 256]
    launcher(x, y, 2.0, device=cuda_device)
    assert hasattr(launcher.warm_path, "source")
    for _ in range(9):
        launcher(x, y, 2.0, device=cuda_device)
    cuda_device.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 1 + 10 * 2 * np.arange(1000))


def test_warm_launches_from_several_threads(cuda_device):
    cp = pytest.importorskip("cupy")
    import threading

    launcher = saxpy[4, 256]
    launcher(cp.zeros(1000, cp.float32), cp.zeros(1000, cp.float32), 1.0, device=cuda_device)
    ys = [cp.zeros(1000, cp.float32) for _ in range(4)]
    x = cp.arange(1000, dtype=cp.float32)
    errors = []

    def work(t):
        try:
            for _ in range(50):
                launcher(x, ys[t], float(t + 1), device=cuda_device)
            cp.cuda.get_current_stream().synchronize()
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cuda_device.synchronize()
    assert not errors
    for t, y in enumerate(ys):
        np.testing.assert_allclose(cp.asnumpy(y), 50 * (t + 1) * np.arange(1000))


def test_dlpack_only_arrays_in_place(cuda_device):
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
    saxpy.launch(4, 256, DLPackOnly(x), DLPackOnly(y), 2.0, device=cuda_device)
    cuda_device.synchronize()
    assert y.data_ptr() == ptr
    np.testing.assert_allclose(y.cpu().numpy(), 2 * np.arange(1000) + 1)


def test_torch_tensors_take_the_direct_warm_path_and_cpu_tensors_stay_host_arrays(cuda_device):
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.float32, device="cuda")
    launcher = saxpy[4, 256]
    for _ in range(3):
        launcher(x, y, 2.0, device=cuda_device)
    assert hasattr(launcher.warm_path, "source")
    cuda_device.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), 1 + 3 * 2 * np.arange(1000))
    hx, hy = torch.arange(1000, dtype=torch.float32), torch.ones(1000, dtype=torch.float32)
    launcher(hx, hy, 2.0, device=cuda_device)          # CPU tensors: copied there and back, like NumPy arrays
    np.testing.assert_allclose(hy.numpy(), 1 + 2 * np.arange(1000))
    with pytest.raises(ValueError, match="not C-contiguous"):
        launcher(x[::2], y[:500], 2.0, device=cuda_device)


def test_launches_on_given_streams(cuda_device):
    cp = pytest.importorskip("cupy")
    x = cp.arange(4096, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    for stream in (s, s.ptr):
        y = cp.zeros(4096, cp.float32)
        saxpy.launch(16, 256, x, y, 1.0, device=cuda_device, stream=stream)
        saxpy[16, 256](x, y, 1.0, device=cuda_device, stream=stream)
        s.synchronize()
        np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(4096))
    hy = np.zeros(4096, np.float32)               # NumPy arguments: copies on the stream too
    saxpy.launch(16, 256, np.arange(4096, dtype=np.float32), hy, 1.0, device=cuda_device, stream=s)
    np.testing.assert_allclose(hy, np.arange(4096))
    with s:                                        # the current stream: the warm path
        y = cp.zeros(4096, cp.float32)
        for _ in range(3):
            saxpy[16, 256](x, y, 1.0, device=cuda_device)
    cuda_device.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 3 * np.arange(4096))
    with pytest.raises(TypeError, match="stream= takes a cupy.cuda.Stream"):
        saxpy.launch(16, 256, x, y, 1.0, device=cuda_device, stream="default")


def test_a_warm_launch_goes_on_the_stream_it_names(cuda_device):
    """The direct warm path sends a ``stream=`` launch to that stream (a thread-local the direct
    launchers read, not CuPy's stream context): captured into a graph on that stream, it runs only
    when the graph does."""
    cp = pytest.importorskip("cupy")
    x = cp.arange(4096, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    for stream in (s, s.ptr):
        y = cp.zeros(4096, cp.float32)
        launcher = saxpy[16, 256]
        launcher(x, y, 1.0, device=cuda_device, stream=stream)        # the full path: y = x
        s.synchronize()
        assert hasattr(launcher.warm_path, "source")
        s.begin_capture()
        launcher(x, y, 1.0, device=cuda_device, stream=stream)        # warm and direct: into the graph
        graph = s.end_capture()
        np.testing.assert_allclose(cp.asnumpy(y), np.arange(4096))     # nothing ran yet
        graph.launch(s)
        s.synchronize()
        np.testing.assert_allclose(cp.asnumpy(y), 2 * np.arange(4096))
    y = cp.zeros(4096, cp.float32)
    saxpy[16, 256](x, y, 1.0, device=cuda_device)                      # and the next launch: the current stream
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), np.arange(4096))


def test_warm_launches_alternating_between_streams_each_go_on_their_own(cuda_device):
    """The direct path remembers the last stream's handle; a launch naming another stream (or the
    first again) must still go on the stream it names: each is captured into its stream's graph."""
    cp = pytest.importorskip("cupy")
    x = cp.arange(4096, dtype=cp.float32)
    first, second = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    launcher = saxpy[16, 256]
    y = cp.zeros(4096, cp.float32)
    launcher(x, y, 1.0, device=cuda_device, stream=first)             # the full path, then warm ones
    first.synchronize()
    for rounds, stream in enumerate((second, first, second, first), start=2):
        stream.begin_capture()
        launcher(x, y, 1.0, device=cuda_device, stream=stream)
        graph = stream.end_capture()
        np.testing.assert_allclose(cp.asnumpy(y), (rounds - 1) * np.arange(4096))     # not run yet
        graph.launch(stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(y), rounds * np.arange(4096))


def test_torch_streams(cuda_device):
    torch = pytest.importorskip("torch")
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    y = torch.zeros(4096, dtype=torch.float32, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    saxpy.launch(16, 256, x, y, 1.0, device=cuda_device, stream=stream)
    stream.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), np.arange(4096))


def test_an_error_on_one_stream_is_not_lost_when_another_stream_waits(cuda_device):
    cp = pytest.importorskip("cupy")
    x = cp.arange(64, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    oob.launch(1, 64, x, cp.zeros(64, cp.float32), device=cuda_device, stream=s)
    hy = np.zeros(1000, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="out of bounds for array 'x'"):
        saxpy.launch(4, 256, np.ones(1000, np.float32), hy, 1.0, device=cuda_device)   # waits: reads every record
    cuda_device.synchronize()


def test_preloaded_arrays_take_the_direct_warm_path(cuda_device):
    x = np.arange(1000, dtype=np.float32)
    x_dev, y_dev = cb.preload(x, device=cuda_device), cb.preload_mut(np.ones(1000, np.float32), device=cuda_device)
    launcher = saxpy[4, 256]
    for _ in range(3):
        launcher(x_dev, y_dev, 2.0, device=cuda_device)
    assert hasattr(launcher.warm_path, "source")
    np.testing.assert_allclose(y_dev.to_host(), 1 + 3 * 2 * x)
    with pytest.raises(ValueError, match="is Mut but the array passed is read-only"):
        launcher(x_dev, x_dev, 2.0, device=cuda_device)


_shifted = make_shifted()


def test_launches_the_host_finds_in_bounds_and_others_through_both_paths(cuda_device):
    """Checks per launch on the GPU: the answer in the launch's parameters, through the direct warm
    path (CuPy arrays) and the full one (NumPy arrays); a launch out of bounds still reports."""
    cp = pytest.importorskip("cupy")
    x = np.arange(1003, dtype=np.float32)
    launcher = _shifted[4, 256]
    for d in (0, 3, 0, 3):                         # cold, then warm with each answer remembered
        for make in (np.asarray, cp.asarray):
            out = make(np.full(1000, np.nan, np.float32))
            launcher(out, make(x), d, device=cuda_device)
            cuda_device.synchronize()
            np.testing.assert_array_equal(cp.asnumpy(out) if make is cp.asarray else out, x[d:d + 1000])
    assert getattr(launcher.warm_path, "direct", False)
    for make in (np.asarray, cp.asarray):
        out = make(np.full(1000, np.nan, np.float32))
        with pytest.raises(cb.OutOfBoundsError, match="array 'x'"):
            launcher(out, make(x), 4, device=cuda_device)
            cuda_device.synchronize()


def test_a_launch_proven_in_bounds_runs_the_build_without_checks_and_the_others_build_the_checked_one(
        cuda_device, monkeypatch):
    """A kernel with a launch test is built with CB_LAUNCH_OK=1 at compile time; the build with
    the checks (CB_LAUNCH_OK=0) is made at the first launch the host cannot prove, by either path,
    and reports that launch's access."""
    cp = pytest.importorskip("cupy")
    # The trace index would hand this fresh kernel the executable restored for the module's
    # `_shifted` (the same source), whose checked build the test above made: with a warm disk
    # cache the first assertion below then saw two builds (an H100 run, nineteenth session).
    monkeypatch.setenv("CUBEPY_TRACE_INDEX", "0")
    x = np.arange(1003, dtype=np.float32)
    shifted = make_shifted()
    compiled = shifted.compile(cp.zeros(1000, cp.float32), cp.asarray(x), 0, dim=256, device=cuda_device)
    executable = compiled.executable
    assert executable.proven(executable.rendered.first_one_cube) is not None and len(executable.modules) == 1
    launcher = shifted[4, 256]
    for _ in range(3):                             # cold, then the direct warm path
        out = cp.full(1000, cp.nan, cp.float32)
        launcher(out, cp.asarray(x), 3, device=cuda_device)
        cuda_device.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(out), x[3:])
    assert len(executable.modules) == 1            # only the proven build ran
    for make in (cp.asarray, np.asarray):          # the warm path, then the full one
        out = make(np.full(1000, np.nan, np.float32))
        with pytest.raises(cb.OutOfBoundsError, match="array 'x'"):
            launcher(out, make(x), 5, device=cuda_device)
            cuda_device.synchronize()
    assert len(executable.modules) == 2
    src = compiled.source()
    assert "#define CB_LAUNCH_OK (cb_launch_ok != 0)" in src


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("arrays", ["cupy", "numpy"])
def test_the_profiles_device_time_lies_within_events_around_each_launch(cuda_device, arrays):
    """Whichever timer the profile uses (CUPTI's kernel records where they serve, else events), a
    long kernel's device time is at most what events just outside each launch measure, and on
    device arrays most of it (with NumPy arrays the events hold the copies too)."""
    cp = pytest.importorskip("cupy")
    n = 1 << 24
    make = cp.asarray if arrays == "cupy" else np.asarray
    x, y = make(np.random.default_rng(5).random(n, dtype=np.float32)), make(np.ones(n, np.float32))
    launcher = saxpy[n // 256, 256]
    launcher(x, y, 0.5, device=cuda_device)
    cp.cuda.Device().synchronize()
    around = []
    with cb.profile() as outer:
        launcher(x, y, 0.5, device=cuda_device)      # the timer starts here (CUPTI's start), outside the events
        with cb.profile() as p:
            for _ in range(5):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                launcher(x, y, 0.5, device=cuda_device)
                stop.record()
                around.append((start, stop))
    stop.synchronize()
    by_events = sum(cp.cuda.get_elapsed_time(a, b) for a, b in around)
    stats = p.kernels["saxpy"]
    assert stats.launches == 5 and outer.kernels["saxpy"].launches == 6
    assert (0.5 * by_events if arrays == "cupy" else 0.0) < stats.kernel_ms <= by_events * 1.01 + 0.01
