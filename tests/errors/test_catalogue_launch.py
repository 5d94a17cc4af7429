"""The bad-input catalogue, launches: arguments that do not fit the signature or the device, and
kernels that go out of bounds at run time (checked mode reports the kernel, the array, the true
index and the line; nothing outside the arrays is touched)."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import (
    ArgumentTypeError,
    ArgumentValueError,
    Array,
    Comptime,
    CubeTypeError,
    Linear1D,
    Mut,
    OutOfBoundsError,
    RaceError,
    Region,
    f16,
    f32,
    i8,
    i32,
    i64,
    u8,
    u64,
)

from .catalogue import Bad, check

X = np.arange(64, dtype=np.float32)


@cb.kernel
def copy(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i]


@cb.kernel
def scaled(y: Mut[Array[f32]], a: i8, k: Comptime[int]):
    y[0] = y[0] * a + k


@cb.kernel
def takes_u8(y: Mut[Array[f32]], a: u8):
    y[0] = f32(a)


@cb.kernel
def takes_i64(y: Mut[Array[f32]], a: i64):
    y[0] = f32(a)


@cb.kernel
def takes_f32(y: Mut[Array[f32]], a: f32):
    y[0] = a


@cb.kernel
def takes_f16(y: Mut[Array[f32]], a: f16):
    y[0] = f32(a)


@cb.kernel
def takes_any_array(x: Array, y: Mut[Array[f32]]):
    y[0] = f32(x[0])


@cb.kernel
def takes_region(r: Region[f32, Linear1D]):
    r[0] = 1.0


@cb.kernel
def bare(x):
    pass


@cb.kernel
def bad_annotation(x: int):
    pass


@cb.kernel
def star_parameters(*xs: Array[f32]):
    pass


@cb.kernel
def big_shared(y: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, 20000)
    s[0] = 1.0
    y[0] = s[0]


# --- kernels that go out of bounds at run time -------------------------------------------------

@cb.kernel
def shifted_read(x: Array[f32], y: Mut[Array[f32]], shift: i32):
    i = cb.ABSOLUTE_POS
    y[i] = x[i + shift]


@cb.kernel
def scatter(idx: Array[i32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        y[idx[i]] = 1.0


@cb.kernel
def scatter64(idx: Array[i64], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        out[idx[i]] = 1.0


@cb.kernel
def gather_u64(idx: Array[u64], x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        out[i] = x[idx[i]]


@cb.kernel
def atomic_past_the_end(y: Mut[Array[i32]]):
    cb.atomic_add(y, cb.ABSOLUTE_POS * 2, 1)


@cb.kernel
def second_dimension(a: Mut[Array[f32]]):
    a[cb.UNIT_POS_Y, cb.UNIT_POS_X] = 1.0


@cb.kernel
def shared_runtime_index(x: Array[i32], y: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, 32)
    s[cb.UNIT_POS] = 1.0
    cb.sync_cube()
    y[cb.ABSOLUTE_POS] = s[x[cb.ABSOLUTE_POS]]


@cb.kernel
def local_runtime_index(x: Array[i32], y: Mut[Array[f32]]):
    a = cb.LocalArray(f32, 4)
    for k in cb.unroll(range(4)):
        a[k] = f32(k)
    y[cb.ABSOLUTE_POS] = a[x[cb.ABSOLUTE_POS]]


@cb.kernel
def region_past_its_part(r: Region[f32, Linear1D]):
    r[len(r)] = 1.0


@cb.kernel
def loop_past_the_end(x: Array[f32], y: Mut[Array[f32]], n: i32):
    i = cb.ABSOLUTE_POS
    acc = 0.0
    for k in range(n):
        acc += x[i + k]
    y[i] = acc


@cb.kernel
def racy(y: Mut[Array[f32]]):
    y[0] = f32(cb.UNIT_POS)


def _idx(bad, n=64):
    idx = np.random.default_rng(7).permutation(n).astype(np.int32)
    idx[17] = bad
    return idx


def _calling_directly(device, guard):
    copy(guard(X.copy()), guard(X.copy()))


def _aliasing(device, guard):
    buf = guard(np.zeros(128, np.float32))
    copy.launch(1, 32, buf[:64], buf[32:96], device=device)


CASES = [
    Bad("wrong_dtype", copy, lambda: [X.astype(np.float64), X.copy()], ArgumentTypeError,
        ("parameter 'x' expects Array[f32] but got an array of float64", ".astype(np.float32)")),
    Bad("not_an_array", copy, lambda: [[1.0, 2.0], X.copy()], ArgumentTypeError,
        ("parameter 'x' expects an array", "got list")),
    Bad("zero_d_array", copy, lambda: [np.array(1.0, np.float32), X.copy()], ArgumentTypeError,
        ("parameter 'x' expects an array, got a 0-d array",)),
    Bad("bool_array_for_f32", copy, lambda: [np.ones(64, bool), X.copy()], ArgumentTypeError,
        ("parameter 'x' expects Array[f32] but got an array of bool",)),
    Bad("complex_array", takes_any_array, lambda: [np.ones(8, np.complex64), X.copy()], ArgumentTypeError,
        ("parameter 'x': arrays of complex64 are not supported",)),
    Bad("string_array", takes_any_array, lambda: [np.array(["a", "b"]), X.copy()], ArgumentTypeError,
        ("parameter 'x': arrays of <U1 are not supported",)),
    Bad("read_only_as_mut", copy, lambda: [X, _read_only(X.copy())], ArgumentValueError,
        ("parameter 'y' is Mut but the array passed is read-only", "array.copy()")),
    Bad("non_contiguous", copy, lambda: [np.arange(128, dtype=np.float32)[::2], X.copy()], ArgumentValueError,
        ("parameter 'x' is not C-contiguous", "np.ascontiguousarray(x)")),
    Bad("cube_dim_over_maximum", copy, lambda: [X, X.copy()], ArgumentValueError, ("allows at most",),
        dim=(128, 64)),
    Bad("cube_count_over_maximum", copy, lambda: [X, X.copy()], ArgumentValueError,
        ("CubeCount.y = 70000 exceeds",), count=(1, 70000), devices=("interp", "cpu")),
    Bad("cube_dim_zero", copy, lambda: [X, X.copy()], ArgumentValueError, ("positive ints",), dim=0),
    Bad("cube_dim_float", copy, lambda: [X, X.copy()], ArgumentTypeError, ("CubeDim must be",), dim=2.5),
    Bad("cube_count_negative", copy, lambda: [X, X.copy()], ArgumentValueError, ("non-negative ints",), count=-1),
    Bad("shared_memory_over_limit", big_shared, lambda: [X.copy()], ArgumentValueError,
        ("80000 bytes of shared memory",), devices=("interp", "cpu")),
    Bad("lines_width_not_dividing", copy, lambda: [cb.lines(X[:62].copy(), 4), cb.lines(X[:62].copy(), 4)],
        ArgumentValueError, ("parameter 'x': cb.lines width 4 does not divide the last dimension 62",)),
    Bad("array_too_long_for_i32", takes_any_array, lambda: [np.zeros((2**31, 0), np.float32), X.copy()],
        ArgumentValueError, ("parameter 'x' has 0 elements; kernels index with i32",)),
    Bad("scalar_out_of_range", scaled, lambda: [X.copy(), 300, 1], ArgumentValueError,
        ("parameter 'a' is i8, whose range is [-128, 127]; got 300",)),
    Bad("unsigned_scalar_negative", takes_u8, lambda: [X.copy(), -1], ArgumentValueError,
        ("parameter 'a' is u8, whose range is [0, 255]; got -1",)),
    Bad("i64_scalar_out_of_range", takes_i64, lambda: [X.copy(), 2**70], ArgumentValueError,
        ("parameter 'a' is i64, whose range is",)),
    Bad("float_for_int_scalar", scaled, lambda: [X.copy(), 1.5, 1], ArgumentTypeError,
        ("parameter 'a' expects i8, got the float 1.5; pass an int",)),
    Bad("string_for_scalar", takes_f32, lambda: [X.copy(), "1.0"], ArgumentTypeError,
        ("parameter 'a' expects a f32 scalar, got str",)),
    Bad("array_for_scalar", takes_f32, lambda: [X.copy(), X.copy()], ArgumentTypeError,
        ("parameter 'a' expects a f32 scalar, got ndarray",)),
    Bad("f32_scalar_overflow", takes_f32, lambda: [X.copy(), 1e300], ArgumentValueError,
        ("parameter 'a' is f32, whose largest finite value is 3.40282e+38; got 1e+300, which would become inf",)),
    Bad("f16_scalar_overflow", takes_f16, lambda: [X.copy(), 70000.0], ArgumentValueError,
        ("parameter 'a' is f16, whose largest finite value is 65504; got 70000.0",), devices=("interp", "cpu")),
    Bad("comptime_wrong_type", scaled, lambda: [X.copy(), 1, 1.5], ArgumentTypeError,
        ("Comptime[int] parameter 'k' got float 1.5",)),
    Bad("comptime_unhashable", scaled, lambda: [X.copy(), 1, [1]], ArgumentTypeError,
        ("Comptime parameter 'k' needs a hashable value", "got list (pass a tuple)")),
    Bad("too_many_arguments", copy, lambda: [X, X.copy(), X.copy()], ArgumentTypeError,
        ("takes 2 arguments (x, y) but 3 were given",)),
    Bad("missing_argument", copy, lambda: [X], ArgumentTypeError, ("missing argument for parameter 'y'",)),
    Bad("missing_annotation", bare, lambda: [X], ArgumentTypeError, ("parameter 'x' needs a type annotation",)),
    Bad("bad_annotation", bad_annotation, lambda: [X], ArgumentTypeError,
        ("parameter 'x' has annotation <class 'int'>, which is not a cubepy type",)),
    Bad("star_parameters", star_parameters, lambda: [X], ArgumentTypeError,
        ("kernels take named parameters, not *xs",)),
    Bad("mut_aliasing", _aliasing, None, ArgumentValueError,
        ("Mut argument 'y' overlaps argument 'x' in memory", "x.copy()"), kernel_name="copy"),
    Bad("calling_a_kernel_directly", _calling_directly, None, TypeError, ("copy[cube_count, cube_dim](*args)",),
        caret=False, kernel_name="copy"),
    Bad("races_on_a_compiled_device", copy, lambda: [X, X.copy()], ArgumentValueError,
        ("race detection (races=True) is only available on the 'interp' device",), devices=("cpu",),
        options={"launch": {"races": True}}),
    Bad("f16_on_a_device_without_fp16", takes_any_array, lambda: [np.ones(8, np.float16), X.copy()], CubeTypeError,
        ("has no fp16 (cl_khr_fp16)",), devices=("opencl",), caret=False),
    Bad("read_out_of_bounds", shifted_read, lambda: [X, X.copy(), 3], OutOfBoundsError,
        ("is out of bounds for array 'x' of shape (64,)", "y[i] = x[i + shift]"), count=2, runs=True),
    Bad("read_before_the_start", shifted_read, lambda: [X, X.copy(), -5], OutOfBoundsError,
        ("index (-", ",) is out of bounds for array 'x' of shape (64,)"), count=2, runs=True),
    Bad("write_negative_index", scatter, lambda: [_idx(-1), np.zeros(64, np.float32)], OutOfBoundsError,
        ("index (-1,) is out of bounds for array 'y' of shape (64,)",), dim=64, runs=True),
    Bad("write_past_the_end", scatter, lambda: [_idx(1000), np.zeros(64, np.float32)], OutOfBoundsError,
        ("index (1000,) is out of bounds for array 'y'",), dim=64, runs=True),
    Bad("write_64_bit_index", scatter64, lambda: [np.array([2**32 + 5], np.int64), np.zeros(10, np.float32)],
        OutOfBoundsError, ("index (4294967301,) is out of bounds for array 'out' of shape (10,)",), runs=True),
    Bad("read_u64_index", gather_u64, lambda: [np.array([2**64 - 3, 1], np.uint64), X, np.zeros(2, np.float32)],
        OutOfBoundsError, ("index (18446744073709551613,) is out of bounds for array 'x'",), runs=True),
    Bad("atomic_out_of_bounds", atomic_past_the_end, lambda: [np.zeros(40, np.int32)], OutOfBoundsError,
        ("is out of bounds for array 'y' of shape (40,)",), runs=True),
    Bad("second_dimension_out_of_bounds", second_dimension, lambda: [np.zeros((4, 8), np.float32)],
        OutOfBoundsError, (", 8) is out of bounds for array 'a' of shape (4, 8)",), dim=(9, 4), runs=True),
    Bad("shared_memory_runtime_index", shared_runtime_index, lambda: [_idx(40, 32), np.zeros(32, np.float32)],
        OutOfBoundsError, ("index (40,) is out of bounds for array 's' of shape (32,)",), runs=True),
    Bad("local_array_runtime_index", local_runtime_index, lambda: [_idx(4, 32) % 5, np.zeros(32, np.float32)],
        OutOfBoundsError, ("index (4,) is out of bounds for array 'a' of shape (4,)",), runs=True),
    Bad("region_past_its_part", region_past_its_part, lambda: [np.zeros(64, np.float32)], OutOfBoundsError,
        ("is out of bounds for array 'r (this unit's region part)'",), runs=True),
    Bad("loop_reads_past_the_end", loop_past_the_end, lambda: [X, X.copy(), 3], OutOfBoundsError,
        ("is out of bounds for array 'x' of shape (64,)", "acc += x[i + k]"), count=2, runs=True),
    Bad("data_race", racy, lambda: [np.zeros(4, np.float32)], RaceError, ("data race on global array 'y' element",),
        devices=("interp",), options={"device": {"races": True}}, runs=True),
]


def _read_only(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("device", ["interp", "cpu", "opencl"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_bad_launch_is_refused_or_reported_naming_the_kernel_and_the_thing(case, device):
    if device not in case.devices:
        pytest.skip(f"the case runs on {', '.join(case.devices)}")
    check(case, device)


def test_the_catalogue_has_at_least_120_distinct_cases():
    from .test_catalogue_compile import CASES as COMPILE

    names = [c.name for c in COMPILE + CASES]
    assert len(names) == len(set(names)) and len(names) >= 120, len(names)
