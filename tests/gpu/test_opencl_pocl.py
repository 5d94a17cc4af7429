"""The OpenCL backend itself on whatever OpenCL device is here (PoCL's CPU device in CI): its source,
pyopencl arrays in place, f16 where the device has none. The launch tests every device runs are in
tests/conformance."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import opencl_clang

import cubepy as cb
from cubepy import Array, Mut, f32
from tests.kernels import make_shifted, saxpy

pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install pyopencl pocl-binary-distribution)")


@pytest.fixture(scope="module")
def opencl_device():
    try:
        return cb.device("opencl", plane_dim=32)
    except cb.BackendUnavailableError as e:
        pytest.skip(f"no OpenCL device: {e}")


def test_source_is_opencl_c(opencl_device):
    src = saxpy.source(np.ones(8, np.float32), np.ones(8, np.float32), 1.0, device=opencl_device)
    assert "__kernel" in src and "restrict" in src and "__global const float*" in src


def test_pyopencl_arrays_are_used_in_place(opencl_device):
    import pyopencl.array as cla

    queue = opencl_device.backend.queue(opencl_device.properties)
    x = cla.to_device(queue, np.arange(256, dtype=np.float32))
    y = cla.to_device(queue, np.ones(256, np.float32))
    data = y.base_data
    saxpy.launch(1, 256, x, y, 2.0, device=opencl_device)
    opencl_device.synchronize()
    assert y.base_data is data
    np.testing.assert_allclose(y.get(), 2 * np.arange(256) + 1)
    with pytest.raises(ValueError, match="Mut argument 'y' overlaps argument 'x'"):
        saxpy.launch(1, 256, x, x, 2.0, device=opencl_device)


@cb.kernel
def halves(x: cb.Array[cb.f16], y: cb.Mut[cb.Array[cb.f16]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i] * 2.0 + y[i]


def test_f16_on_a_device_without_fp16_is_one_line_naming_the_device(opencl_device):
    if opencl_device.properties.supports("fp16"):
        pytest.skip("this OpenCL device has fp16")
    x = np.ones(8, np.float16)
    with pytest.raises(cb.CubeTypeError) as info:
        halves.launch(1, 8, x, x.copy(), device=opencl_device)
    text = str(info.value)
    assert f"the OpenCL device '{opencl_device.properties.name}' has no fp16 (cl_khr_fp16)" in text
    assert "in kernel 'halves'" in text and "error:" not in text and len(text.splitlines()) <= 4


def test_f16_lines_are_structs_of_halves_computed_element_by_element(tmp_path):
    """NVIDIA's OpenCL compiler cannot build arithmetic on half4 ("Do not know how to split the result
    of this operator!"): f16 Lines are never native half vectors (compiled here with clang for SPIR)."""
    import subprocess

    from cubepy.backends.cstyle import OPENCL, render

    x = np.ones(16, np.float16)
    ir = halves.compile(cb.lines(x, 4), cb.lines(x.copy(), 4), dim=4, device="interp").ir_module
    src = render(ir, OPENCL).source
    assert "half4" not in src and "cb_f16x4" in src
    path = tmp_path / "halves.cl"
    path.write_text(src)
    clang = opencl_clang()
    done = subprocess.run([clang, "-x", "cl", "-cl-std=CL2.0", "-target", "spir64", "-Xclang",
                           "-finclude-default-header", "-emit-llvm", "-c", str(path), "-o", f"{path}.bc"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def _fresh_scale():
    @cb.kernel
    def scale3(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] * 3.0
    return scale3


def test_a_driver_without_a_compile_cache_of_its_own_gets_programs_from_the_disk_cache(opencl_device, tmp_path,
                                                                                        monkeypatch):
    # PoCL caches compiles itself, so the disk cache is exercised here as for a driver that does not
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(opencl_device.backend._state(opencl_device.properties), "driver_caches", False)
    x = np.arange(300, dtype=np.float32)
    before = cb.compile_stats()
    for _ in range(2):                     # a new kernel object each time: traced again, its program from disk
        y = np.zeros(300, np.float32)
        _fresh_scale()[2, 256](x, y, device=opencl_device)
        np.testing.assert_array_equal(y, x * 3)
    after = cb.compile_stats()
    assert (after["compiles"] - before["compiles"], after["disk_loads"] - before["disk_loads"]) == (1, 1)
    entries = [p for p in (tmp_path / "opencl").rglob("*.clbin")]
    assert len(entries) == 1 and entries[0].stat().st_size > 0


# --- the direct warm path (pyopencl arrays) -----------------------------------------------------

@cb.kernel
def _mixed(out: Mut[Array[cb.f64]], grid: Array[cb.f64], k: cb.i8, scale: f32, big: cb.i64, flag: cb.bool_):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        row = i // grid.shape[1]
        col = i % grid.shape[1]
        v = grid[row, col] * scale + k + big
        out[i] = v if flag else -v


def _on_device(dev, host):
    import pyopencl.array as cla

    return cla.to_device(dev.backend.queue(dev.properties), host)


def test_warm_launches_of_pyopencl_arrays_take_the_direct_path_and_match_the_full_path(opencl_device):
    rng = np.random.default_rng(30)
    grid = rng.standard_normal((24, 40))
    want = np.full(grid.size, np.nan)
    launcher = _mixed[4, 256]
    launcher(want, grid, -7, 1.5, 2**40 + 3, True, device="interp")
    out_dev, grid_dev = _on_device(opencl_device, np.full(grid.size, np.nan)), _on_device(opencl_device, grid)
    for _ in range(3):                                           # cold, then warm
        launcher(out_dev, grid_dev, -7, 1.5, 2**40 + 3, True, device=opencl_device)
    assert launcher.warm_path.direct
    np.testing.assert_allclose(out_dev.get(), want, rtol=1e-6)
    launcher(out_dev, grid_dev, -7, 1.5, 2**40 + 3, False, device=opencl_device)     # warm, another value
    np.testing.assert_allclose(out_dev.get(), -want, rtol=1e-6)
    with pytest.raises(cb.ArgumentValueError, match="'k'"):    # does not fit i8: the full path's error
        launcher(out_dev, grid_dev, 300, 1.5, 2**40 + 3, True, device=opencl_device)


def test_a_warm_launch_out_of_bounds_runs_the_checked_build_and_reports(opencl_device):
    shifted = make_shifted()
    x = np.random.default_rng(31).random(1003).astype(np.float32)
    out, x_dev = _on_device(opencl_device, np.full(1000, np.nan, np.float32)), _on_device(opencl_device, x)
    launcher = shifted[4, 256]
    for _ in range(3):
        launcher(out, x_dev, 3, device=opencl_device)
    assert launcher.warm_path.direct
    np.testing.assert_array_equal(out.get(), x[3:])
    with pytest.raises(cb.OutOfBoundsError, match="array 'x'"):
        launcher(out, x_dev, 5, device=opencl_device)
        opencl_device.synchronize()
    np.testing.assert_array_equal(out.get()[:998], x[5:])


def test_an_array_at_an_offset_takes_the_full_path_which_says_why(opencl_device):
    x = _on_device(opencl_device, np.ones(512, np.float32))
    y = _on_device(opencl_device, np.ones(256, np.float32))
    launcher = saxpy[1, 256]
    for _ in range(2):
        launcher(x[:256], y, 2.0, device=opencl_device)
    with pytest.raises(ValueError, match="at offset"):
        launcher(x[256:], y, 2.0, device=opencl_device)


def test_a_warm_launch_with_stream_goes_on_that_queue(opencl_device):
    import pyopencl as cl

    queue = cl.CommandQueue(opencl_device.backend.queue(opencl_device.properties).context)
    x = _on_device(opencl_device, np.arange(256, dtype=np.float32))
    y = _on_device(opencl_device, np.zeros(256, np.float32))
    launcher = saxpy[1, 256]
    for _ in range(3):
        launcher(x, y, 1.0, device=opencl_device, stream=queue)
    queue.finish()
    np.testing.assert_array_equal(y.get(), 3 * np.arange(256, dtype=np.float32))


def test_warm_launches_from_several_threads_each_run_their_own_arguments(opencl_device):
    import sys
    from concurrent.futures import ThreadPoolExecutor

    x = np.random.default_rng(32).random(4096 + 64).astype(np.float32)
    x_dev = _on_device(opencl_device, x)
    launcher = make_shifted()[16, 256]

    def run(k: int) -> bool:
        out = _on_device(opencl_device, np.full(4096, np.nan, np.float32))
        ok = True
        for _ in range(20):
            launcher(out, x_dev, k, device=opencl_device)
            ok &= np.array_equal(out.get(), x[k:k + 4096])
        return ok

    run(0)
    assert launcher.warm_path.direct
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(4) as pool:
            assert all(pool.map(run, (0, 17, 33, 64)))
    finally:
        sys.setswitchinterval(interval)


def test_a_warm_launch_of_lines_passes_the_arrays_buffers(opencl_device):
    """Lines of pyopencl arrays on the direct path: the launcher takes each Lines' array (its
    ``owner`` slot) and passes its buffer."""
    rng = np.random.default_rng(33)
    x, y = rng.random(1024).astype(np.float32), rng.random(1024).astype(np.float32)
    x_dev, y_dev = _on_device(opencl_device, x), _on_device(opencl_device, y)
    launcher = saxpy[1, 256]
    for _ in range(3):
        launcher(cb.lines(x_dev, 4), cb.lines(y_dev, 4), 0.5, device=opencl_device)
    assert launcher.warm_path.direct
    want = y.copy()
    for _ in range(3):
        want = np.float32(0.5) * x + want
    np.testing.assert_allclose(y_dev.get(), want, rtol=1e-6)


def test_a_warm_launch_of_preloaded_arrays_passes_their_buffers(opencl_device):
    """`cb.preload` handles on the direct path: the launcher receives the pyopencl array behind
    each (``register_device_array``'s ``owner``), read-only and mutable alike."""
    rng = np.random.default_rng(34)
    x, y = rng.random(512).astype(np.float32), rng.random(512).astype(np.float32)
    x_res, y_res = cb.preload(x, device=opencl_device), cb.preload_mut(y, device=opencl_device)
    launcher = saxpy[2, 256]
    for _ in range(3):
        launcher(x_res, y_res, 2.0, device=opencl_device)
    assert launcher.warm_path.direct
    np.testing.assert_allclose(y_res.to_host(), y + 6 * x, rtol=1e-6)
