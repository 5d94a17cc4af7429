"""Launch arguments are checked: every message names the kernel, the parameter and the value."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i8


@cb.kernel
def copy(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i]


@cb.kernel
def scaled(y: Mut[Array[f32]], a: i8, k: Comptime[int]):
    y[0] = y[0] * a + k


X = np.arange(64, dtype=np.float32)


def _launch_error(exc, fragment, *args, count=1, dim=32, kernel=copy):
    with pytest.raises(exc) as info:
        kernel.launch(count, dim, *args, device="interp")
    text = str(info.value)
    assert f"in kernel '{kernel.__name__}'" in text, text
    assert fragment in text, text
    return text


def test_wrong_dtype_names_the_parameter_and_the_fix():
    text = _launch_error(TypeError, "parameter 'x' expects Array[f32]", X.astype(np.float64), X.copy())
    assert "astype(np.float32)" in text


def test_not_an_array():
    _launch_error(TypeError, "parameter 'x' expects an array", [1.0, 2.0], X.copy())


def test_read_only_array_passed_as_mut():
    y = X.copy()
    y.flags.writeable = False
    _launch_error(ValueError, "parameter 'y' is Mut but the array passed is read-only", X, y)


def test_mut_argument_aliasing_another_argument():
    buf = np.zeros(128, np.float32)
    _launch_error(ValueError, "Mut argument 'y' overlaps argument 'x'", buf[:64], buf[32:96])


def test_same_array_twice_read_only_is_fine():
    @cb.kernel
    def add(a: Array[f32], b: Array[f32], out: Mut[Array[f32]]):
        out[cb.ABSOLUTE_POS] = a[cb.ABSOLUTE_POS] + b[cb.ABSOLUTE_POS]
    out = np.zeros(32, np.float32)
    add.launch(1, 32, X[:32], X[:32], out, device="interp")
    np.testing.assert_array_equal(out, 2 * X[:32])


def test_non_contiguous_array():
    _launch_error(ValueError, "not C-contiguous", X[::2], X[:32].copy())


def test_cube_dim_over_the_device_maximum():
    _launch_error(ValueError, "allows at most 1024 per cube", X, X.copy(), dim=(64, 32))


def test_cube_count_over_the_device_maximum():
    _launch_error(ValueError, "CubeCount.y = 70000 exceeds", X, X.copy(), count=(1, 70000))


def test_bad_topology_values():
    _launch_error(ValueError, "positive ints", X, X.copy(), dim=0)
    _launch_error(TypeError, "CubeDim must be", X, X.copy(), dim=2.5)


def test_shared_memory_over_the_limit():
    @cb.kernel
    def big(y: Mut[Array[f32]]):
        s = cb.SharedMemory(f32, 20000)
        s[0] = 1.0
        y[0] = s[0]
    _launch_error(ValueError, "80000 bytes of shared memory", X.copy(), kernel=big)


def test_lines_width_must_divide_the_length():
    _launch_error(ValueError, "cb.lines width 4 does not divide the last dimension 63",
                  cb.lines(X[:63], 4), cb.lines(X[:63].copy(), 4))


def test_scalar_out_of_range_and_of_wrong_kind():
    _launch_error(ValueError, "parameter 'a' is i8, whose range is [-128, 127]; got 300", X.copy(), 300, 1,
                  kernel=scaled)
    _launch_error(TypeError, "parameter 'a' expects i8, got the float 1.5", X.copy(), 1.5, 1, kernel=scaled)
    _launch_error(TypeError, "Comptime[int] parameter 'k' got float", X.copy(), 1, 1.5, kernel=scaled)


def test_argument_count():
    _launch_error(TypeError, "takes 2 arguments (x, y) but 3 were given", X, X.copy(), X.copy())
    _launch_error(TypeError, "missing argument for parameter 'y'", X)


def test_missing_annotation():
    @cb.kernel
    def bare(x):
        pass
    _launch_error(TypeError, "parameter 'x' needs a type annotation", X, kernel=bare)


def test_calling_a_kernel_directly_explains_how_to_launch():
    with pytest.raises(TypeError, match=r"copy\[cube_count, cube_dim\]"):
        copy(X, X.copy())


def test_unknown_device_and_bad_plane_size():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        cb.device("tpu")
    with pytest.raises(ValueError, match="power of two"):
        cb.device("interp", plane_dim=48)


def test_scalars_are_converted_to_the_parameter_type():
    y = np.ones(1, np.float32)
    scaled.launch(1, 1, y, np.int64(3), 2, device="interp")
    assert y[0] == 5


def test_value_dependent_checks_run_on_every_launch_not_only_the_first():
    x = np.arange(64, dtype=np.float32)
    copy.launch(2, 32, x, x.copy(), device="interp")          # warms the launch plan
    buf = np.zeros(128, np.float32)
    _launch_error(ValueError, "Mut argument 'y' overlaps argument 'x'", buf[:64], buf[32:96], count=2)
    _launch_error(ValueError, "cb.lines width 4 does not divide", cb.lines(x[:62], 2), cb.lines(x[:62].copy(), 4))
    y = np.ones(1, np.float32)
    scaled.launch(1, 1, y, 3, 2, device="interp")
    _launch_error(ValueError, "whose range is [-128, 127]; got 300", y, 300, 2, kernel=scaled)


@cb.kernel
def store_f32(y: Mut[Array[f32]], a: f32):
    y[0] = a


@pytest.mark.parametrize("value", [1e300, 3.5e38, -1e39, 10**400])
def test_a_float_scalar_that_would_overflow_its_type_is_refused_on_the_first_and_the_warm_launch(value):
    y = np.zeros(1, np.float32)
    store_f32.launch(1, 1, y, 2.5, device="interp")               # the warm path of the next launches
    for _ in range(2):
        text = _launch_error(ValueError, "parameter 'a' is f32, whose largest finite value is 3.40282e+38", y,
                             value, kernel=store_f32)
        assert "would become inf" in text
    assert y[0] == 2.5


def test_explicit_infinities_and_nans_are_float_scalars_like_any_other():
    y = np.zeros(1, np.float32)
    for value in (float("inf"), float("-inf"), 3.4e38):
        store_f32.launch(1, 1, y, value, device="interp")
        assert y[0] == np.float32(value)
    store_f32.launch(1, 1, y, float("nan"), device="interp")
    assert np.isnan(y[0])
