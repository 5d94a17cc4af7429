"""The OpenCL backend itself on whatever OpenCL device is here (PoCL's CPU device in CI): its source,
pyopencl arrays in place, f16 where the device has none. The launch tests every device runs are in
tests/conformance."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import opencl_clang

import cubepy as cb
from cubepy import Array, Mut, f32
from tests.kernels import saxpy

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
