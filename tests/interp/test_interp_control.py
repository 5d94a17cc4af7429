"""Control flow under divergence: if/else, for (per-unit trip counts, negative steps), loop,
nested break/continue and early return, against a per-unit Python reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from interp_kit import I32, KB

from cubepy.ir.types import i32

UNITS = 64


def nested_kernel(plane=16):
    kb = KB("nested", cube_dim=(UNITS, 1, 1), plane_dim=plane)
    d_, ni_, cap_ = (kb.array(n, i32, mutable=False) for n in ("d", "ni", "cap"))
    out, last_i, psum = kb.array("out", i32), kb.array("last_i", i32), kb.array("psum", i32)
    g = kb.gid()
    d, ni, cap = kb.load(d_, g), kb.load(ni_, g), kb.load(cap_, g)
    acc = kb.var("acc", I32)
    kb.store_var(acc, kb.c(0))
    body = kb.for_(kb.c(0), ni, kb.c(1), name="i")
    with body as i:
        outer_var = kb.k.vars[-1]
        with kb.if_(kb.cmp("eq", kb.op("mod", kb.op("add", i, d), kb.c(3)), kb.c(0))):
            kb.cont()
        with kb.for_(i, kb.c(10), kb.c(2), name="j") as j:
            with kb.if_(kb.cmp("gt", kb.op("add", d, j), kb.c(12))):
                kb.brk()
            with kb.if_(kb.cmp("eq", kb.op("mod", j, kb.c(4)), kb.c(1))):
                kb.cont()
            kb.store_var(acc, kb.op("add", kb.load_var(acc), kb.op("mul", i, j)))
        with kb.if_(kb.cmp("gt", kb.load_var(acc), cap)):
            kb.brk()
        kb.store_var(acc, kb.op("add", kb.load_var(acc), kb.c(1)))
    a = kb.load_var(acc)
    kb.store(out, g, a)
    kb.store(last_i, g, kb.load_var(outer_var))
    kb.store(psum, g, kb.plane("plane_sum", a))      # every unit is back after the loops
    return kb


def nested_ref(d, ni, cap):
    acc, i = 0, 0
    while i < ni:
        if (i + d) % 3 == 0:
            i += 1
            continue
        j = i
        while j < 10:
            if d + j > 12:
                break
            if j % 4 == 1:
                j += 2
                continue
            acc += i * j
            j += 2
        if acc > cap:
            break
        acc += 1
        i += 1
    return acc, i


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cubes=st.integers(1, 3), plane=st.sampled_from([4, 16, 64]))
def test_nested_loops_break_continue(seed, cubes, plane):
    rng = np.random.default_rng(seed)
    n = UNITS * cubes
    d = rng.integers(-5, 15, n).astype(np.int32)
    ni = rng.integers(-2, 12, n).astype(np.int32)
    cap = rng.integers(0, 200, n).astype(np.int32)
    out, last_i, psum = (np.full(n, -99, np.int32) for _ in range(3))
    nested_kernel(plane).run([d, ni, cap, out, last_i, psum], cube_count=(cubes,))
    ref = [nested_ref(*map(int, t)) for t in zip(d, ni, cap)]
    np.testing.assert_array_equal(out, [r[0] for r in ref])
    np.testing.assert_array_equal(last_i, [r[1] for r in ref])
    sums = np.array([r[0] for r in ref]).reshape(-1, plane).sum(axis=1)
    np.testing.assert_array_equal(psum, np.repeat(sums, plane))


def collatz_kernel():
    kb = KB("collatz", cube_dim=(32, 1, 1))
    x, out, after = kb.array("x", i32, mutable=False), kb.array("out", i32), kb.array("after", i32)
    g = kb.gid()
    k, steps = kb.var("k", I32), kb.var("steps", I32)
    kb.store_var(k, kb.load(x, g))
    kb.store_var(steps, kb.c(0))
    with kb.loop():
        kv, sv = kb.load_var(k), kb.load_var(steps)
        with kb.if_(kb.cmp("le", kv, kb.c(1))):
            kb.brk()
        with kb.if_(kb.cmp("gt", sv, kb.c(40))):
            kb.store(out, g, kb.c(-1))
            kb.ret()
        even = kb.cmp("eq", kb.op("mod", kv, kb.c(2)), kb.c(0))
        up = kb.op("add", kb.op("mul", kv, kb.c(3)), kb.c(1))
        nxt = kb.op("select", even, kb.op("floordiv", kv, kb.c(2)), up)
        kb.store_var(k, nxt)
        kb.store_var(steps, kb.op("add", sv, kb.c(1)))
    kb.store(out, g, kb.load_var(steps))
    kb.store(after, g, kb.c(1))                       # not reached by units that returned
    return kb


def collatz_ref(v):
    steps = 0
    while v > 1:
        if steps > 40:
            return -1
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def test_loop_with_break_and_early_return():
    rng = np.random.default_rng()
    x = rng.integers(-3, 200, 96).astype(np.int32)
    out, after = np.full(96, -99, np.int32), np.zeros(96, np.int32)
    collatz_kernel().run([x, out, after], cube_count=(3,))
    ref = np.array([collatz_ref(int(v)) for v in x])
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(after, (ref != -1).astype(np.int32))
    assert (ref == -1).any() and (ref > 0).any()


def test_for_with_negative_and_varying_steps():
    kb = KB("steps", cube_dim=(32, 1, 1))
    lo_, hi_, st_ = (kb.array(n, i32, mutable=False) for n in ("lo", "hi", "step"))
    out, cnt = kb.array("out", i32), kb.array("cnt", i32)
    g = kb.gid()
    total, count = kb.var("total", I32), kb.var("count", I32)
    kb.store_var(total, kb.c(0))
    kb.store_var(count, kb.c(0))
    with kb.for_(kb.load(hi_, g), kb.load(lo_, g), kb.load(st_, g)) as i:
        kb.store_var(total, kb.op("add", kb.load_var(total), kb.op("mul", i, i)))
        kb.store_var(count, kb.op("add", kb.load_var(count), kb.c(1)))
    kb.store(out, g, kb.load_var(total))
    kb.store(cnt, g, kb.load_var(count))
    rng = np.random.default_rng()
    n = 64
    lo, hi = rng.integers(-20, 20, n).astype(np.int32), rng.integers(-20, 20, n).astype(np.int32)
    step = (rng.integers(1, 6, n) * rng.choice([-1, 1], n)).astype(np.int32)
    out, cnt = np.zeros(n, np.int32), np.zeros(n, np.int32)
    kb.run([lo, hi, step, out, cnt], cube_count=(2,))
    ranges = [range(int(h), int(l_), int(s)) for l_, h, s in zip(lo, hi, step)]
    np.testing.assert_array_equal(out, [sum(i * i for i in r) for r in ranges])
    np.testing.assert_array_equal(cnt, [len(r) for r in ranges])
    assert (cnt == 0).any() and (cnt > 3).any()


def test_if_else_nested_divergence():
    kb = KB("ifs", cube_dim=(64, 1, 1))
    x, out = kb.array("x", i32, mutable=False), kb.array("out", i32)
    g = kb.gid()
    v = kb.load(x, g)
    with kb.if_(kb.cmp("gt", v, kb.c(0))) as orelse:
        with kb.if_(kb.cmp("eq", kb.op("mod", v, kb.c(2)), kb.c(0))) as inner_else:
            kb.store(out, g, kb.op("floordiv", v, kb.c(2)))
        with kb.at(inner_else):
            kb.store(out, g, kb.op("neg", v))
    with kb.at(orelse):
        with kb.if_(kb.cmp("lt", v, kb.c(-10))):
            kb.ret()
        kb.store(out, g, kb.op("mul", v, kb.c(3)))
    # units that returned skip this; everyone else adds 1000
    kb.store(out, g, kb.op("add", kb.load(out, g), kb.c(1000)))
    xv = np.random.default_rng().integers(-30, 30, 128).astype(np.int32)
    res = np.full(128, 7, np.int32)
    kb.run([xv, res], cube_count=(2,))
    def ref1(v):
        if v < -10:
            return 7
        return 1000 + ((v // 2 if v % 2 == 0 else -v) if v > 0 else 3 * v)

    ref = [ref1(v) for v in map(int, xv)]
    np.testing.assert_array_equal(res, ref)
