"""Plane ops against a per-plane Python reference: plane sizes 1..64, partial last planes, and
units taken out by an early return."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interp_kit import KB, T

from cubepy.ir.types import DTYPES_BY_NAME, bool_, i32, u64

PLANE_SIZES = [1, 8, 16, 32, 64]
VALUE_OPS = ["plane_sum", "plane_prod", "plane_min", "plane_max", "plane_inclusive_sum",
             "plane_exclusive_sum"]
SHUFFLES = ["plane_broadcast", "plane_shuffle", "plane_shuffle_xor", "plane_shuffle_up", "plane_shuffle_down"]
BOOL_OPS = ["plane_all", "plane_any", "plane_ballot", "plane_elect"]


def plane_kernel(code, units, plane, dname, width=1, arg=None):
    """out[g] = code(x[g], arg) after units with early[g] returned; arg: None, an int (a constant)
    or "array" (a per-unit operand read from src)."""
    dtype = DTYPES_BY_NAME[dname]
    kb = KB(code, cube_dim=(units, 1, 1), plane_dim=plane)
    x = kb.array("x", dtype, width=width, mutable=False)
    early = kb.array("early", bool_, mutable=False)
    rt = {"plane_all": T(bool_, width), "plane_any": T(bool_, width), "plane_elect": T(bool_),
          "plane_ballot": T(u64, width)}.get(code, T(dtype, width))
    out = kb.array("out", rt.dtype, width=rt.width)
    src = kb.array("src", i32, mutable=False)
    g = kb.gid()
    with kb.if_(kb.load(early, g)):
        kb.ret()
    v = kb.load(x, g)
    if code == "plane_elect":
        r = kb.plane(code)
    elif arg is None:
        r = kb.plane(code, v, t=rt)
    else:
        a = kb.load(src, g) if arg == "array" else kb.c(arg)
        r = kb.plane(code, v, a)
    kb.store(out, g, r)
    return kb


def reference(code, x, active, units, plane, arg, srcs):
    """Per unit result (None for inactive units), computed plane by plane in Python."""
    n = len(active)
    res = [None] * n
    for c0 in range(0, n, units):
        for p0 in range(c0, c0 + units, plane):
            g = list(range(p0, min(p0 + plane, c0 + units)))
            act = [u for u in g if active[u]]
            for lane, u in enumerate(g):
                if not active[u]:
                    continue
                if code == "plane_sum":
                    r = sum(x[v] for v in act)
                elif code == "plane_prod":
                    r = 1
                    for v in act:
                        r = r * x[v]
                elif code == "plane_min":
                    r = min(x[v] for v in act)
                elif code == "plane_max":
                    r = max(x[v] for v in act)
                elif code == "plane_inclusive_sum":
                    r = sum(x[v] for v in act if v <= u)
                elif code == "plane_exclusive_sum":
                    r = sum(x[v] for v in act if v < u)
                elif code == "plane_all":
                    r = all(x[v] for v in act)
                elif code == "plane_any":
                    r = any(x[v] for v in act)
                elif code == "plane_ballot":
                    r = sum(1 << (v - p0) for v in act if x[v])
                elif code == "plane_elect":
                    r = u == act[0]
                else:
                    a = srcs[u] if arg == "array" else arg
                    s = {"plane_broadcast": a % plane, "plane_shuffle": a % plane,
                         "plane_shuffle_xor": lane ^ a, "plane_shuffle_up": lane - a,
                         "plane_shuffle_down": lane + a}[code]
                    ok = 0 <= s < len(g) and active[g[s]]
                    r = x[g[s]] if ok else x[u]
                res[u] = r
    return res


def wrap(v: int, npd: np.dtype) -> int:
    bits = npd.itemsize * 8
    v %= 1 << bits
    return v - (1 << bits) if npd.kind == "i" and v >= 1 << (bits - 1) else v


def check(code, units, cubes, plane, dname, rng, arg=None, width=1, p_early=0.25):
    n = units * cubes
    npd = np.dtype(DTYPES_BY_NAME[dname].numpy_name)
    shape = (n,) if width == 1 else (n, width)
    if code in ("plane_all", "plane_any", "plane_ballot") or npd.kind == "b":
        x = rng.random(shape) < rng.choice([0.1, 0.5, 0.95])
    elif code == "plane_prod":
        x = rng.choice([-2, -1, 1, 2, 3], shape).astype(npd)
    elif npd.kind == "f":
        x = rng.standard_normal(shape).astype(npd)
    else:
        x = rng.integers(-1000, 1000, shape).astype(npd)
    early = rng.random(n) < p_early
    srcs = rng.integers(0, 3 * plane, n).astype(np.int32)
    kb = plane_kernel(code, units, plane, dname, width, arg)
    rt_np = {"plane_all": bool, "plane_any": bool, "plane_elect": bool,
             "plane_ballot": np.uint64}.get(code, npd)
    out = np.zeros(shape if code != "plane_elect" else (n,), rt_np)
    sentinel = np.array(123, rt_np) if rt_np is not bool else np.array(True)
    out[...] = sentinel
    kb.run([x, early, out, srcs], cube_count=(cubes,))
    cols = [x] if width == 1 else [x[:, j] for j in range(width)]
    outs = [out] if width == 1 else [out[:, j] for j in range(width)]
    for xc, oc in zip(cols, outs):
        xs = [v.item() for v in xc]
        expect = reference(code, xs, ~early, units, plane, arg, srcs)
        for u in range(n):
            if expect[u] is None:
                assert oc[u] == sentinel, f"inactive unit {u} wrote"
            elif npd.kind == "f" and code in ("plane_sum", "plane_inclusive_sum", "plane_exclusive_sum",
                                              "plane_prod"):
                assert np.isclose(oc[u], expect[u], rtol=1e-5, atol=1e-5), (u, oc[u], expect[u])
            else:
                e = expect[u]
                if np.dtype(rt_np).kind in "iu" and not isinstance(e, bool):
                    e = wrap(e, np.dtype(rt_np))  # products wrap
                assert oc[u] == e, (code, u, oc[u], expect[u])


@pytest.mark.parametrize("plane", PLANE_SIZES)
@pytest.mark.parametrize("code", VALUE_OPS + BOOL_OPS)
def test_plane_reductions_and_scans(code, plane):
    rng = np.random.default_rng()
    units = 100 if plane > 1 else 7                   # 100 = partial last plane for 8..64
    check(code, units, 3, plane, "i32", rng)


@pytest.mark.parametrize("plane", PLANE_SIZES)
@pytest.mark.parametrize("code", SHUFFLES)
def test_plane_shuffles(code, plane):
    rng = np.random.default_rng()
    units = 100 if plane > 1 else 5
    check(code, units, 2, plane, "i32", rng, arg="array")
    for arg in (0, 1, 3, plane - 1, plane // 2, plane + 1):
        if code == "plane_shuffle_xor" and arg >= plane:
            continue
        check(code, units, 2, plane, "i32", rng, arg=arg)


@pytest.mark.parametrize("code", ["plane_sum", "plane_min", "plane_max", "plane_inclusive_sum",
                                  "plane_exclusive_sum"])
def test_plane_ops_on_floats(code):
    check(code, 96, 2, 32, "f32", np.random.default_rng())
    check(code, 40, 2, 16, "f64", np.random.default_rng())


@pytest.mark.parametrize("code", ["plane_sum", "plane_max", "plane_shuffle_down", "plane_any",
                                  "plane_ballot"])
def test_plane_ops_on_lines(code):
    dname = "bool_" if code in ("plane_any", "plane_ballot") else "i32"
    check(code, 48, 2, 16, dname, np.random.default_rng(), width=4, arg=1 if "shuffle" in code else None)


def test_plane_ops_in_2d_cube_use_linear_unit_order():
    # cube (6, 5): plane p holds linear units [8p, 8p + 8), so lanes wrap across rows
    kb = KB("p2d", cube_dim=(6, 5, 1), plane_dim=8)
    out = kb.array("out", i32, ndim=2)
    x, y = kb.builtin("unit_pos_x"), kb.builtin("unit_pos_y")
    lin = kb.op("add", x, kb.op("mul", y, kb.c(6)))
    kb.store(out, y, x, kb.plane("plane_inclusive_sum", lin))
    res = np.zeros((5, 6), np.int32)
    kb.run([res])
    lin_ref = np.arange(30)
    expect = np.array([sum(range(8 * (i // 8), i + 1)) for i in lin_ref]).reshape(5, 6)
    np.testing.assert_array_equal(res, expect)


@settings(max_examples=30, deadline=None)
@given(code=st.sampled_from(VALUE_OPS + BOOL_OPS + SHUFFLES), plane=st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
       units=st.integers(1, 150), cubes=st.integers(1, 3), p_early=st.sampled_from([0.0, 0.3, 0.9]),
       seed=st.integers(0, 2**32 - 1))
def test_plane_ops_random_shapes(code, plane, units, cubes, p_early, seed):
    arg = "array" if code in SHUFFLES else None
    check(code, units, cubes, plane, "i32", np.random.default_rng(seed), arg=arg, p_early=p_early)
