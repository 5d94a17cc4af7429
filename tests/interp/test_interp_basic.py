"""Launch basics: probe, saxpy, builtins, parameters, shapes, Lines, variables and poison."""

from __future__ import annotations

import time

import numpy as np
import pytest
from interp_kit import BACKEND, I32, KB, T, poisoned

from cubepy.errors import ArgumentValueError
from cubepy.ir.types import bool_, f32, f64, i32, i64, u8

rng = np.random.default_rng()


def saxpy_kernel(cube=256):
    kb = KB("saxpy", cube_dim=(cube, 1, 1))
    x, y, out = kb.array("x", f32, mutable=False), kb.array("y", f32, mutable=False), kb.array("out", f32)
    a = kb.scalar("a", f32)
    i = kb.gid()
    with kb.if_(kb.cmp("lt", i, kb.shape(out))):
        kb.store(out, i, kb.op("add", kb.op("mul", a, kb.load(x, i)), kb.load(y, i)))
    return kb


@pytest.mark.parametrize("n", [1, 255, 256, 1000, 4097])
def test_saxpy_matches_numpy(n):
    kb = saxpy_kernel()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    a = np.float32(rng.uniform(0.5, 3))
    out = np.full(n + 7, np.nan, np.float32)
    view = out[:n]
    kb.run([x, y, view, a], cube_count=(-(-n // 256),))
    np.testing.assert_array_equal(view, a * x + y)
    assert np.isnan(out[n:]).all()


def test_saxpy_1m_is_fast():
    kb = saxpy_kernel()
    n = 1 << 20
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = poisoned(n, np.float32)
    kb.run([x, y, out, np.float32(2.0)], cube_count=(n // 256,))  # warm up
    t = time.perf_counter()
    kb.run([x, y, out, np.float32(-1.5)], cube_count=(n // 256,))
    elapsed = time.perf_counter() - t
    np.testing.assert_array_equal(out, np.float32(-1.5) * x + y)
    assert elapsed < 0.5, elapsed


def test_probe():
    p = BACKEND.probe()
    assert (p.name, p.backend, p.plane_dim) == ("interpreter", "interp", 32)
    assert p.supports("plane_ops") and p.supports("fp64") and not p.supports("bf16")
    for pd in (1, 2, 4, 8, 16, 32, 64):
        q = BACKEND.probe(plane_dim=pd, races=True)
        assert q.plane_size_min == q.plane_size_max == q.plane_dim == pd
    for bad in (0, 3, 48, 128, -8, 2.0, True):
        with pytest.raises(ArgumentValueError, match="power of two"):
            BACKEND.probe(plane_dim=bad)


NAMES = ["unit_pos_x", "unit_pos_y", "unit_pos_z", "cube_pos_x", "cube_pos_y", "cube_pos_z",
         "cube_dim_x", "cube_dim_y", "cube_dim_z", "cube_count_x", "cube_count_y", "cube_count_z",
         "plane_dim", "unit_pos_plane"]


@pytest.mark.parametrize("cube_dim,cube_count,plane", [((3, 5, 2), (2, 3, 2), 8), ((7, 1, 1), (3, 1, 1), 4),
                                                       ((4, 4, 4), (1, 2, 3), 16)])
def test_builtins_3d(cube_dim, cube_count, plane):
    kb = KB("builtins", cube_dim=cube_dim, plane_dim=plane)
    out = kb.array("out", i32, ndim=2)
    b = {n: kb.builtin(n) for n in NAMES}
    lin = kb.op("add", b["unit_pos_x"], kb.op("mul", b["cube_dim_x"],
                kb.op("add", b["unit_pos_y"], kb.op("mul", b["cube_dim_y"], b["unit_pos_z"]))))
    cube = kb.op("add", b["cube_pos_x"], kb.op("mul", b["cube_count_x"],
                 kb.op("add", b["cube_pos_y"], kb.op("mul", b["cube_count_y"], b["cube_pos_z"]))))
    units = kb.op("mul", kb.op("mul", b["cube_dim_x"], b["cube_dim_y"]), b["cube_dim_z"])
    g = kb.op("add", kb.op("mul", cube, units), lin)
    for k, n in enumerate(NAMES):
        kb.store(out, g, kb.c(k), b[n])
    U, C = int(np.prod(cube_dim)), int(np.prod(cube_count))
    res = np.full((U * C, len(NAMES)), -7, np.int32)
    kb.run([res], cube_count=cube_count)
    expect = []
    for cz in range(cube_count[2]):
        for cy in range(cube_count[1]):
            for cx in range(cube_count[0]):
                for z in range(cube_dim[2]):
                    for y in range(cube_dim[1]):
                        for x in range(cube_dim[0]):
                            li = x + y * cube_dim[0] + z * cube_dim[0] * cube_dim[1]
                            expect.append([x, y, z, cx, cy, cz, *cube_dim, *cube_count, plane, li % plane])
    np.testing.assert_array_equal(res, np.array(expect))


def test_params_shapes_and_2d_indexing():
    kb = KB("scale2d", cube_dim=(4, 3, 1))
    src, dst = kb.array("src", i64, ndim=2, mutable=False), kb.array("dst", i64, ndim=2)
    k, off = kb.scalar("k", i64), kb.scalar("off", i32)
    r, c = kb.builtin("unit_pos_y"), kb.builtin("unit_pos_x")
    r = kb.op("add", r, kb.op("mul", kb.builtin("cube_pos_y"), kb.c(3)))
    inside = kb.op("and", kb.cmp("lt", r, kb.shape(src, 0)), kb.cmp("lt", c, kb.shape(src, 1)))
    with kb.if_(inside):
        v = kb.op("mul", kb.load(src, r, c), k)
        kb.store(dst, r, c, kb.op("add", v, kb.cast(off, i64)))
    a = rng.integers(-1000, 1000, (7, 4))
    out = np.zeros((7, 4), np.int64)
    kb.run([a, out, np.int64(-3), np.int32(11)], cube_count=(1, 3, 1))
    np.testing.assert_array_equal(out, a * -3 + 11)


def test_lines_elementwise_extract_insert_select_broadcast():
    w = 4
    kb = KB("lines", cube_dim=(16, 1, 1))
    x, out = kb.array("x", f32, width=w, mutable=False), kb.array("out", f32, width=w)
    flags = kb.array("flags", bool_, mutable=False)
    i = kb.gid()
    v = kb.load(x, i)
    s = kb.op("extract", v, t=T(f32), index=2)
    b = kb.op("broadcast", s, t=T(f32, w))
    summed = kb.op("add", v, b)
    ins = kb.op("insert", summed, kb.c(-1.0, f32), index=0)
    chosen = kb.op("select", kb.load(flags, i), ins, kb.op("neg", v))
    kb.store(out, i, chosen)
    n = 32
    xv = rng.standard_normal((n, w)).astype(np.float32)
    fl = rng.random(n) < 0.5
    res = np.full((n, w), np.nan, np.float32)
    kb.run([xv, res, fl], cube_count=(2,))
    expect = xv + xv[:, 2:3]
    expect[:, 0] = -1
    expect = np.where(fl[:, None], expect, -xv)
    np.testing.assert_array_equal(res, expect)


def test_line_uniform_const_with_per_unit_scalar_when_n_equals_width():
    # 4 units and Lines of 4: a uniform Line (4,) must not be mistaken for a per-unit scalar
    kb = KB("ambig", cube_dim=(4, 1, 1))
    out = kb.array("out", i32, width=4)
    i = kb.gid()
    line = kb.op("broadcast", i, t=T(i32, 4))
    kb.store(out, i, kb.op("add", line, kb.c(10, i32, 4)))
    res = np.zeros((4, 4), np.int32)
    kb.run([res])
    np.testing.assert_array_equal(res, np.arange(4)[:, None] + 10 + np.zeros(4, np.int32))


@pytest.mark.parametrize("dtype,expect", [(i32, 0x5A5A5A5A), (u8, 0x5A), (f64, np.nan), (bool_, True)])
def test_unwritten_variable_reads_poison(dtype, expect):
    kb = KB("poison", cube_dim=(3, 1, 1))
    npd = np.dtype(dtype.numpy_name)
    out = kb.array("out", dtype)
    v = kb.var("v", T(dtype))
    kb.store(out, kb.gid(), kb.load_var(v))
    res = np.zeros(3, npd)
    kb.run([res])
    np.testing.assert_array_equal(res, np.full(3, expect, npd))


def test_variable_store_only_for_active_units():
    kb = KB("vars", cube_dim=(64, 1, 1))
    x, out = kb.array("x", i32, mutable=False), kb.array("out", i32)
    v = kb.var("v", I32)
    i = kb.gid()
    kb.store_var(v, kb.c(7))
    xv = kb.load(x, i)
    with kb.if_(kb.cmp("gt", xv, kb.c(0))) as orelse:
        kb.store_var(v, xv)
    with kb.at(orelse):
        kb.store_var(v, kb.op("mul", kb.load_var(v), xv))
    kb.store(out, i, kb.load_var(v))
    a = rng.integers(-50, 50, 64).astype(np.int32)
    res = poisoned(64, np.int32)
    kb.run([a, res])
    np.testing.assert_array_equal(res, np.where(a > 0, a, 7 * a))
