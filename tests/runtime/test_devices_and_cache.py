"""Devices, selection and the specialization cache."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


def test_devices_lists_every_backend_with_properties_or_a_one_line_reason():
    listed = cb.devices()
    assert [d.backend_name for d in listed if d.index in (None, 0)] == list(cb.backend_names())
    for d in listed:
        if d.available:
            p = d.properties
            assert p.plane_size_min <= p.plane_dim <= p.plane_size_max
            assert p.max_units_per_cube >= 1 and len(p.max_cube_dim) == 3 and p.shared_memory_per_cube > 0
        else:
            assert d.reason and "\n" not in d.reason
            with pytest.raises(cb.BackendUnavailableError, match=d.backend_name):
                d.require()
    assert any(d.backend_name == "interp" and d.available for d in listed)


def test_interp_plane_size_is_a_device_parameter():
    for plane in (1, 2, 8, 16, 32, 64):
        assert cb.device("interp", plane_dim=plane).properties.plane_dim == plane


def test_set_device_changes_the_default():
    before = cb.current_device()
    try:
        dev = cb.set_device("interp", plane_dim=16)
        assert cb.current_device() is dev
    finally:
        cb.set_device(before)


def test_env_var_picks_the_default_device():
    code = textwrap.dedent("""
        import cubepy as cb
        print(cb.current_device().backend_name, cb.current_device().properties.plane_dim)
    """)
    env = dict(os.environ, CUBEPY_DEVICE="interp")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["interp", "32"]


@cb.kernel
def scale(x: Array, y: Mut[Array], k: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i] * k


def test_specializations_are_cached_and_cube_count_is_not_part_of_the_key():
    dev = cb.device("interp", plane_dim=8, shape_generic=False)       # CubeDims share no code here
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    start = scale.trace_count
    scale.launch(4, 32, x, y, 2, device=dev)
    scale.launch(7, 32, x, y, 2, device=dev)                       # another CubeCount: same code
    scale.launch(2, 64, x[:50], y[:50], 2, device=dev)             # the length is not in the key
    assert scale.trace_count == start + 2                          # CubeDim 32 and 64
    scale.launch(4, 32, x, y, 3, device=dev)                       # a new comptime value
    scale.launch(4, 32, x.astype(np.float64), y.astype(np.float64), 2, device=dev)   # a new dtype
    scale.launch(4, 32, x, y, 2, device=cb.device("interp", plane_dim=16, shape_generic=False))   # a new plane size
    assert scale.trace_count == start + 5
    np.testing.assert_array_equal(y, 2 * x)


def test_ir_shows_the_specialized_kernel():
    x = np.arange(8, dtype=np.float32)
    text = scale.ir(x, x.copy(), 3, dim=8, device="interp")
    assert text.startswith("kernel scale(@x: array1d<f32>, @y: mut array1d<f32>)")
    assert "mul(" in text and "3.0:f32" in text and "report_oob" in text
    unchecked = scale.ir(x, x.copy(), 3, dim=8, device="interp", checked=False)
    assert "report_oob" not in unchecked


def test_checked_false_on_the_decorator_drops_checks():
    @cb.kernel(checked=False)
    def fast(y: Mut[Array[f32]]):
        y[cb.ABSOLUTE_POS] = 1.0
    assert "report_oob" not in fast.ir(np.zeros(4, np.float32), dim=4, device="interp")


def test_intrinsics_outside_kernels_explain_themselves():
    with pytest.raises(RuntimeError, match="only be called inside a @cb.kernel"):
        cb.sync_cube()


def test_a_reused_launcher_notices_every_change_of_argument_kind_or_device():
    launch = scale[4, 32]
    assert scale[4, 32] is launch                       # kernel[count, dim] is reused
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    launch(x, y, 2, device="interp")
    launch(x, y, 2, device="interp")
    np.testing.assert_array_equal(y, 2 * x)
    launch(x, y, 5, device="interp")                    # a new Comptime value
    np.testing.assert_array_equal(y, 5 * x)
    xd, yd = x.astype(np.float64), np.zeros(100)
    launch(xd, yd, 3, device="interp")                  # a new dtype
    np.testing.assert_array_equal(yd, 3 * xd)
    frozen = np.zeros_like(x)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="is Mut but the array passed is read-only"):
        launch(x, frozen, 5, device="interp")
    with pytest.raises(ValueError, match="overlaps"):
        launch(y, y, 5, device="interp")
    before = cb.current_device()
    try:
        cb.set_device("interp", plane_dim=8)
        launch(x, y, 7)
        launch(x, y, 7)
        cb.set_device("interp", plane_dim=16)          # another default device: another plan
        launch(x, y, 9)
        np.testing.assert_array_equal(y, 9 * x)
    finally:
        cb.set_device(before)


def test_the_device_list_prints_one_device_per_line():
    found = cb.devices()
    assert isinstance(found, list) and found
    lines = str(found).splitlines()
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == len(found) + 2
    assert all(line.startswith("  <Device ") for line in lines[1:-1])
    assert repr(found) == str(found)
