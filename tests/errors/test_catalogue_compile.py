"""The bad-input catalogue, kernels cubepy refuses to compile: each case names its error class and
what its message must say; `catalogue.check` also asserts the kernel's name, the user's line with
a caret, and that no memory changed. Run on every device (tracing is the same, the backends add
their own checks)."""

from __future__ import annotations

import math
import random
import time

import numpy as np
import pytest

import cubepy as cb
from cubepy import (
    Array,
    Comptime,
    CubeIndexError,
    CubeNameError,
    CubeSyntaxError,
    CubeTypeError,
    CubeValueError,
    DivergenceError,
    Linear1D,
    Mut,
    Region,
    Tile2D,
    f16,
    f32,
    i32,
    i64,
    u8,
    u32,
    u64,
)

from .catalogue import Bad, check

F = np.arange(64, dtype=np.float32)


def f32s(n=64):
    return np.linspace(-2, 2, n).astype(np.float32)


def ints(n=64, dtype=np.int32):
    return (np.arange(n) % 7).astype(dtype)


# --- writes, indices, arrays --------------------------------------------------------------

@cb.kernel
def write_read_only(x: Array[f32]):
    x[0] = 1.0


@cb.kernel
def atomic_read_only(x: Array[f32]):
    cb.atomic_add(x, 0, 1.0)


@cb.kernel
def too_many_indices(x: Mut[Array[f32]]):
    x[0, 1] = 1.0


@cb.kernel
def negative_literal_index(x: Mut[Array[f32]]):
    x[-1] = 1.0


@cb.kernel
def float_index(x: Mut[Array[f32]]):
    x[x[0]] = 1.0


@cb.kernel
def float_literal_index(x: Mut[Array[f32]]):
    x[1.5] = 1.0


@cb.kernel
def index_beyond_any_array(x: Mut[Array[f32]]):
    x[2**32 + 5] = 1.0


@cb.kernel
def string_index(x: Mut[Array[f32]]):
    x["a"] = 1.0


@cb.kernel
def static_index_past_shared(x: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, 8)
    s[8] = 1.0
    x[0] = s[0]


@cb.kernel
def slice_of_array(x: Mut[Array[f32]]):
    x[0] = x[1:3]


@cb.kernel
def float_into_int_array(x: Mut[Array[i32]], y: Array[f32]):
    x[0] = y[0]


@cb.kernel
def float_literal_into_int_array(x: Mut[Array[i32]]):
    x[0] = 1.5


@cb.kernel
def float_into_bool_array(x: Mut[Array[cb.bool_]], y: Array[f32]):
    x[0] = y[0]


@cb.kernel
def line_into_scalar_array(x: Mut[Array[f32]], y: Array[f32]):
    x[0] = y[0]


@cb.kernel
def array_attribute(x: Mut[Array[f32]]):
    x[0] = x.size


@cb.kernel
def value_attribute(x: Mut[Array[f32]]):
    v = x[0]
    x[0] = v.real


@cb.kernel
def arithmetic_on_an_array(x: Mut[Array[f32]]):
    x[0] = x + 1.0


@cb.kernel
def truth_of_an_array(x: Mut[Array[f32]]):
    if x:
        x[0] = 1.0


@cb.kernel
def compare_an_array(x: Mut[Array[f32]]):
    if x < 1.0:
        x[0] = 1.0


@cb.kernel
def item_assignment_to_a_tuple(x: Mut[Array[f32]]):
    t = (1.0, 2.0)
    t[0] = x[0]
    x[0] = t[1]


@cb.kernel
def tuple_with_runtime_index(x: Mut[Array[f32]], k: i32):
    t = (1.0, 2.0)
    x[0] = t[k]


@cb.kernel
def indexing_a_number(x: Mut[Array[f32]]):
    v = 3.0
    x[0] = v[0]


@cb.kernel
def array_rebound_under_runtime_branch(x: Mut[Array[f32]], y: Mut[Array[f32]]):
    a = x
    if x[0] > 0.0:
        a = y
    a[0] = 1.0


@cb.kernel
def unpack_mismatch(x: Mut[Array[f32]]):
    a, b = 1.0, 2.0, 3.0
    x[0] = a + b


# --- shared, local, lines --------------------------------------------------------------------

@cb.kernel
def shared_size_not_static(x: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, len(x))
    s[0] = 1.0
    x[0] = s[0]


@cb.kernel
def shared_size_zero(x: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, 0)
    x[0] = s[0]


@cb.kernel
def shared_without_dtype(x: Mut[Array[f32]]):
    s = cb.SharedMemory(256)
    x[0] = s[0]


@cb.kernel
def local_size_runtime(x: Mut[Array[f32]], n: i32):
    s = cb.LocalArray(f32, n)
    x[0] = s[0]


@cb.kernel
def line_element_out_of_range(x: Mut[Array[f32]]):
    v = x[0]
    x[0] = v[4]


@cb.kernel
def line_element_runtime_index(x: Mut[Array[f32]], k: i32):
    v = x[0]
    x[0] = v[k]


