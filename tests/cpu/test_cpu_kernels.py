"""Real kernels on device "cpu" against the interpreter and NumPy, at every plane size."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_kernels import (
    cas_counter,
    early_return_sync,
    floatops,
    histogram,
    lines_saxpy,
    local_2d,
    loops,
    oob,
    plane_masked,
    plane_ops,
    promote,
    saxpy,
    saxpy_any,
    shared_hist,
    tree_sum,
)

import cubepy as cb
from cubepy import Array, Mut, f32, i32

PLANES = [1, 4, 8, 16, 32, 64]


def rng():
    return np.random.default_rng()


def run(kernel, count, dim, args, device, plane, **kw):
    kernel[count, dim](*args, device=cb.device(device, plane_dim=plane), **kw)
    return args


def both(kernel, count, dim, make_args, plane=8, **kw):
    """Run on cpu and interp with identical fresh inputs; return (cpu_args, interp_args)."""
    a, b = make_args(), make_args()
    return run(kernel, count, dim, a, "cpu", plane, **kw), run(kernel, count, dim, b, "interp", plane, **kw)


def close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("plane", PLANES)
def test_saxpy(plane):
    n = 1000 + plane
    r = rng()
    x, y = r.random(n, dtype=np.float32), r.random(n, dtype=np.float32)
    c, i = both(saxpy, (n + 127) // 128, 128, lambda: [x, y.copy(), np.float32(1.5)], plane)
    np.testing.assert_array_equal(c[1], i[1])
    np.testing.assert_allclose(c[1], 1.5 * x + y, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int8, np.uint16])
def test_saxpy_dtypes(dtype):
    n = 300
    x = (rng().random(n) * 10).astype(dtype)
    y = (rng().random(n) * 10).astype(dtype)
    c, i = both(saxpy_any, 3, 128, lambda: [x, y.copy()])
    np.testing.assert_array_equal(c[1], i[1])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_saxpy_threads(threads):
    n = 1 << 18
    x, y = rng().random(n, dtype=np.float32), rng().random(n, dtype=np.float32)
    out = y.copy()
    saxpy[n // 64 + 1, 64](x, out, 3.0, device=cb.device("cpu", threads=threads))
    np.testing.assert_allclose(out, 3 * x + y, rtol=1e-6)


@pytest.mark.parametrize("plane", [1, 8])
def test_saxpy_lines(plane):
    n = 4 * 200
    x, y = rng().random(n, dtype=np.float32), rng().random(n, dtype=np.float32)
    c, i = both(lines_saxpy, 4, 64, lambda: [cb.lines(x, 4), cb.lines(y.copy(), 4), 0.5], plane)
    np.testing.assert_array_equal(c[1].array, i[1].array)
    np.testing.assert_allclose(c[1].array, 0.5 * x + y, rtol=1e-6)


@pytest.mark.parametrize("plane", PLANES)
def test_loops_break_continue(plane):
    n = 700
    x = (rng().random(n) * 20).astype(np.float32)
    c, i = both(loops, 3, 256, lambda: [x, np.full(n, np.nan, np.float32), np.full(n, -1, np.int32),
                                        np.int32(9)], plane)
    close(c[1], i[1], 1e-6)
    np.testing.assert_array_equal(c[2], i[2])


@pytest.mark.parametrize("plane", PLANES)
def test_shared_tree_reduction(plane):
    n = 1000
    x = rng().random(n, dtype=np.float32)
    c, i = both(tree_sum, 4, 256, lambda: [x, np.full(4, np.nan, np.float32), np.int32(128)], plane)
    close(c[1], i[1], 1e-5)
    padded = np.zeros(1024, np.float32)
    padded[:n] = x
    close(c[1], padded.reshape(4, 256).sum(axis=1), 1e-4)


@pytest.mark.parametrize("plane", PLANES)
@pytest.mark.parametrize("dim", [256, 100])
def test_every_plane_op(plane, dim):
    xi = rng().integers(-60, 60, dim).astype(np.int32)
    xf = rng().random(dim, dtype=np.float32)
    c, i = both(plane_ops, 1, dim, lambda: [xi, xf, np.full(16 * dim, -7, np.int32),
                                            np.full(4 * dim, np.nan, np.float32),
                                            np.full(dim, 0x5A5A5A5A, np.uint64)], plane)
    np.testing.assert_array_equal(c[2].reshape(16, dim), i[2].reshape(16, dim))
    close(c[3], i[3], 1e-5)
    np.testing.assert_array_equal(c[4], i[4])
    # NumPy reference for the plane sum and ballot
    pad = -(-dim // plane) * plane
    v = np.zeros(pad, np.int64)
    v[:dim] = xi
    sums = np.repeat(v.reshape(-1, plane).sum(axis=1), plane)[:dim]
    np.testing.assert_array_equal(c[2][:dim], sums)


@pytest.mark.parametrize("plane", PLANES)
def test_plane_ops_under_plane_uniform_control(plane):
    x = rng().integers(-20, 20, 128).astype(np.int32)
    c, i = both(plane_masked, 2, 64, lambda: [x, np.full(128, -1, np.int32)], plane)
    np.testing.assert_array_equal(c[1], i[1])


@pytest.mark.parametrize("plane", [1, 8, 64])
def test_uniform_early_return_then_sync(plane):
    x = rng().random(256, dtype=np.float32)
    c, i = both(early_return_sync, 4, 64, lambda: [x, np.full(256, -1, np.float32), np.int32(2)], plane)
    close(c[1], i[1], 1e-5)
    assert (c[1][128:] == -1).all()


def test_local_memory_and_2d_cube():
    x = rng().random(128, dtype=np.float32)
    c, i = both(local_2d, 2, (8, 8), lambda: [x, np.full(128, np.nan, np.float32)])
    np.testing.assert_array_equal(c[1], i[1])


def test_atomics_histogram():
    n = 5000
    x = rng().integers(0, 1000, n).astype(np.int32)
    bins = np.zeros(10, np.int32)
    mx = np.array([-10**9, 10**9, 0, 0, 0], np.int32)
    fs = np.zeros(1, np.float32)
    histogram[(n + 255) // 256, 256](x, bins, mx, fs, device=cb.device("cpu", threads=2))
    np.testing.assert_array_equal(bins, np.bincount(x % 10, minlength=10))
    assert mx[0] == x.max() and mx[1] == x.min()
    assert mx[2] == np.bitwise_xor.reduce(x) and mx[3] == np.bitwise_or.reduce(x)
    assert mx[4] == -x.sum() and fs[0] == 0.5 * n
    c, i = both(histogram, 4, 256, lambda: [x[:1000], np.zeros(10, np.int32),
                                            np.array([-10**9, 10**9, 0, 0, 0], np.int32), np.zeros(1, np.float32)])
    for k in range(1, 4):
        np.testing.assert_array_equal(c[k], i[k])


def test_atomics_shared_memory_and_cas():
    x = rng().integers(0, 1000, 3000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    shared_hist[12, 256](x, bins, device=cb.device("cpu", threads=2))
    np.testing.assert_array_equal(bins, np.bincount(x % 16, minlength=16))
    ctr, got = np.zeros(1, np.int32), np.full(4096, -1, np.int32)
    cas_counter[64, 64](ctr, got, device=cb.device("cpu", threads=2))
    assert ctr[0] == 4096 and sorted(got) == list(range(4096))


INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_integer_ops(dtype):
    from cpu_kernels import intops
    r = rng()
    a = r.integers(-128, 128, 300).astype(dtype)
    b = r.integers(-9, 9, 300).astype(dtype)
    b[:20] = 0
    b[20:30] = np.array(-1).astype(dtype)
    a[30] = np.iinfo(dtype).min
    b[30] = np.array(-1).astype(dtype)
    c, i = both(intops, 2, 150, lambda: [a, b, np.full(15 * 300, 0x5A, dtype)])
    np.testing.assert_array_equal(c[2].reshape(15, 300), i[2].reshape(15, 300))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_ops(dtype):
    r = rng()
    a = (r.standard_normal(300) * 5).astype(dtype)
    b = (r.standard_normal(300) * 3).astype(dtype)
    b[:5] = 0
    a[5], b[6], a[6] = -0.0, -3, 6
    c, i = both(floatops, 2, 150, lambda: [a, b, np.full(17 * 300, np.nan, dtype)])
    tol = 2e-3 if dtype == np.float16 else 1e-6
    cc, ii = c[2].reshape(17, 300), i[2].reshape(17, 300)
    np.testing.assert_array_equal(cc[[0, 1, 2, 10, 11, 12, 13]], ii[[0, 1, 2, 10, 11, 12, 13]])
    np.testing.assert_allclose(cc.astype(np.float64), ii.astype(np.float64), rtol=tol, atol=tol)


def test_promotion():
    r = rng()
    # |i8 + u8 * i16 + u32| stays below f16's largest finite value: converting an int near the
    # overflow edge can round differently in one step (LLVM) and through f64 (NumPy).
    args = [r.integers(-100, 100, 64).astype(np.int8), r.integers(0, 50, 64).astype(np.uint8),
            r.integers(-500, 500, 64).astype(np.int16), r.integers(0, 30000, 64).astype(np.uint32),
            r.random(64).astype(np.float16), np.full(64, np.nan), np.full(64, 0x5A5A, np.int64)]
    c, i = both(promote, 1, 64, lambda: [a.copy() for a in args])
    np.testing.assert_array_equal(c[5], i[5])
    np.testing.assert_array_equal(c[6], i[6])
    a, b, cc, d, h = args[:5]
    ints = a.astype(np.int64) + b.astype(np.int64) * cc + d          # i8 + u8 * i16 + u32 -> i64
    with np.errstate(over="ignore"):
        ref = ints.astype(np.float16) + h * np.float16(2)              # + f16 -> f16
    np.testing.assert_array_equal(c[5], ref.astype(np.float64))


def test_out_of_bounds_matches_interpreter():
    msgs = []
    for dev in ("cpu", "interp"):
        with pytest.raises(cb.OutOfBoundsError) as e:
            oob[1, 16](np.ones(16, np.float32), np.zeros(16, np.float32), device=dev)
        msgs.append(str(e.value))
        assert e.value.kernel == "oob" and e.value.loc is not None
    assert msgs[0] == msgs[1]
    assert "index (16,) is out of bounds for array 'x' of shape (16,) (unit (15, 0, 0) of cube (0, 0, 0))" in msgs[0]


def test_unchecked_kernel_runs_without_checks():
    y = np.zeros(16, np.float32)
    oob[1, 15](np.ones(16, np.float32), y, device="cpu", checked=False)
    assert (y[:15] == 1).all()


def test_3d_grid_positions():
    from cpu_kernels import grid3d
    c, i = both(grid3d, (3, 2, 2), (4, 2, 3), lambda: [np.full(12 * 24, -1, np.int32)])
    np.testing.assert_array_equal(c[0], i[0])
    assert (c[0] >= 0).all()


def test_oob_records_are_cleared_between_launches():
    """A unit loop writes a bounds record only for a failing unit and the report clears them: a
    clean launch after a failing one must not raise, and a later failure reports its own unit."""
    @cb.kernel
    def shifted(x: Array[f32], y: Mut[Array[f32]], k: i32):
        i = cb.ABSOLUTE_POS
        y[i] = x[i + k]

    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    for k, bad_unit in ((10, 54), (0, None), (3, 61), (0, None), (3, 61)):
        if bad_unit is None:
            shifted[1, 64](x, y, np.int32(k), device="cpu")
            np.testing.assert_array_equal(y, x)
        else:
            with pytest.raises(cb.OutOfBoundsError) as e:
                shifted[1, 64](x, y, np.int32(k), device="cpu")
            assert f"unit ({bad_unit}, 0, 0)" in str(e.value)
