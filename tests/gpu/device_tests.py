"""Launch tests every GPU backend runs against the interpreter; each test module supplies a ``dev`` fixture."""

from __future__ import annotations

import gpu_kernels as g
import numpy as np
import pytest
from compare import assert_same, run_both

import cubepy as cb


def test_saxpy(dev):
    x = np.arange(1000, dtype=np.float32)
    got, want = run_both(g.saxpy, 4, 256, [x, np.ones(1000, np.float32), 2.5], dev)
    assert_same(got, want)


@pytest.mark.parametrize("width", [2, 4, 8, 16])
def test_saxpy_lines(dev, width):
    x = np.arange(1024, dtype=np.float32)
    got, want = run_both(g.saxpy, 4, 64, [cb.lines(x, width), cb.lines(np.ones(1024, np.float32), width), 0.5], dev)
    assert_same(got, want)


def test_block_sum(dev):
    x = np.random.default_rng(1).random(1000).astype(np.float32)
    got, want = run_both(g.block_sum, 4, 256, [x, np.zeros(4, np.float32)], dev)
    assert_same(got, want, rtol=1e-4)


@pytest.mark.parametrize("units", [96, 80])
def test_plane_ops(dev, units):
    rng = np.random.default_rng(2)
    n = 2 * units
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    k = rng.integers(-40, 40, n).astype(np.int32)
    k[5] = 7
    args = [x, k, np.zeros((n, 11), np.float32), np.zeros((n, 9), np.int32), np.zeros(n, np.uint64)]
    got, want = run_both(g.plane_all_ops, 2, units, args, dev)
    assert_same(got, want, rtol=1e-4)


def test_atomics(dev):
    x = np.random.default_rng(3).integers(-50, 50, 300).astype(np.int32)
    acc = np.array([0, 0, 1 << 30, -(1 << 30), -1, 0, 0, 0], np.int32)
    facc = np.array([0, 1e9, -1e9], np.float32)
    got, want = run_both(g.atomics, 5, 64, [x, acc, facc, np.zeros(1, np.uint32)], dev)
    assert got[1][7] in x                       # which compare-and-swap wins is unordered
    got[1][7] = want[1][7]
    assert_same(got, want, rtol=1e-5)


def test_loops(dev):
    x = np.arange(100, dtype=np.int32) % 37
    got, want = run_both(g.loops, 2, 64, [x, np.zeros(100, np.int32)], dev)
    assert_same(got, want)


def test_transpose(dev):
    a = np.arange(20 * 36, dtype=np.float32).reshape(20, 36)
    got, want = run_both(g.transpose, (3, 3), (16, 8), [a, np.zeros((36, 20), np.float32)], dev)
    assert_same(got, want)
    np.testing.assert_array_equal(got[1], a.T)


@pytest.mark.parametrize("dtype", [d for d in g.ALL_DTYPES if d != "bool"])
def test_arith_dtypes(dev, dtype):
    if dtype == "float16" and not dev.properties.supports("fp16"):
        pytest.skip("this OpenCL device has no cl_khr_fp16")
    if dtype == "float64" and not dev.properties.supports("fp64"):
        pytest.skip("this OpenCL device has no cl_khr_fp64")
    a, b = g.make_arrays(dtype, 40)
    got, want = run_both(g.arith, 1, 64, [a, b, np.zeros((40, 8), dtype), 40], dev)
    assert_same(got, want, rtol=2e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("dtype", g.ALL_DTYPES)
def test_copy_dtypes(dev, dtype):
    if dtype == "float16" and not dev.properties.supports("fp16"):
        pytest.skip("this OpenCL device has no cl_khr_fp16")
    a, _ = g.make_arrays(dtype, 64)
    got, want = run_both(g.copy_any, 1, 64, [a, np.zeros(64, dtype)], dev)
    assert_same(got, want)
    w = 16 // np.dtype(dtype).itemsize
    got, want = run_both(g.copy_any, 1, 64, [cb.lines(a, w), cb.lines(np.zeros(64, dtype), w)], dev)
    assert_same(got, want)


def test_out_of_bounds_matches_interpreter(dev):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(cb.OutOfBoundsError) as ref:
        g.oob[1, 64](x, np.zeros(64, np.float32), device="interp")
    y = np.zeros(64, np.float32)
    with pytest.raises(cb.OutOfBoundsError) as got:
        g.oob[1, 64](x, y, device=dev)
    assert "out of bounds for array 'x' of shape (64,)" in str(got.value)
    assert "line" not in str(ref.value) or got.value.loc == ref.value.loc
    np.testing.assert_array_equal(y[:61], x[3:])       # the in-bounds accesses happened
    g.oob[1, 32](x, np.zeros(64, np.float32), device=dev)   # the record was cleared: no stale error
    dev.synchronize()


