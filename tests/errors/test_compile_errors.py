"""Every compile error names the kernel, the user's file:line with the source and a caret, and
subclasses the matching built-in exception."""

import re

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32

X = np.ones(64, np.float32)


def _raises(kernel, exc, fragment, args=(X,), dim=32):
    with pytest.raises(exc) as info:
        kernel.launch(1, dim, *args, device="interp")
    text = str(info.value)
    assert f"in kernel '{kernel.__name__}'" in text
    assert fragment in text, text
    assert re.search(r'File ".*test_compile_errors.py", line \d+\n    .+\n    \s*\^+', text), text
    return text


def test_writing_a_read_only_array_names_it_and_suggests_mut():
    @cb.kernel
    def k(x: Array[f32]):
        x[0] = 1.0
    text = _raises(k, TypeError, "read-only array parameter 'x'")
    assert "Mut[Array[f32]]" in text and "x[0] = 1.0" in text


def test_atomic_on_a_read_only_array():
    @cb.kernel
    def k(x: Array[f32]):
        cb.atomic_add(x, 0, 1.0)
    _raises(k, TypeError, "read-only array parameter 'x'")


def test_sync_under_a_unit_dependent_branch():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        if cb.UNIT_POS < 4:
            cb.sync_cube()
    _raises(k, cb.DivergenceError, "sync_cube() is reached by only some units")


def test_sync_after_a_unit_dependent_early_return():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        if cb.ABSOLUTE_POS >= len(x):
            return
        cb.sync_cube()
    _raises(k, cb.DivergenceError, "sync_cube()")


def test_sync_in_a_loop_with_a_unit_dependent_trip_count():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        for _ in range(cb.UNIT_POS):
            cb.sync_cube()
    _raises(k, ValueError, "sync_cube()")


def test_sync_under_a_cube_uniform_branch_is_fine():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        if cb.CUBE_POS > 0:
            cb.sync_cube()
        for _ in range(len(x)):
            cb.sync_cube()
    k.launch(2, 32, X.copy(), device="interp")


def test_plane_op_under_a_unit_dependent_branch():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        if x[cb.ABSOLUTE_POS] > 0.0:
            x[0] = cb.plane_sum(1.0)
    _raises(k, cb.DivergenceError, "plane_sum() is reached by only some units of a plane", args=(X.copy(),))


def test_undefined_name():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        x[0] = undefined_thing  # noqa: F821
    _raises(k, NameError, "name 'undefined_thing' is not defined", args=(X.copy(),))


def test_unsupported_syntax():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        with open("f"):
            pass
    _raises(k, SyntaxError, "'With' statements are not supported", args=(X.copy(),))


def test_wrong_number_of_indices():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        x[0, 1] = 1.0
    _raises(k, IndexError, "array 'x' has 1 dimension but is indexed with 2", args=(X.copy(),))


def test_negative_constant_index():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        x[-1] = 1.0
    _raises(k, IndexError, "write len(x) - 1", args=(X.copy(),))


def test_float_index():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        x[x[0]] = 1.0
    _raises(k, TypeError, "index must be an integer scalar", args=(X.copy(),))


def test_storing_a_float_into_an_int_array_needs_a_cast():
    @cb.kernel
    def k(x: Mut[Array[i32]]):
        x[0] = 1.5
    _raises(k, TypeError, "convert explicitly", args=(np.zeros(4, np.int32),))


def test_static_shared_memory_size_is_required():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        s = cb.SharedMemory(f32, len(x))
        s[0] = 1.0
    _raises(k, ValueError, "size must be a positive int known at compile time", args=(X.copy(),))


def test_static_index_past_shared_memory():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        s = cb.SharedMemory(f32, 8)
        s[8] = 1.0
    _raises(k, IndexError, "out of bounds", args=(X.copy(),))


def test_line_element_out_of_range():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        v = x[0]
        x[0] = v[4]
    with pytest.raises(IndexError, match="Line element 4 is out of range for a Line of width 4"):
        k.launch(1, 1, cb.lines(X.copy(), 4), device="interp")


def test_calling_a_plain_python_function_with_runtime_values():
    def helper(v):
        return v + 1

    @cb.kernel
    def k(x: Mut[Array[f32]]):
        x[0] = helper(x[1])
    _raises(k, TypeError, "decorate it with @cb.func", args=(X.copy(),))


def test_returning_a_value_from_a_kernel():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        return 1
    _raises(k, SyntaxError, "kernels return nothing", args=(X.copy(),))


def test_incompatible_line_widths():
    @cb.kernel
    def k(x: Array[f32], y: Mut[Array[f32]]):
        y[0] = x[0] + y[0]
    with pytest.raises(TypeError, match="Line widths differ"):
        k.launch(1, 1, cb.lines(X, 4), cb.lines(np.ones(64, np.float32), 2), device="interp")


def test_break_outside_a_loop_and_bitwise_on_floats():
    @cb.kernel
    def k(x: Mut[Array[f32]]):
        x[0] = x[1] & x[2]
    _raises(k, TypeError, "bitwise '&' needs integer or bool operands", args=(X.copy(),))


def test_a_name_bound_to_an_array_under_a_runtime_branch():
    @cb.kernel
    def k(x: Mut[Array[f32]], y: Mut[Array[f32]]):
        a = x
        if x[0] > 0.0:
            a = y
        a[0] = 1.0
    _raises(k, TypeError, "rebound", args=(X.copy(), X.copy()))
