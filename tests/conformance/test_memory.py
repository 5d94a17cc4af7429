"""Shared memory with barriers, local arrays, multi-dimensional arrays."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i32
from tests.conftest import poisoned


@cb.kernel
def reverse_in_cube(x: Array[f32], out: Mut[Array[f32]]):
    tile = cb.SharedMemory(f32, cb.CUBE_DIM)
    u = cb.UNIT_POS
    tile[u] = x[cb.ABSOLUTE_POS]
    cb.sync_cube()
    out[cb.ABSOLUTE_POS] = tile[cb.CUBE_DIM - 1 - u]


def test_shared_memory_is_shared_by_a_cube_and_ordered_by_sync(dev, rng):
    x = rng.standard_normal(4 * 64).astype(np.float32)
    out = poisoned(x.size, np.float32)
    reverse_in_cube.launch(4, 64, x, out, device=dev)
    np.testing.assert_array_equal(out, x.reshape(4, 64)[:, ::-1].ravel())


@cb.kernel
def flip_rows_in_cube(x: Array[f32], out: Mut[Array[f32]]):
    tile = cb.SharedMemory(f32, (cb.CUBE_DIM_Y, cb.CUBE_DIM_X))     # 2-D, its extents from the cube
    tx, ty = cb.UNIT_POS_X, cb.UNIT_POS_Y
    row = cb.CUBE_POS_X * cb.CUBE_DIM_Y + ty
    tile[ty, tx] = x[row * cb.CUBE_DIM_X + tx]
    cb.sync_cube()
    out[row * cb.CUBE_DIM_X + tx] = tile[cb.CUBE_DIM_Y - 1 - ty, tx]


def test_two_dimensional_shared_memory_sized_by_the_cube(dev, rng):
    """The CPU backend once wrote CUBE_DIM_X into its IR as "8:i32" (a typed constant) and LLVM
    refused the kernel."""
    x = rng.standard_normal(3 * 4 * 8).astype(np.float32)
    out = poisoned(x.size, np.float32)
    flip_rows_in_cube[3, (8, 4)](x, out, device=dev)
    np.testing.assert_array_equal(out, x.reshape(3, 4, 8)[:, ::-1, :].ravel())


@cb.kernel
def tree_sum(x: Array[f32], out: Mut[Array[f32]], dim: Comptime[int]):
    s = cb.SharedMemory(f32, dim)
    u = cb.UNIT_POS
    s[u] = x[cb.ABSOLUTE_POS]
    cb.sync_cube()
    step = i32(1)                          # a typed value: this while loop is a runtime loop
    while step < dim:                      # with a barrier inside (uniform: the trip count is)
        if u % (2 * step) == 0:
            s[u] += s[u + step]
        cb.sync_cube()
        step *= 2
    if u == 0:
        out[cb.CUBE_POS] = s[0]


@pytest.mark.parametrize("dim", [32, 128])
def test_tree_reduction_with_sync_in_a_runtime_loop(dev, rng, dim):
    cubes = 5
    x = rng.standard_normal(cubes * dim).astype(np.float32)
    out = poisoned(cubes, np.float32)
    tree_sum.launch(cubes, dim, x, out, dim, device=dev)
    np.testing.assert_allclose(out, x.reshape(cubes, dim).sum(1), rtol=1e-4, atol=1e-5)


@cb.kernel
def local_sort4(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        a = cb.LocalArray(i32, 4)
        for k in range(4):
            a[k] = x[4 * i + k]
        for p in range(4):
            for q in range(3 - p):
                if a[q] > a[q + 1]:
                    t = a[q]
                    a[q] = a[q + 1]
                    a[q + 1] = t
        out[i] = a[0] * 1000000 + a[3]


def test_local_arrays_are_private_to_each_unit(dev, rng):
    n = 100
    x = rng.integers(0, 1000, 4 * n).astype(np.int32)
    out = poisoned(n, np.int32)
    local_sort4.launch(1, 128, x, out, device=dev)
    s = np.sort(x.reshape(n, 4), axis=1)
    np.testing.assert_array_equal(out, s[:, 0] * 1000000 + s[:, 3])


@cb.kernel
def matrix_ops(a: Array[f32], b: Array[f32], c: Mut[Array[f32]]):
    row, col = cb.ABSOLUTE_POS_Y, cb.ABSOLUTE_POS_X
    if row < c.shape[0] and col < c.shape[1]:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


def test_two_dimensional_arrays_and_shape(dev, rng):
    a = rng.standard_normal((33, 17)).astype(np.float32)
    b = rng.standard_normal((17, 29)).astype(np.float32)
    c = poisoned((33, 29), np.float32)
    matrix_ops.launch((4, 5), (8, 8), a, b, c, device=dev)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5)
