"""Shared and local memory, barriers, poison, and bounds checking."""

from __future__ import annotations

import numpy as np
import pytest
from interp_kit import KB, lower_bounds_checks

from cubepy.errors import OutOfBoundsError
from cubepy.ir.types import f32, i32, i64

rng = np.random.default_rng()


def tree_reduce_kernel(units, dtype=i32, sync=True):
    """Per cube: s[t] = x[g]; then halve: s[t] += s[t + stride] while stride > 0; out[cube] = s[0]."""
    kb = KB("tree", cube_dim=(units, 1, 1))
    x, out = kb.array("x", dtype, mutable=False), kb.array("out", dtype)
    s = kb.shared("s", dtype, (units,))
    t = kb.builtin("unit_pos_x")
    kb.line(10)
    kb.store(s, t, kb.load(x, kb.gid()))
    if sync:
        kb.sync()
    stride = kb.var("stride", kb.c(0).type)
    kb.store_var(stride, kb.c(units // 2))
    with kb.loop():
        st_ = kb.load_var(stride)
        with kb.if_(kb.cmp("eq", st_, kb.c(0))):
            kb.brk()
        with kb.if_(kb.cmp("lt", t, st_)):
            kb.line(20)
            other = kb.load(s, kb.op("add", t, st_))
            kb.line(21)
            kb.store(s, t, kb.op("add", kb.load(s, t), other))
        if sync:
            kb.sync()
        kb.store_var(stride, kb.op("floordiv", st_, kb.c(2)))
    with kb.if_(kb.cmp("eq", t, kb.c(0))):
        kb.store(out, kb.builtin("cube_pos_x"), kb.load(s, kb.c(0)))
    return kb


@pytest.mark.parametrize("units", [1, 2, 64, 256])
@pytest.mark.parametrize("races", [False, True])
def test_shared_tree_reduction_per_cube(units, races):
    cubes = 5
    x = rng.integers(-10**6, 10**6, units * cubes).astype(np.int32)
    out = np.full(cubes, 0x5A, np.int32)
    tree_reduce_kernel(units).run([x, out], cube_count=(cubes,), races=races)
    np.testing.assert_array_equal(out, x.reshape(cubes, units).sum(axis=1))


def test_shared_memory_is_per_cube_and_poisoned():
    kb = KB("sh", cube_dim=(4, 1, 1))
    out = kb.array("out", f32, ndim=2)
    s = kb.shared("s", f32, (8,))
    t, c = kb.builtin("unit_pos_x"), kb.builtin("cube_pos_x")
    kb.store(s, t, kb.cast(kb.op("add", c, kb.op("mul", t, kb.c(10))), f32))
    kb.sync()
    kb.store(out, c, t, kb.load(s, t))
    kb.store(out, c, kb.op("add", t, kb.c(4)), kb.load(s, kb.op("add", t, kb.c(4))))
    res = np.zeros((3, 8), np.float32)
    kb.run([res], cube_count=(3,))
    np.testing.assert_array_equal(res[:, :4], np.arange(3)[:, None] + 10 * np.arange(4))
    assert np.isnan(res[:, 4:]).all()  # never written: poison


def test_local_memory_is_per_unit_and_poisoned():
    kb = KB("loc", cube_dim=(16, 1, 1))
    x, out = kb.array("x", i64, mutable=False), kb.array("out", i64, ndim=2)
    loc = kb.local("l", i64, (2, 3))
    g = kb.gid()
    v = kb.load(x, g)
    with kb.for_(kb.c(0), kb.c(3), kb.c(1)) as j:
        kb.store(loc, kb.c(0), j, kb.op("mul", v, kb.cast(j, i64)))
    with kb.for_(kb.c(0), kb.c(3), kb.c(1)) as j:
        kb.store(out, g, j, kb.load(loc, kb.c(0), j))
        kb.store(out, g, kb.op("add", j, kb.c(3)), kb.load(loc, kb.c(1), j))
    xv = rng.integers(1, 100, 32)
    res = np.zeros((32, 6), np.int64)
    kb.run([xv, res], cube_count=(2,))
    np.testing.assert_array_equal(res[:, :3], xv[:, None] * np.arange(3))
    assert (res[:, 3:] == 0x5A5A5A5A5A5A5A5A).all()


def copy_kernel(checked, offset, ndim=1):
    kb = KB("copy", cube_dim=(32, 1, 1), checked=checked)
    x, out = kb.array("x", f32, ndim=ndim, mutable=False), kb.array("out", f32, ndim=ndim)
    g = kb.gid()
    kb.line(5)
    src = [kb.op("add", g, kb.c(offset))] + [kb.c(1)] * (ndim - 1)
    v = kb.load(x, *src)
    kb.line(6)
    kb.store(out, g, *([kb.c(1)] * (ndim - 1)), v)
    return kb


LOWER = [False] + ([True] if lower_bounds_checks is not None else [])


@pytest.mark.parametrize("lower", LOWER)
@pytest.mark.parametrize("checked", [True, False])
def test_out_of_bounds_load_reads_nothing_and_raises(checked, lower):
    n, guard = 60, 5
    big = rng.standard_normal(n + 2 * guard).astype(np.float32)
    x = big[guard:-guard]
    out_big = np.full(64 + 2 * guard, -9, np.float32)
    out = out_big[guard:-guard]
    with pytest.raises(OutOfBoundsError) as e:
        copy_kernel(checked, 3).run([x, out], cube_count=(2,), lower=lower)
    msg = str(e.value)
    assert "index (60,) is out of bounds for array 'x' of shape (60,)" in msg
    assert "unit (25, 0, 0) of cube (1, 0, 0)" in msg and "line 5" in msg and "copy" in msg
    np.testing.assert_array_equal(out[:57], x[3:])        # in-bounds units still ran
    assert (out[57:] == 0).all()                          # out-of-bounds loads give 0
    assert (out_big[:guard] == -9).all() and (out_big[-guard:] == -9).all()


@pytest.mark.parametrize("lower", LOWER)
@pytest.mark.parametrize("checked", [True, False])
def test_out_of_bounds_store_writes_nothing_outside(checked, lower):
    n, guard = 64, 4
    x = rng.standard_normal(64).astype(np.float32)
    out_big = np.full(n + 2 * guard, -9, np.float32)
    out = out_big[guard:guard + n - 10]                   # 54 elements, 64 units
    kb = KB("st", cube_dim=(64, 1, 1), checked=checked)
    xa, oa = kb.array("x", f32, mutable=False), kb.array("out", f32)
    g = kb.gid()
    kb.line(9)
    kb.store(oa, kb.op("sub", g, kb.c(3)), kb.load(xa, g))  # indices -3 .. 60
    pattern = r"index \(-3,\) is out of bounds for array 'out' of shape \(54,\)"
    with pytest.raises(OutOfBoundsError, match=pattern):
        kb.run([x, out], lower=lower)
    np.testing.assert_array_equal(out, x[3:57])
    assert (out_big[:guard] == -9).all() and (out_big[guard + 54:] == -9).all()


@pytest.mark.parametrize("lower", LOWER)
def test_out_of_bounds_2d_names_the_index_tuple(lower):
    x = rng.standard_normal((40, 2)).astype(np.float32)
    out = np.zeros((64, 2), np.float32)
    pattern = r"index \(40, 1\) is out of bounds for array 'x' of shape \(40, 2\)"
    with pytest.raises(OutOfBoundsError, match=pattern):
        copy_kernel(True, 0, ndim=2).run([x, out], cube_count=(2,), lower=lower)
    np.testing.assert_array_equal(out[:40, 1], x[:, 1])
    assert (out[40:] == 0).all() and (out[:, 0] == 0).all()


@pytest.mark.parametrize("lower", LOWER)
def test_out_of_bounds_shared_and_local(lower):
    kb = KB("shoob", cube_dim=(8, 1, 1))
    out = kb.array("out", i32)
    s = kb.shared("s", i32, (8,))
    loc = kb.local("l", i32, (4,))
    t = kb.builtin("unit_pos_x")
    kb.store(s, t, t)
    kb.store(loc, kb.op("floordiv", t, kb.c(2)), t)
    kb.sync()
    kb.line(3)
    kb.store(out, kb.gid(), kb.load(s, kb.op("add", t, kb.c(1))))  # s[8] is outside (cube's copy)
    res = np.full(16, 77, np.int32)
    pattern = r"index \(8,\) .* array 's' of shape \(8,\) \(unit \(7, 0, 0\) of cube \(0, 0, 0\)\)"
    with pytest.raises(OutOfBoundsError, match=pattern):
        kb.run([res], cube_count=(2,), lower=lower)
    np.testing.assert_array_equal(res, [1, 2, 3, 4, 5, 6, 7, 0] * 2)  # no peeking into cube 1's copy
    kb2 = KB("locoob", cube_dim=(4, 1, 1))
    out2 = kb2.array("out", i32)
    loc2 = kb2.local("l", i32, (4,))
    kb2.store(loc2, kb2.op("add", kb2.builtin("unit_pos_x"), kb2.c(2)), kb2.c(1))
    kb2.store(out2, kb2.gid(), kb2.load(loc2, kb2.c(3)))
    res2 = np.zeros(4, np.int32)
    pattern = r"index \(4,\) is out of bounds for array 'l' of shape \(4,\)"
    with pytest.raises(OutOfBoundsError, match=pattern):
        kb2.run([res2], lower=lower)
    np.testing.assert_array_equal(res2, [0x5A5A5A5A, 1, 0x5A5A5A5A, 0x5A5A5A5A])  # l[4], l[5] never written


def test_inactive_units_do_not_bounds_fault():
    kb = KB("guarded", cube_dim=(32, 1, 1))
    x, out = kb.array("x", f32, mutable=False), kb.array("out", f32)
    g = kb.gid()
    with kb.if_(kb.cmp("lt", g, kb.shape(x))):
        kb.store(out, g, kb.op("mul", kb.load(x, g), kb.c(2.0, f32)))
    xv = rng.standard_normal(50).astype(np.float32)
    res = np.full(50, np.nan, np.float32)
    kb.run([xv, res], cube_count=(2,))
    np.testing.assert_array_equal(res, 2 * xv)