@cb.kernel
def line_widths_differ(x: Array[f32], y: Mut[Array[f32]]):
    y[0] = x[0] + y[0]


@cb.kernel
def if_on_a_line(x: Mut[Array[f32]]):
    v = x[0]
    if v > 0.0:
        x[0] = v


@cb.kernel
def while_on_a_line(x: Mut[Array[f32]]):
    v = x[0]
    while v > 100.0:
        v = v - 1.0
    x[0] = v


@cb.kernel
def and_of_lines(x: Mut[Array[f32]]):
    v = x[0]
    x[0] = cb.select((v > 0.0) and (v < 1.0), v, v)


@cb.kernel
def ballot_of_a_line(x: Mut[Array[f32]], b: Mut[Array[u64]]):
    b[0] = cb.plane_ballot(x[0] > 0.0)


@cb.kernel
def select_width_mismatch(x: Mut[Array[f32]], y: Array[f32]):
    x[0] = cb.select(y[0] > 0.0, x[0], x[0])


# --- types, literals and folding -------------------------------------------------------------

@cb.kernel
def bitwise_and_on_floats(x: Mut[Array[f32]]):
    x[0] = x[1] & x[2]


@cb.kernel
def invert_a_float(x: Mut[Array[f32]]):
    x[0] = ~x[1]


@cb.kernel
def shift_a_float(x: Mut[Array[f32]]):
    x[0] = x[1] << 2


@cb.kernel
def u64_with_signed(x: Array[u64], y: Array[i32], out: Mut[Array[i64]]):
    out[0] = i64(x[0] + y[0])


@cb.kernel
def literal_too_big_for_the_array(yout: Mut[Array[i32]]):
    yout[cb.ABSOLUTE_POS] = 3000000000


@cb.kernel
def literal_too_big_for_the_operand(x: Array[u8], out: Mut[Array[u8]]):
    out[0] = x[0] + 300


@cb.kernel
def negative_literal_with_unsigned(x: Array[u32], out: Mut[Array[u32]]):
    out[0] = x[0] * -1


@cb.kernel
def float_literal_overflows_f16(x: Array[f16], out: Mut[Array[f16]]):
    out[0] = x[0] * 1e6


@cb.kernel
def literal_beyond_i64(out: Mut[Array[i64]]):
    out[0] = i64(out[0]) + 2**70


@cb.kernel
def integer_to_a_negative_power(x: Array[i32], out: Mut[Array[i32]]):
    out[0] = x[0] ** -2


@cb.kernel
def cast_with_a_non_dtype(x: Mut[Array[f32]]):
    x[0] = cb.cast(x[0], "float32")


@cb.kernel
def dtype_call_with_two_arguments(x: Mut[Array[f32]]):
    x[0] = f32(x[0], x[1])


@cb.kernel
def math_function_arity(x: Mut[Array[f32]]):
    x[0] = cb.sqrt(x[0], x[1])


@cb.kernel
def min_of_one_value(x: Mut[Array[f32]]):
    x[0] = cb.min(x[0])


@cb.kernel
def select_arity(x: Mut[Array[f32]]):
    x[0] = cb.select(x[0] > 0.0, x[0])


@cb.kernel
def annotation_not_a_dtype(x: Mut[Array[f32]]):
    v: int = 1
    x[0] = v


@cb.kernel
def annotation_without_value(x: Mut[Array[f32]]):
    v: f32  # noqa: F842
    x[0] = 1.0


@cb.kernel
def variable_holds_an_incompatible_line(x: Array[f32], y: Array[f32], out: Mut[Array[f32]]):
    v = x[0]
    if x[0][0] > 0.0:
        v = y[0]
    out[0] = v


@cb.kernel
def bool_of_array_element_compare_string(x: Mut[Array[f32]]):
    if x[0] == "a":
        x[0] = 1.0


# --- names, purity, unbound --------------------------------------------------------------------

@cb.kernel
def undefined_name(x: Mut[Array[f32]]):
    x[0] = undefined_thing  # noqa: F821


@cb.kernel
def unknown_cubepy_name(x: Mut[Array[f32]]):
    x[0] = cb.nonexistent_intrinsic(x[0])


@cb.kernel
def random_at_trace_time(yout: Mut[Array[f32]]):
    yout[cb.ABSOLUTE_POS] = random.random()


@cb.kernel
def clock_at_trace_time(yout: Mut[Array[f32]]):
    yout[0] = time.time()


_state = [0]


def _impure(k):
    _state[0] += 1
    return k + _state[0]


@cb.kernel
def user_function_at_trace_time(yout: Mut[Array[f32]], k: Comptime[int]):
    yout[0] = f32(_impure(k))


@cb.kernel
def plain_function_with_runtime_values(x: Mut[Array[f32]]):
    x[0] = _impure(x[1])


@cb.kernel
def math_module_function(x: Mut[Array[f32]]):
    x[0] = math.sqrt(x[1])


@cb.kernel
def numpy_function(x: Mut[Array[f32]]):
    x[0] = np.maximum(x[1], x[2])


