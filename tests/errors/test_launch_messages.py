"""Launch-time messages name the thing and the fix; NumPy integers work where ints do; a launch of
zero cubes is a no-op that still checks its arguments."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32
from cubepy.runtime import devices as device_registry
from tests.conftest import poisoned


@cb.kernel
def scaled(x: Array[f32], yout: Mut[Array[f32]], n: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        yout[i] = x[i] * n


def test_a_misspelt_argument_name_is_named_with_the_closest_parameter():
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(TypeError, match="unexpected argument 'yut' \\(did you mean 'yout'\\?\\); the parameters "
                                        "are x, yout, n") as info:
        scaled[1, 8](x, yut=y, n=2, device="interp")
    assert info.value.kernel == "scaled" and info.value.loc.filename == __file__


def test_an_extent_too_many_names_the_class_and_the_values():
    with pytest.raises(TypeError, match="cb.CubeDim takes up to 3 extents \\(x, y, z\\), got 4: \\(2, 2, 2, 1\\)"):
        cb.CubeDim(2, 2, 2, 1)
    with pytest.raises(TypeError, match="cb.CubeCount takes the extents x, y and z, not 'w'"):
        cb.CubeCount(w=2)


def test_an_unhashable_comptime_value_names_the_kernel_and_parameter():
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(TypeError, match="in kernel 'scaled': Comptime parameter 'n' needs a hashable value such "
                                        "as an int, got ndarray \\(a NumPy array"):
        scaled[1, 8](x, y, np.array([3]), device="interp")


def test_a_read_only_preload_handle_for_a_mut_parameter_suggests_preload_mut():
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="parameter 'yout' is Mut but the array passed is read-only; make the "
                                         "handle with cb.preload_mut"):
        scaled[1, 8](x, cb.preload(y, device="cpu"), 2, device="cpu")


def test_an_unknown_default_device_says_it_came_from_cubepy_device(monkeypatch):
    monkeypatch.setenv("CUBEPY_DEVICE", "gpu")
    monkeypatch.setattr(device_registry, "_current", None)
    with pytest.raises(ValueError, match="CUBEPY_DEVICE='gpu': unknown device 'gpu'.*unset it"):
        cb.current_device()


def test_numpy_integers_work_as_launch_sizes_comptime_values_and_scalars(dev, rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = poisoned(100, np.float32)
    scaled[np.int64(4), np.int32(32)](x, y, np.int64(3), device=dev)
    scaled.launch(cb.CubeCount(np.int16(4)), (np.int64(32),), x, y, np.int8(3), device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(y, x * 3)


def test_a_launch_of_zero_cubes_runs_nothing_and_still_checks_its_arguments(dev):
    x, y = np.ones(16, np.float32), poisoned(16, np.float32)
    for _ in range(2):                          # the full path, then the warm path
        scaled[0, 32](x, y, 2, device=dev)
        scaled[(4, 0), 32](x, y, 2, device=dev)
    dev.synchronize()
    assert np.isnan(y).all()
    with pytest.raises(TypeError, match="parameter 'x' expects Array\\[f32\\]"):
        scaled[0, 32](x.astype(np.float64), y, 2, device=dev)
    with pytest.raises(ValueError, match="CubeDim must hold positive ints"):
        scaled[1, 0](x, y, 2, device=dev)


def test_a_vendor_compiler_error_is_a_compile_error_and_a_runtime_error():
    assert issubclass(cb.ToolchainError, cb.CompileError) and issubclass(cb.ToolchainError, RuntimeError)
