"""Whole kernels give the interpreter's results on every device, at every plane size, and NumPy's
where NumPy has them: streaming, loops, reductions, local and shared memory, grids, every integer
and float operator at every dtype, promotion and out-of-bounds reports."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f16, f32, f64, i8, i16, i32, i64, u8, u32
from tests.conformance.reference import on_device_and_interpreter
from tests.conftest import poisoned, require_dtype
from tests.kernels import arith, block_sum, copy_any, loops, oob, saxpy, transpose, tree_sum

ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64")
INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


# --- streaming --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [128, 256])
def test_saxpy_matches_the_interpreter_and_numpy(dev, rng, dim):
    n = 1000 + dev.properties.plane_dim                # a ragged last cube
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    got, want = on_device_and_interpreter(dev, saxpy, -(-n // dim), dim, lambda: [x, y.copy(), np.float32(1.5)])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[1], 1.5 * x + y, rtol=1e-6)


@pytest.mark.parametrize("width", [2, 4, 8, 16])
def test_saxpy_on_lines(dev, rng, width):
    n = 1024
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    got, want = on_device_and_interpreter(dev, saxpy, -(-n // (64 * width)), 64,
                                          lambda: [cb.lines(x, width), cb.lines(y.copy(), width), 0.5])
    np.testing.assert_array_equal(got[1].array, want[1].array)
    np.testing.assert_allclose(got[1].array, 0.5 * x + y, rtol=1e-6)


@cb.kernel
def saxpy_any(x: Array, y: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = 3 * x[i] + y[i]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int8, np.uint16])
def test_saxpy_at_every_dtype(dev, rng, dtype):
    require_dtype(dev, dtype)
    n = 300
    x, y = (rng.random(n) * 10).astype(dtype), (rng.random(n) * 10).astype(dtype)
    got, want = on_device_and_interpreter(dev, saxpy_any, 3, 128, lambda: [x, y.copy()])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_copy_at_every_dtype_plain_and_on_lines_of_16_bytes(dev, rng, dtype):
    require_dtype(dev, dtype)
    a, _ = _operands(rng, dtype, 64)
    got, want = on_device_and_interpreter(dev, copy_any, 1, 64, lambda: [a, poisoned(64, dtype)])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[1], a)
    w = 16 // np.dtype(dtype).itemsize
    got, want = on_device_and_interpreter(dev, copy_any, 1, 64,
                                          lambda: [cb.lines(a, w), cb.lines(poisoned(64, dtype), w)])
    np.testing.assert_array_equal(got[1].array, want[1].array)
    np.testing.assert_array_equal(got[1].array, a)


def test_transpose_on_a_2d_grid(dev, rng):
    a = rng.standard_normal((20, 36)).astype(np.float32)
    got, want = on_device_and_interpreter(dev, transpose, (3, 3), (16, 8), lambda: [a, poisoned((36, 20), np.float32)])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[1], a.T)


# --- loops --------------------------------------------------------------------------------------------


@cb.kernel
def nested_loops(x: Array[f32], out: Mut[Array[f32]], cnt: Mut[Array[i32]], n: i32):
    i = cb.ABSOLUTE_POS
    if i >= len(x):
        return
    acc = 0.0
    j = 0
    k = 0
    while j < n:
        j += 1
        if j == 3:
            continue
        if x[i] * j > 40.0:
            break
        for q in range(j):
            if q == 2:
                continue
            if q > 5:
                break
            k += q
        acc += x[i]
    out[i] = acc
    cnt[i] = k * 100 + j


def test_nested_loops_with_break_and_continue(dev, rng):
    n = 700
    x = (rng.random(n) * 20).astype(np.float32)
    got, want = on_device_and_interpreter(dev, nested_loops, 3, 256, lambda: [
        x, poisoned(n, np.float32), poisoned(n, np.int32), np.int32(9)])
    close(got[1], want[1], 1e-6)
    np.testing.assert_array_equal(got[2], want[2])


def test_for_and_while_loops_with_per_unit_trip_counts(dev, rng):
    x = rng.integers(0, 37, 100).astype(np.int32)
    got, want = on_device_and_interpreter(dev, loops, 2, 64, lambda: [x, poisoned(100, np.int32)])
    np.testing.assert_array_equal(got[1], want[1])


# --- reductions and memory -----------------------------------------------------------------------


def test_shared_memory_tree_reduction_with_a_runtime_half(dev, rng):
    n = 1000
    x = rng.random(n, dtype=np.float32)
    got, want = on_device_and_interpreter(dev, tree_sum, 4, 256, lambda: [x, poisoned(4, np.float32), np.int32(128)])
    close(got[1], want[1], 1e-5)
    padded = np.zeros(1024, np.float32)
    padded[:n] = x
    close(got[1], padded.reshape(4, 256).sum(axis=1), 1e-4)


def test_shared_memory_tree_reduction_halving_the_cube(dev, rng):
    x = rng.random(1000).astype(np.float32)
    got, want = on_device_and_interpreter(dev, block_sum, 4, 256, lambda: [x, poisoned(4, np.float32)])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-5)


@cb.kernel
def early_return_sync(x: Array[f32], out: Mut[Array[f32]], stop: i32):
    sm = cb.SharedMemory(f32, 64)
    t = cb.UNIT_POS_X
    if cb.CUBE_POS_X >= stop:
        return
    sm[t] = x[cb.ABSOLUTE_POS]
    cb.sync_cube()
    out[cb.ABSOLUTE_POS] = sm[63 - t] + cb.plane_sum(sm[t])


def test_a_cube_uniform_early_return_before_a_sync(dev, rng):
    x = rng.random(256, dtype=np.float32)
    got, want = on_device_and_interpreter(dev, early_return_sync, 4, 64, lambda: [
        x, np.full(256, -1, np.float32), np.int32(2)])
    close(got[1], want[1], 1e-5)
    assert (got[1][128:] == -1).all()                  # the returned cubes wrote nothing


@cb.kernel
def local_2d(x: Array[f32], out: Mut[Array[f32]]):
    buf = cb.LocalArray(f32, 4)
    tx = cb.UNIT_POS_X
    ty = cb.UNIT_POS_Y
    sm = cb.SharedMemory(f32, 64)
    w = cb.CUBE_DIM_X
    g = cb.CUBE_POS_X * (w * cb.CUBE_DIM_Y) + ty * w + tx
    for k in range(4):
        buf[k] = x[g] * (k + 1)
    sm[ty * w + tx] = buf[0] + buf[3]
    cb.sync_cube()
    out[g] = sm[(cb.CUBE_DIM_Y - 1 - ty) * w + (w - 1 - tx)]


def test_local_memory_and_shared_memory_in_a_2d_cube(dev, rng):
    x = rng.random(128, dtype=np.float32)
    got, want = on_device_and_interpreter(dev, local_2d, 2, (8, 8), lambda: [x, poisoned(128, np.float32)])
    np.testing.assert_array_equal(got[1], want[1])


@cb.kernel
def grid3d(out: Mut[Array[i32]]):
    ux, uy, uz = cb.UNIT_POS_X, cb.UNIT_POS_Y, cb.UNIT_POS_Z
    cx, cy, cz = cb.CUBE_POS_X, cb.CUBE_POS_Y, cb.CUBE_POS_Z
    units = cb.CUBE_DIM_X * cb.CUBE_DIM_Y * cb.CUBE_DIM_Z
    cube = cx + cb.CUBE_COUNT_X * (cy + cb.CUBE_COUNT_Y * cz)
    lin = ux + cb.CUBE_DIM_X * (uy + cb.CUBE_DIM_Y * uz)
    g = cube * units + lin
    out[g] = ((cx * 8 + cy) * 8 + cz) * 1000 + (ux * 8 + uy) * 8 + uz


def test_positions_in_a_3d_grid_of_3d_cubes(dev):
    count, dim = (3, 2, 2), (4, 2, 3)
    got, want = on_device_and_interpreter(dev, grid3d, count, dim, lambda: [poisoned(12 * 24, np.int32)])
    np.testing.assert_array_equal(got[0], want[0])
    cz, cy, cx, uz, uy, ux = np.indices(count[::-1] + dim[::-1]).reshape(6, -1)
    expected = np.empty(12 * 24, np.int32)
    g = (cx + 3 * (cy + 2 * cz)) * 24 + ux + 4 * (uy + 2 * uz)
    expected[g] = ((cx * 8 + cy) * 8 + cz) * 1000 + (ux * 8 + uy) * 8 + uz
    np.testing.assert_array_equal(got[0], expected)


# --- operators at every dtype ----------------------------------------------------------------------


def _operands(rng, dtype, n):
    """Two random operands of ``dtype``; b has zeros among its integers (division by zero is 0) and none
    among its floats."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    if dt.kind == "f":
        a, b = rng.uniform(-8, 8, n).astype(dt), rng.uniform(-8, 8, n).astype(dt)
        b[b == 0] = 1
        return a, b
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    a, b = rng.integers(lo, hi, n, dtype=dt), rng.integers(lo, hi, n, dtype=dt)
    b[:4] = 0
    return a, b


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bool"])
def test_arithmetic_select_min_max_at_every_dtype(dev, rng, dtype):
    require_dtype(dev, dtype)
    a, b = _operands(rng, dtype, 40)
    got, want = on_device_and_interpreter(dev, arith, 1, 64, lambda: [a, b, poisoned((40, 8), dtype), 40])
    if np.dtype(dtype).kind == "f":
        tol = 2e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(got[2].astype(np.float64), want[2].astype(np.float64), rtol=tol, atol=1e-5)
    else:
        np.testing.assert_array_equal(got[2], want[2])