@cb.kernel
def numpy_function_cubepy_lacks(x: Mut[Array[f32]]):
    x[0] = np.arctan2(x[1], x[2])


@cb.kernel
def print_an_array(x: Mut[Array[f32]]):
    print("x is", x)


@cb.kernel
def print_to_a_file(x: Mut[Array[f32]]):
    print("x is", x[0], file=None)


@cb.kernel
def print_with_a_format_spec_for_another_type(x: Mut[Array[f32]]):
    print(f"x is {x[0]:d}")


@cb.kernel
def print_with_a_runtime_format_spec(x: Mut[Array[f32]], w: i32):
    print(f"x is {x[0]:{w}}")


@cb.kernel
def format_string_stored_in_an_array(x: Mut[Array[f32]]):
    x[0] = f"{x[1]}"


@cb.kernel
def possibly_unbound_after_if(x: Array[f32], yout: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if x[i] > 0.5:
        v = 1.0
    yout[i] = v


@cb.kernel
def possibly_unbound_after_elif(x: Array[f32], yout: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if x[i] > 0.5:
        v = 1.0
    elif x[i] < -0.5:
        v = 2.0
    yout[i] = v


@cb.kernel
def possibly_unbound_after_loop(x: Array[f32], yout: Mut[Array[f32]], n: i32):
    i = cb.ABSOLUTE_POS
    for k in range(n):
        v = x[k]
    yout[i] = v


@cb.kernel
def possibly_unbound_after_while(x: Array[f32], yout: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    while x[i] > 10.0:
        w = x[i]
    yout[i] = w


@cb.kernel
def compile_time_value_under_runtime_condition(x: Array[f32], yout: Mut[Array[f32]]):
    mode = "a"
    if x[0] > 0.0:
        mode = "b"
    yout[0] = 1.0 if mode == "a" else 2.0


# --- control flow ------------------------------------------------------------------------------

@cb.kernel
def sync_under_unit_branch(x: Mut[Array[f32]]):
    if cb.UNIT_POS < 4:
        cb.sync_cube()


@cb.kernel
def sync_after_unit_return(x: Mut[Array[f32]]):
    if cb.ABSOLUTE_POS >= len(x):
        return
    cb.sync_cube()


@cb.kernel
def sync_in_unit_trip_count_loop(x: Mut[Array[f32]]):
    for _ in range(cb.UNIT_POS):
        cb.sync_cube()


@cb.kernel
def sync_after_unit_break(x: Mut[Array[f32]]):
    for k in range(4):
        if cb.UNIT_POS == k:
            break
        cb.sync_cube()


@cb.kernel
def plane_op_under_unit_branch(x: Mut[Array[f32]]):
    if x[cb.ABSOLUTE_POS] > 0.0:
        x[0] = cb.plane_sum(1.0)


@cb.kernel
def plane_op_under_shifted_plane_index(x: Mut[Array[f32]]):
    if (cb.UNIT_POS + 1) // cb.PLANE_DIM == 0:
        x[0] = cb.plane_max(x[1])


@cb.kernel
def plane_op_after_unit_return(x: Mut[Array[f32]]):
    if cb.UNIT_POS_PLANE == 3:
        return
    x[cb.ABSOLUTE_POS] = cb.plane_sum(1.0)


@cb.kernel
def runtime_break_in_unrolled_loop(x: Mut[Array[f32]]):
    for k in cb.unroll(range(4)):
        if x[k] > 0.0:
            break
        x[k] = 1.0


@cb.kernel
def unroll_with_runtime_bound(x: Mut[Array[f32]], n: i32):
    for k in cb.unroll(range(n)):
        x[k] = 1.0


@cb.kernel
def range_step_zero(x: Mut[Array[f32]]):
    for k in range(0, 4, 0):
        x[k] = 1.0


@cb.kernel
def range_float_bound(x: Mut[Array[f32]]):
    for k in range(2.5):
        x[k] = 1.0


@cb.kernel
def range_i64_bound(x: Mut[Array[f32]], n: i64):
    for k in range(n):
        x[k] = 1.0


@cb.kernel
def range_literal_too_big(x: Mut[Array[f32]]):
    for k in range(2**40):
        x[k % 4] = 1.0


@cb.kernel
def loop_over_an_array(x: Mut[Array[f32]]):
    for v in x:
        x[0] = v


@cb.kernel
def for_else(x: Mut[Array[f32]]):
    for k in range(4):
        x[k] = 1.0
    else:
        x[0] = 2.0


@cb.kernel
def while_else(x: Mut[Array[f32]]):
    while x[0] > 1.0:
        x[0] = x[0] - 1.0
    else:
        x[1] = 0.0


@cb.kernel
def runtime_assert(x: Mut[Array[f32]]):
    assert x[0] > 0.0


@cb.kernel
def failing_compile_time_assert(x: Mut[Array[f32]], k: Comptime[int]):
    assert k > 2
    x[0] = 1.0


@cb.kernel
def compile_time_loop_forever(x: Mut[Array[f32]]):
    n = 1
    while n > 0:
        n += 1
    x[0] = 1.0


@cb.kernel
def with_statement(x: Mut[Array[f32]]):
    with open("f"):
        pass


@cb.kernel
def try_statement(x: Mut[Array[f32]]):
    try:
        x[0] = 1.0
    except Exception:
        pass


@cb.kernel
def lambda_expression(x: Mut[Array[f32]]):
    f = lambda v: v + 1.0  # noqa: E731
    x[0] = f(x[0])


@cb.kernel
def list_comprehension(x: Mut[Array[f32]]):
    x[0] = [v for v in (1.0, 2.0)][0]


@cb.kernel
def star_args_call(x: Mut[Array[f32]]):
    t = (1.0, 2.0)
    x[0] = cb.max(*t)


@cb.kernel
def double_star_call(x: Mut[Array[f32]]):
    d = {"a": 1.0}
    x[0] = cb.max(**d)


@cb.kernel
def is_comparison_at_runtime(x: Mut[Array[f32]]):
    if x[0] is None:
        x[0] = 1.0


@cb.kernel
def in_comparison_at_runtime(x: Mut[Array[f32]]):
    if x[0] in (1.0, 2.0):
        x[0] = 1.0


@cb.kernel
def kernel_returns_a_value(x: Mut[Array[f32]]):
    return 1


# --- functions, atomics, regions, plane ops ----------------------------------------------------

@cb.kernel
def callee_kernel(x: Mut[Array[f32]]):
    x[0] = 1.0


@cb.kernel
def kernel_calls_a_kernel(x: Mut[Array[f32]]):
    callee_kernel(x)


@cb.func
def returns_under_condition(v):
    if v > 0.0:
        return v
    return -v


@cb.kernel
def func_returns_under_runtime_condition(x: Mut[Array[f32]]):
    x[0] = returns_under_condition(x[1])


@cb.func
def recurse(v, n):
    return recurse(v, n + 1)


@cb.kernel
def func_recurses_forever(x: Mut[Array[f32]]):
    x[0] = recurse(x[1], 0)


@cb.func
def two_arguments(a, b):
    return a + b


@cb.kernel
def func_called_with_wrong_arguments(x: Mut[Array[f32]]):
    x[0] = two_arguments(x[0])


@cb.kernel
def atomic_on_a_line_array(x: Mut[Array[f32]]):
    cb.atomic_add(x, 0, 1.0)


@cb.kernel
def atomic_and_on_floats(x: Mut[Array[f32]]):
    cb.atomic_and(x, 0, 1.0)


@cb.kernel
def atomic_on_a_number(x: Mut[Array[f32]]):
    cb.atomic_add(3.0, 0, 1.0)


@cb.kernel
def atomic_arity(x: Mut[Array[i32]]):
    cb.atomic_add(x, 0)


@cb.kernel
def region_indexed_with_two(r: Region[f32, Linear1D]):
    r[0, 1] = 1.0


@cb.kernel
def region_offset_attribute(r: Region[f32, Linear1D], x: Array[f32]):
    for j in range(len(r)):
        r[j] = x[r.offset + j]


@cb.kernel
def region_strategy_of_other_rank(r: Region[f32, Tile2D(4, 4)]):
    r[0, 0] = 1.0


@cb.kernel
def plane_op_arity(x: Mut[Array[f32]]):
    x[0] = cb.plane_shuffle(x[0])


@cb.kernel
def plane_ops_in_a_loop_under_a_plane_condition(x: Mut[Array[f32]], n: i32):
    if cb.UNIT_POS // cb.PLANE_DIM == 1:          # plane-uniform: fine where plane ops are shuffles
        for _ in range(n):
            x[cb.ABSOLUTE_POS] = cb.plane_shuffle_up(x[cb.ABSOLUTE_POS], 1)


CASES = [
    Bad("write_read_only", write_read_only, lambda: [F.copy()], CubeTypeError,
        ("read-only array parameter 'x'", "Mut[Array[f32]]", "x[0] = 1.0")),
    Bad("atomic_read_only", atomic_read_only, lambda: [F.copy()], CubeTypeError, ("atomic_add", "'x'", "Mut[")),
    Bad("too_many_indices", too_many_indices, lambda: [F.copy()], CubeIndexError,
        ("array 'x' has 1 dimension but is indexed with 2",)),
    Bad("negative_literal_index", negative_literal_index, lambda: [F.copy()], CubeIndexError,
        ("negative index -1 into array 'x'", "write len(x) - 1")),
    Bad("float_index", float_index, lambda: [F.copy()], CubeTypeError,
        ("array 'x' index must be an integer scalar, got f32",)),
    Bad("float_literal_index", float_literal_index, lambda: [F.copy()], CubeTypeError,
        ("array 'x' index must be an integer, got 1.5",)),
    Bad("index_beyond_any_array", index_beyond_any_array, lambda: [F.copy()], CubeIndexError,
        ("index 4294967301 into array 'x' can never be in bounds",)),
    Bad("string_index", string_index, lambda: [F.copy()], CubeTypeError, ("array 'x' index must be an integer",)),
    Bad("static_index_past_shared", static_index_past_shared, lambda: [F.copy()], CubeIndexError,
        ("index 8 is out of bounds for 's'",)),
    Bad("slice_of_array", slice_of_array, lambda: [F.copy()], CubeSyntaxError, ("slices are not supported",)),
    Bad("float_into_int_array", float_into_int_array, lambda: [ints(), f32s()], CubeTypeError,
        ("array 'x' has type i32 but the value is f32", "i32(value)")),
    Bad("float_literal_into_int_array", float_literal_into_int_array, lambda: [ints()], CubeTypeError,
        ("array 'x' has type i32 but the value is the float 1.5",)),
    Bad("float_into_bool_array", float_into_bool_array, lambda: [np.zeros(64, bool), f32s()], CubeTypeError,
        ("array 'x' has type bool_ but the value is f32",)),
    Bad("line_into_scalar_array", line_into_scalar_array, lambda: [F.copy(), cb.lines(f32s(), 4)], CubeTypeError,
        ("array 'x' holds f32 but the value is line<f32x4>",)),
    Bad("array_attribute", array_attribute, lambda: [F.copy()], CubeTypeError,
        (".shape, .ndim and .dtype, not .size",)),
    Bad("value_attribute", value_attribute, lambda: [F.copy()], CubeTypeError, ("has no attribute 'real'",)),
    Bad("arithmetic_on_an_array", arithmetic_on_an_array, lambda: [F.copy()], CubeTypeError,
        ("unsupported operand ArrayRef",)),
    Bad("truth_of_an_array", truth_of_an_array, lambda: [F.copy()], CubeTypeError, ("has no truth value",)),
    Bad("compare_an_array", compare_an_array, lambda: [F.copy()], CubeTypeError,
        ("cannot compare ArrayRef (an array)", "x[i] < 1.0")),
    Bad("item_assignment_to_a_tuple", item_assignment_to_a_tuple, lambda: [F.copy()], CubeTypeError,
        ("does not support item assignment",)),
    Bad("tuple_with_runtime_index", tuple_with_runtime_index, lambda: [F.copy(), 1], CubeTypeError,
        ("a tuple can only be indexed by a compile-time int",)),
    Bad("indexing_a_number", indexing_a_number, lambda: [F.copy()], CubeTypeError, ("cannot be indexed",)),
    Bad("array_rebound_under_runtime_branch", array_rebound_under_runtime_branch, lambda: [F.copy(), F.copy()],
        CubeTypeError, ("'a' is rebound to a different ArrayRef under a runtime condition",)),
    Bad("unpack_mismatch", unpack_mismatch, lambda: [F.copy()], CubeTypeError, ("cannot unpack tuple into 2 names",)),
    Bad("shared_size_not_static", shared_size_not_static, lambda: [F.copy()], CubeValueError,
        ("SharedMemory size must be a positive int known at compile time",)),
    Bad("shared_size_zero", shared_size_zero, lambda: [F.copy()], CubeValueError,
        ("SharedMemory size must be a positive int", "got 0")),
    Bad("shared_without_dtype", shared_without_dtype, lambda: [F.copy()], CubeTypeError,
        ("SharedMemory takes (dtype, size)", "cb.SharedMemory(cb.f32, 256)")),
    Bad("local_size_runtime", local_size_runtime, lambda: [F.copy(), 4], CubeValueError,
        ("LocalArray size must be a positive int known at compile time",)),
    Bad("line_element_out_of_range", line_element_out_of_range, lambda: [cb.lines(f32s(), 4)], CubeIndexError,
        ("Line element 4 is out of range for a Line of width 4",), dim=1),
    Bad("line_element_runtime_index", line_element_runtime_index, lambda: [cb.lines(f32s(), 4), 1], CubeTypeError,
        ("a Line element index must be a compile-time int",), dim=1),
    Bad("line_widths_differ", line_widths_differ, lambda: [cb.lines(f32s(), 4), cb.lines(f32s(), 2)],
        CubeTypeError, ("cannot combine line<f32x4> with line<f32x2>: Line widths differ",), dim=1),
    Bad("if_on_a_line", if_on_a_line, lambda: [cb.lines(f32s(), 4)], CubeTypeError,
        ("a condition must be a single value, but this is a line<bool_x4>", "cb.select"), dim=1),
    Bad("while_on_a_line", while_on_a_line, lambda: [cb.lines(f32s(), 4)], CubeTypeError,
        ("a condition must be a single value, but this is a line<bool_x4>",), dim=1),
    Bad("and_of_lines", and_of_lines, lambda: [cb.lines(f32s(), 4)], CubeTypeError,
        ("a condition must be a single value",), dim=1),
    Bad("ballot_of_a_line", ballot_of_a_line, lambda: [cb.lines(f32s(), 4), np.zeros(4, np.uint64)], CubeTypeError,
        ("a condition must be a single value",), dim=1),
    Bad("select_width_mismatch", select_width_mismatch, lambda: [cb.lines(f32s(), 4), cb.lines(f32s(), 2)],
        CubeTypeError, ("select condition of width 2 does not match line<f32x4>",), dim=1),
    Bad("bitwise_and_on_floats", bitwise_and_on_floats, lambda: [F.copy()], CubeTypeError,
        ("bitwise '&' needs integer or bool operands, got f32",)),
    Bad("invert_a_float", invert_a_float, lambda: [F.copy()], CubeTypeError, ("'~' needs an integer or bool operand",)),
    Bad("shift_a_float", shift_a_float, lambda: [F.copy()], CubeTypeError, ("bitwise '<<' needs integer",)),
    Bad("u64_with_signed", u64_with_signed, lambda: [ints(dtype=np.uint64), ints(), np.zeros(64, np.int64)],
        CubeTypeError, ("no implicit common type for u64 and i32; cast one of them explicitly",)),
    Bad("literal_too_big_for_the_array", literal_too_big_for_the_array, lambda: [ints()], CubeValueError,
        ("the integer 3000000000 does not fit i32", "array 'yout'", "i32(3000000000)")),
    Bad("literal_too_big_for_the_operand", literal_too_big_for_the_operand, lambda: [ints(dtype=np.uint8),
        ints(dtype=np.uint8)], CubeValueError, ("the integer 300 does not fit u8 (range [0, 255])",)),
    Bad("negative_literal_with_unsigned", negative_literal_with_unsigned, lambda: [ints(dtype=np.uint32),
        ints(dtype=np.uint32)], CubeValueError, ("the integer -1 does not fit u32",)),
    Bad("float_literal_overflows_f16", float_literal_overflows_f16, lambda: [np.ones(64, np.float16),
        np.ones(64, np.float16)], CubeValueError, ("the number 1000000.0 overflows f16",), devices=("interp", "cpu")),
    Bad("literal_beyond_i64", literal_beyond_i64, lambda: [np.zeros(4, np.int64)], CubeValueError,
        ("the integer 1180591620717411303424 does not fit i64",)),
    Bad("integer_to_a_negative_power", integer_to_a_negative_power, lambda: [ints(), ints()], CubeValueError,
        ("an integer to the negative power -2 is a fraction", "f32(x) ** -2")),
    Bad("cast_with_a_non_dtype", cast_with_a_non_dtype, lambda: [F.copy()], CubeTypeError,
        ("cast(value, dtype) needs a cubepy dtype, got 'float32'",)),
    Bad("dtype_call_with_two_arguments", dtype_call_with_two_arguments, lambda: [F.copy()], CubeTypeError,
        ("f32(value) takes one argument",)),
    Bad("math_function_arity", math_function_arity, lambda: [F.copy()], CubeTypeError,
        ("sqrt() takes 1 argument, got 2",)),
    Bad("min_of_one_value", min_of_one_value, lambda: [F.copy()], CubeTypeError,
        ("min() inside kernels takes two or more values",)),
    Bad("select_arity", select_arity, lambda: [F.copy()], CubeTypeError, ("select() takes 3 arguments, got 2",)),
    Bad("annotation_not_a_dtype", annotation_not_a_dtype, lambda: [F.copy()], CubeSyntaxError,
        ("an annotated assignment in a kernel declares a variable: name: dtype = value",)),
    Bad("annotation_without_value", annotation_without_value, lambda: [F.copy()], CubeSyntaxError,
        ("variable 'v' must be given a value",)),
    Bad("variable_holds_an_incompatible_line", variable_holds_an_incompatible_line,
        lambda: [cb.lines(f32s(), 4), cb.lines(f32s(), 2), cb.lines(f32s(), 4)], CubeTypeError,
        ("variable 'v' holds line<f32x4>; cannot assign a line<f32x2>",), dim=1),
    Bad("bool_of_array_element_compare_string", bool_of_array_element_compare_string, lambda: [F.copy()],
        CubeTypeError, ("cannot compare str",)),
    Bad("undefined_name", undefined_name, lambda: [F.copy()], CubeNameError,
        ("name 'undefined_thing' is not defined",)),
    Bad("unknown_cubepy_name", unknown_cubepy_name, lambda: [F.copy()], CubeNameError,
        ("has no attribute 'nonexistent_intrinsic'",)),
    Bad("random_at_trace_time", random_at_trace_time, lambda: [F.copy()], CubeTypeError,
        ("'random.Random.random' is called while the kernel is compiled", "pass it as a parameter")),
    Bad("clock_at_trace_time", clock_at_trace_time, lambda: [F.copy()], CubeTypeError,
        ("'time.time' is called while the kernel is compiled",)),
    Bad("user_function_at_trace_time", user_function_at_trace_time, lambda: [F.copy(), 3], CubeTypeError,
        ("'_impure' is called while the kernel is compiled", "@cb.func")),
    Bad("plain_function_with_runtime_values", plain_function_with_runtime_values, lambda: [F.copy()], CubeTypeError,
        ("'_impure' is not a cubepy function", "decorate it with @cb.func")),
    Bad("math_module_function", math_module_function, lambda: [F.copy()], CubeTypeError,
        ("'math.sqrt' is not a cubepy function", "use cb.sqrt(...) instead")),
    Bad("numpy_function", numpy_function, lambda: [F.copy()], CubeTypeError,
        ("'numpy.maximum' is not a cubepy function", "use cb.max(...) instead")),
    Bad("numpy_function_cubepy_lacks", numpy_function_cubepy_lacks, lambda: [F.copy()], CubeTypeError,
        ("'numpy.arctan2' is not a cubepy function", "cubepy has no arctan2", "@cb.func")),
    Bad("print_an_array", print_an_array, lambda: [F.copy()], CubeTypeError,
        ("cannot format the array 'x'", "print its elements")),
    Bad("print_to_a_file", print_to_a_file, lambda: [F.copy()], CubeTypeError,
        ("print(..., file=...)", "sys.stdout", "redirect_stdout")),
    Bad("print_with_a_format_spec_for_another_type", print_with_a_format_spec_for_another_type,
        lambda: [F.copy()], CubeValueError, ("format spec 'd' does not apply to a value of type f32",)),
    Bad("print_with_a_runtime_format_spec", print_with_a_runtime_format_spec, lambda: [F.copy(), 3],
        CubeTypeError, ("format spec in a kernel's f-string must be known at compile time",)),
    Bad("format_string_stored_in_an_array", format_string_stored_in_an_array, lambda: [F.copy()],
        CubeTypeError, ("f-string",)),
    Bad("possibly_unbound_after_if", possibly_unbound_after_if, lambda: [f32s(), F.copy()], CubeNameError,
        ("'v' may be unbound here", "only on some paths through the if", "UnboundLocalError")),
    Bad("possibly_unbound_after_elif", possibly_unbound_after_elif, lambda: [f32s(), F.copy()], CubeNameError,
        ("'v' may be unbound here",)),
    Bad("possibly_unbound_after_loop", possibly_unbound_after_loop, lambda: [f32s(), F.copy(), 3], CubeNameError,
        ("'v' may be unbound here", "loop", "which may run zero times")),
    Bad("possibly_unbound_after_while", possibly_unbound_after_while, lambda: [f32s(), F.copy()], CubeNameError,
        ("'w' may be unbound here",)),
    Bad("compile_time_value_under_runtime_condition", compile_time_value_under_runtime_condition,
        lambda: [f32s(), F.copy()], CubeTypeError,
        ("'mode' is rebound to a different str under a runtime condition; only numbers can change",)),
    Bad("sync_under_unit_branch", sync_under_unit_branch, lambda: [F.copy()], DivergenceError,
        ("sync_cube() is reached by only some units of the cube",)),
    Bad("sync_after_unit_return", sync_after_unit_return, lambda: [F.copy()], DivergenceError, ("sync_cube()",)),
    Bad("sync_in_unit_trip_count_loop", sync_in_unit_trip_count_loop, lambda: [F.copy()], DivergenceError,
        ("sync_cube()",)),
    Bad("sync_after_unit_break", sync_after_unit_break, lambda: [F.copy()], DivergenceError, ("sync_cube()",)),
    Bad("plane_op_under_unit_branch", plane_op_under_unit_branch, lambda: [F.copy()], DivergenceError,
        ("plane_sum() is reached by only some units of a plane",)),
    Bad("plane_op_under_shifted_plane_index", plane_op_under_shifted_plane_index, lambda: [F.copy()],
        DivergenceError, ("plane_max() is reached by only some units of a plane",), devices=("interp",)),
    Bad("plane_op_after_unit_return", plane_op_after_unit_return, lambda: [F.copy()], DivergenceError,
        ("plane_sum() is reached by only some units of a plane",), devices=("interp",)),
    Bad("runtime_break_in_unrolled_loop", runtime_break_in_unrolled_loop, lambda: [F.copy()], CubeSyntaxError,
        ("'break' in an unrolled loop must not depend on a runtime condition",)),
    Bad("unroll_with_runtime_bound", unroll_with_runtime_bound, lambda: [F.copy(), 4], CubeValueError,
        ("cb.unroll takes a range whose bounds are known at compile time",)),
    Bad("range_step_zero", range_step_zero, lambda: [F.copy()], CubeValueError, ("range() step must not be zero",)),
    Bad("range_float_bound", range_float_bound, lambda: [F.copy()], CubeTypeError,
        ("range bound must be an integer, got 2.5",)),
    Bad("range_i64_bound", range_i64_bound, lambda: [F.copy(), 4], CubeTypeError,
        ("range() bounds must fit the i32 loop counter, but this bound is i64", "range(i32(n))")),
    Bad("range_literal_too_big", range_literal_too_big, lambda: [F.copy()], CubeValueError,
        ("the integer 1099511627776 does not fit i32", "a range bound")),
    Bad("loop_over_an_array", loop_over_an_array, lambda: [F.copy()], CubeTypeError,
        ("kernels loop over range(...), cb.unroll(range(...)) or a tuple, not ArrayRef",)),
    Bad("for_else", for_else, lambda: [F.copy()], CubeSyntaxError, ("for ... else is not supported",)),
    Bad("while_else", while_else, lambda: [F.copy()], CubeSyntaxError, ("while ... else is not supported",)),
    Bad("runtime_assert", runtime_assert, lambda: [F.copy()], CubeSyntaxError,
        ("assert on runtime values is not supported",)),
    Bad("failing_compile_time_assert", failing_compile_time_assert, lambda: [F.copy(), 1], CubeValueError,
        ("compile-time assertion failed",)),
    Bad("compile_time_loop_forever", compile_time_loop_forever, lambda: [F.copy()], CubeValueError,
        ("a while loop on compile-time values ran over 100000 iterations",)),
    Bad("with_statement", with_statement, lambda: [F.copy()], CubeSyntaxError,
        ("'With' statements are not supported",)),
    Bad("try_statement", try_statement, lambda: [F.copy()], CubeSyntaxError, ("'Try' statements are not supported",)),
    Bad("lambda_expression", lambda_expression, lambda: [F.copy()], CubeSyntaxError,
        ("'Lambda' expressions are not supported",)),
    Bad("list_comprehension", list_comprehension, lambda: [F.copy()], CubeSyntaxError,
        ("'ListComp' expressions are not supported",)),
    Bad("star_args_call", star_args_call, lambda: [F.copy()], CubeSyntaxError, ("*args calls are not supported",)),
    Bad("double_star_call", double_star_call, lambda: [F.copy()], CubeSyntaxError,
        ("'Dict' expressions are not supported",)),
    Bad("is_comparison_at_runtime", is_comparison_at_runtime, lambda: [F.copy()], CubeSyntaxError,
        ("'Is' comparisons of runtime values are not supported",)),
    Bad("in_comparison_at_runtime", in_comparison_at_runtime, lambda: [F.copy()], CubeSyntaxError,
        ("'In' comparisons of runtime values are not supported",)),
    Bad("kernel_returns_a_value", kernel_returns_a_value, lambda: [F.copy()], CubeSyntaxError,
        ("kernels return nothing; write results into a Mut[Array] parameter",)),
    Bad("kernel_calls_a_kernel", kernel_calls_a_kernel, lambda: [F.copy()], CubeTypeError,
        ("a kernel cannot call the kernel 'callee_kernel'", "@cb.func")),
    Bad("func_returns_under_runtime_condition", func_returns_under_runtime_condition, lambda: [F.copy()],
        CubeSyntaxError, ("a @cb.func may return only at its end or under compile-time conditions",)),
    Bad("func_recurses_forever", func_recurses_forever, lambda: [F.copy()], CubeValueError,
        ("@cb.func 'recurse' recursed more than 32 levels deep",)),
    Bad("func_called_with_wrong_arguments", func_called_with_wrong_arguments, lambda: [F.copy()], CubeTypeError,
        ("calling @cb.func 'two_arguments'", "missing a required argument: 'b'")),
    Bad("atomic_on_a_line_array", atomic_on_a_line_array, lambda: [cb.lines(f32s(), 4)], CubeTypeError,
        ("atomic_add works on scalar elements, not Lines",), dim=1),
    Bad("atomic_and_on_floats", atomic_and_on_floats, lambda: [F.copy()], CubeTypeError,
        ("atomic_and needs an integer array, 'x' holds f32",)),
    Bad("atomic_on_a_number", atomic_on_a_number, lambda: [F.copy()], CubeTypeError,
        ("atomic_add needs an array (a Mut[Array] parameter or SharedMemory) as its first argument, got float",)),
    Bad("atomic_arity", atomic_arity, lambda: [ints()], CubeTypeError, ("atomic_add() takes 3 arguments, got 2",)),
    Bad("region_indexed_with_two", region_indexed_with_two, lambda: [F.copy()], CubeIndexError,
        ("region 'r' has 1 dimension(s) but is indexed with 2",)),
    Bad("region_offset_attribute", region_offset_attribute, lambda: [F.copy(), f32s()], CubeTypeError,
        ("a Region .global_index(j), not .offset",)),
    Bad("region_strategy_of_other_rank", region_strategy_of_other_rank, lambda: [F.copy()], CubeTypeError,
        ("region 'r': strategy Tile2D partitions 2-D arrays but the argument has 1 dimension(s)",)),
    Bad("plane_op_arity", plane_op_arity, lambda: [F.copy()], CubeTypeError,
        ("plane_shuffle() takes 2 arguments, got 1",)),
    Bad("plane_ops_in_a_loop_under_a_plane_condition", plane_ops_in_a_loop_under_a_plane_condition,
        lambda: [F.copy(), 3], DivergenceError, ("plane_shuffle_up() is reached by only some units of the cube",
                                                 "runs plane ops through local memory between work-group barriers"),
        dim=64, devices=("opencl",)),
]


@pytest.mark.parametrize("device", ["interp", "cpu", "opencl"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_bad_kernel_is_refused_naming_the_kernel_and_the_thing(case, device):
    if device not in case.devices:
        pytest.skip(f"the case runs on {', '.join(case.devices)}")
    check(case, device)
