"""Kernels of plane operations and atomics give the interpreter's results on every device, at every
plane size (plane ops at full and partial planes, under plane-uniform control), and atomics give
NumPy's, in whatever order their updates land."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32, u64
from tests.conformance.reference import on_device_and_interpreter
from tests.conftest import poisoned
from tests.kernels import atomics, plane_all_ops


def close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


@cb.kernel
def plane_ops(x: Array[i32], f: Array[f32], out: Mut[Array[i32]], fout: Mut[Array[f32]], b: Mut[Array[u64]]):
    i = cb.ABSOLUTE_POS
    n = len(x)
    v = x[i]
    fv = f[i]
    lane = cb.UNIT_POS_PLANE
    out[0 * n + i] = cb.plane_sum(v)
    out[1 * n + i] = cb.plane_prod(v % 3 + 1)
    out[2 * n + i] = cb.plane_min(v)
    out[3 * n + i] = cb.plane_max(v)
    out[4 * n + i] = cb.cast(cb.plane_all(v > -50), i32)
    out[5 * n + i] = cb.cast(cb.plane_any(v > 40), i32)
    out[6 * n + i] = cb.plane_broadcast(v, 1)
    out[7 * n + i] = cb.plane_shuffle(v, lane + 3)
    out[8 * n + i] = cb.plane_shuffle_xor(v, 1)
    out[9 * n + i] = cb.plane_shuffle_up(v, 1)
    out[10 * n + i] = cb.plane_shuffle_down(v, 2)
    out[11 * n + i] = cb.cast(cb.plane_elect(), i32)
    out[12 * n + i] = cb.plane_inclusive_sum(v)
    out[13 * n + i] = cb.plane_exclusive_sum(v)
    out[14 * n + i] = lane
    out[15 * n + i] = cb.PLANE_DIM
    fout[0 * n + i] = cb.plane_sum(fv)
    fout[1 * n + i] = cb.plane_max(fv)
    fout[2 * n + i] = cb.plane_min(fv)
    fout[3 * n + i] = cb.plane_inclusive_sum(fv)
    b[i] = cb.plane_ballot(v > 0)


@pytest.mark.parametrize("dim", [256, 100])
def test_every_plane_op_on_integers_and_floats(dev, rng, dim):
    xi = rng.integers(-60, 60, dim).astype(np.int32)
    xf = rng.random(dim, dtype=np.float32)
    got, want = on_device_and_interpreter(dev, plane_ops, 1, dim, lambda: [
        xi, xf, poisoned(16 * dim, np.int32), poisoned(4 * dim, np.float32), poisoned(dim, np.uint64)])
    np.testing.assert_array_equal(got[2].reshape(16, dim), want[2].reshape(16, dim))
    close(got[3], want[3], 1e-5)
    np.testing.assert_array_equal(got[4], want[4])
    plane = dev.properties.plane_dim                   # NumPy's plane sums
    v = np.zeros(-(-dim // plane) * plane, np.int64)
    v[:dim] = xi
    np.testing.assert_array_equal(got[2][:dim], np.repeat(v.reshape(-1, plane).sum(axis=1), plane)[:dim])


@pytest.mark.parametrize("units", [96, 80])
def test_every_plane_op_with_lanes_from_data(dev, rng, units):
    n = 2 * units
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    k = rng.integers(-40, 40, n).astype(np.int32)
    k[5] = 7
    got, want = on_device_and_interpreter(dev, plane_all_ops, 2, units, lambda: [
        x, k, poisoned((n, 11), np.float32), poisoned((n, 9), np.int32), poisoned(n, np.uint64)])
    np.testing.assert_allclose(got[2].astype(np.float64), want[2].astype(np.float64), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got[3], want[3])
    np.testing.assert_array_equal(got[4], want[4])


@cb.kernel
def plane_masked(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    v = x[i]
    r = 0
    if cb.plane_sum(v) > 0:
        r = cb.plane_max(v) + cb.plane_shuffle_down(v, 1)
    else:
        r = cb.plane_min(v) * 2
    s = cb.plane_sum(r)
    k = 0
    while k < cb.plane_max(v % 4):
        s += cb.plane_sum(k)
        k += 1
    out[i] = s


def test_plane_ops_under_plane_uniform_control(dev, rng):
    x = rng.integers(-20, 20, 128).astype(np.int32)
    try:
        got, want = on_device_and_interpreter(dev, plane_masked, 2, 64, lambda: [x, poisoned(128, np.int32)])
    except cb.DivergenceError as e:        # plane ops emulated between barriers of the cube: refused, clearly
        assert "so every unit of the cube must reach it" in str(e)
        pytest.skip(f"{dev.name} runs plane ops cube-wide: {str(e).splitlines()[0]}")
    np.testing.assert_array_equal(got[1], want[1])


@cb.kernel
def histogram(x: Array[i32], bins: Mut[Array[i32]], mx: Mut[Array[i32]], fs: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        cb.atomic_add(bins, v % len(bins), 1)
        cb.atomic_max(mx, 0, v)
        cb.atomic_min(mx, 1, v)
        cb.atomic_xor(mx, 2, v)
        cb.atomic_or(mx, 3, v)
        cb.atomic_sub(mx, 4, v)
        cb.atomic_add(fs, 0, 0.5)


def test_atomic_histogram_max_min_xor_or_sub_and_float_add(dev, rng):
    n = 5000
    x = rng.integers(0, 1000, n).astype(np.int32)

    def fresh(m):
        return [x[:m], np.zeros(10, np.int32), np.array([-10**9, 10**9, 0, 0, 0], np.int32), np.zeros(1, np.float32)]
    args = fresh(n)
    histogram.launch(-(-n // 256), 256, *args, device=dev)
    dev.synchronize()
    _, bins, mx, fs = args
    np.testing.assert_array_equal(bins, np.bincount(x % 10, minlength=10))
    assert mx[0] == x.max() and mx[1] == x.min()
    assert mx[2] == np.bitwise_xor.reduce(x) and mx[3] == np.bitwise_or.reduce(x)
    assert mx[4] == -x.sum() and fs[0] == 0.5 * n
    got, want = on_device_and_interpreter(dev, histogram, 4, 256, lambda: fresh(1000))
    for k in range(1, 4):
        np.testing.assert_array_equal(got[k], want[k])


@cb.kernel
def shared_hist(x: Array[i32], bins: Mut[Array[i32]]):
    sm = cb.SharedMemory(i32, 16)
    t = cb.UNIT_POS_X
    if t < 16:
        sm[t] = 0
    cb.sync_cube()
    i = cb.ABSOLUTE_POS
    if i < len(x):
        cb.atomic_add(sm, x[i] % 16, 1)
    cb.sync_cube()
    if t < 16:
        cb.atomic_add(bins, t, sm[t])


@cb.kernel
def cas_counter(ctr: Mut[Array[i32]], got: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    done = False
    while not done:
        old = ctr[0]
        if cb.atomic_cas(ctr, 0, old, old + 1) == old:
            got[i] = old
            done = True


def test_atomics_on_shared_memory_and_a_compare_and_swap_counter(dev, rng):
    x = rng.integers(0, 1000, 3000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    shared_hist.launch(12, 256, x, bins, device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(bins, np.bincount(x % 16, minlength=16))
    ctr, got = np.zeros(1, np.int32), poisoned(4096, np.int32)
    cas_counter.launch(64, 64, ctr, got, device=dev)
    dev.synchronize()
    assert ctr[0] == 4096 and sorted(got) == list(range(4096))     # each unit took one ticket


def test_every_atomic_op_on_one_address_each(dev, rng):
    x = rng.integers(-50, 50, 300).astype(np.int32)
    acc = np.array([0, 0, 1 << 30, -(1 << 30), -1, 0, 0, 0], np.int32)
    facc = np.array([0, 1e9, -1e9], np.float32)
    got, want = on_device_and_interpreter(dev, atomics, 5, 64, lambda: [x, acc.copy(), facc.copy(),
                                                                        np.zeros(1, np.uint32)])
    assert got[1][7] in x                       # which compare-and-swap wins is unordered
    got[1][7] = want[1][7]
    for g, w in zip(got, want):
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)
    _, a, f, u = got                            # and NumPy's, in any order of the updates
    assert list(a[:7]) == [x.sum(), -x.sum(), x.min(), x.max(), np.bitwise_and.reduce(x), np.bitwise_or.reduce(x),
                           np.bitwise_xor.reduce(x)]
    assert list(f) == [x.sum(), x.min(), x.max()] and u[0] == np.uint32(x.astype(np.int64).sum() % 2**32)