@cb.kernel
def intops(a: Array, b: Array, out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    n = len(a)
    x = a[i]
    y = b[i]
    out[0 * n + i] = x // y
    out[1 * n + i] = x % y
    out[2 * n + i] = x + y
    out[3 * n + i] = x * y
    out[4 * n + i] = x - y
    out[5 * n + i] = x << y
    out[6 * n + i] = x >> y
    out[7 * n + i] = x & y
    out[8 * n + i] = x | y
    out[9 * n + i] = x ^ y
    out[10 * n + i] = cb.min(x, y)
    out[11 * n + i] = cb.max(x, y)
    out[12 * n + i] = cb.abs(x)
    out[13 * n + i] = -x
    out[14 * n + i] = ~x


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_operators_with_zero_divisors_minus_one_and_the_minimum(dev, rng, dtype):
    a = rng.integers(-128, 128, 300).astype(dtype)
    b = rng.integers(-9, 9, 300).astype(dtype)
    b[:20] = 0
    b[20:30] = np.array(-1).astype(dtype)
    a[30] = np.iinfo(dtype).min
    b[30] = np.array(-1).astype(dtype)
    got, want = on_device_and_interpreter(dev, intops, 2, 150, lambda: [a, b, poisoned(15 * 300, dtype)])
    np.testing.assert_array_equal(got[2].reshape(15, 300), want[2].reshape(15, 300))


@cb.kernel
def floatops(a: Array, b: Array, out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    n = len(a)
    x = a[i]
    y = b[i]
    out[0 * n + i] = x // y
    out[1 * n + i] = x % y
    out[2 * n + i] = x / y
    out[3 * n + i] = cb.sqrt(cb.abs(x))
    out[4 * n + i] = cb.exp(x * 0.1)
    out[5 * n + i] = cb.log(cb.abs(y) + 1.0)
    out[6 * n + i] = cb.sin(x)
    out[7 * n + i] = cb.cos(y)
    out[8 * n + i] = cb.tanh(x)
    out[9 * n + i] = cb.erf(y * 0.3)
    out[10 * n + i] = cb.floor(x)
    out[11 * n + i] = cb.ceil(y)
    out[12 * n + i] = cb.min(x, y)
    out[13 * n + i] = cb.max(x, y)
    out[14 * n + i] = cb.fma(x, y, x)
    out[15 * n + i] = cb.rsqrt(cb.abs(y) + 1.0)
    out[16 * n + i] = cb.pow(cb.abs(x) + 0.5, y * 0.25)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_operators_and_math_functions(dev, rng, dtype):
    require_dtype(dev, dtype)
    a = (rng.standard_normal(300) * 5).astype(dtype)
    b = (rng.standard_normal(300) * 3).astype(dtype)
    b[:5] = 0
    a[5], b[6], a[6] = -0.0, -3, 6
    got, want = on_device_and_interpreter(dev, floatops, 2, 150, lambda: [a, b, poisoned(17 * 300, dtype)])
    tol = 2e-3 if dtype == np.float16 else 1e-6
    if dev.backend_name == "wgpu" and dev.properties.supports("gpu"):
        tol = max(tol, 1e-5)      # Vulkan's sin/cos/exp/... are looser than libm's (NVIDIA: 1.5e-6 off)
    g, w = got[2].reshape(17, 300), want[2].reshape(17, 300)
    exact = [0, 1, 2, 10, 11, 12, 13]                     # floordiv, mod, div, floor, ceil, min, max
    np.testing.assert_array_equal(g[exact], w[exact])
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


@cb.kernel
def promote(a: Array[i8], b: Array[u8], c: Array[i16], d: Array[u32], h: Array[f16], out: Mut[Array[f64]],
            oi: Mut[Array[i64]]):
    i = cb.ABSOLUTE_POS
    out[i] = a[i] + b[i] * c[i] + d[i] + h[i] * 2
    oi[i] = a[i] * d[i] + (b[i] < c[i])


def test_mixed_integer_and_f16_operands_promote_as_the_rules_say(dev, rng):
    require_dtype(dev, np.float16)
    require_dtype(dev, np.float64)
    # |i8 + u8 * i16 + u32| stays below f16's largest finite value: converting an int near the
    # overflow edge can round differently in one step (LLVM) and through f64 (NumPy).
    args = [rng.integers(-100, 100, 64).astype(np.int8), rng.integers(0, 50, 64).astype(np.uint8),
            rng.integers(-500, 500, 64).astype(np.int16), rng.integers(0, 30000, 64).astype(np.uint32),
            rng.random(64).astype(np.float16), poisoned(64, np.float64), poisoned(64, np.int64)]
    got, want = on_device_and_interpreter(dev, promote, 1, 64, lambda: [a.copy() for a in args])
    np.testing.assert_array_equal(got[5], want[5])
    np.testing.assert_array_equal(got[6], want[6])
    a, b, c, d, h = args[:5]
    ints = a.astype(np.int64) + b.astype(np.int64) * c + d          # i8 + u8 * i16 + u32 -> i64
    with np.errstate(over="ignore"):
        ref = ints.astype(np.float16) + h * np.float16(2)              # + f16 -> f16
    np.testing.assert_array_equal(got[5], ref.astype(np.float64))


# --- out of bounds --------------------------------------------------------------------------------


def test_an_out_of_bounds_read_raises_after_the_in_bounds_accesses_and_is_cleared(dev, rng):
    x = rng.random(64, dtype=np.float32)
    with pytest.raises(cb.OutOfBoundsError) as ref:
        oob[1, 64](x, np.zeros(64, np.float32), device="interp")
    y = poisoned(64, np.float32)
    with pytest.raises(cb.OutOfBoundsError) as got:
        oob.launch(1, 64, x, y, device=dev)
        dev.synchronize()
    assert "out of bounds for array 'x' of shape (64,)" in str(got.value)
    assert "line" not in str(ref.value) or got.value.loc == ref.value.loc
    np.testing.assert_array_equal(y[:61], x[3:])                      # the in-bounds accesses happened
    oob.launch(1, 32, x, poisoned(64, np.float32), device=dev)        # the record was cleared: no stale error
    dev.synchronize()


def _named(name: str):
    """A kernel whose Python name is ``name`` (a keyword of some kernel language)."""
    def body(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i + 1] * 2.0
    body.__name__ = body.__qualname__ = name
    return cb.kernel(body)


@pytest.mark.parametrize("name", ["double", "int", "kernel", "loop", "cb_oob1"])
def test_a_kernel_named_like_a_keyword_runs_and_its_errors_name_it(dev, rng, name):
    k = _named(name)
    x = rng.random(64, dtype=np.float32)
    y = poisoned(63, np.float32)
    k.launch(1, 63, x, y, device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(y, x[1:] * 2)
    with pytest.raises(cb.OutOfBoundsError, match=f"in kernel '{name}': index \\(64,\\)"):
        k.launch(1, 64, x, poisoned(64, np.float32), device=dev)
        dev.synchronize()


def test_an_unchecked_launch_makes_no_checks(dev, rng):
    x = rng.random(64, dtype=np.float32)
    y = poisoned(64, np.float32)
    oob.launch(1, 61, x, y, device=dev, checked=False)
    dev.synchronize()
    np.testing.assert_array_equal(y[:61], x[3:])
