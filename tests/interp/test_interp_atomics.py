"""Atomics: many units on one element in one step must equal some serial order of them.

Each check rebuilds a serial order from the old values (sorted by a key that any valid order
agrees with) and replays it; small cases are checked against every permutation."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interp_kit import KB

from cubepy.errors import OutOfBoundsError
from cubepy.ir.types import DTYPES_BY_NAME, i32

rng = np.random.default_rng()


@cache
def atomic_kernel(kind, dname, units=256, shared=False):
    dtype = DTYPES_BY_NAME[dname]
    kb = KB(f"atomic_{kind}", cube_dim=(units, 1, 1))
    mem, idx = kb.array("mem", dtype), kb.array("idx", i32, mutable=False)
    vals, cmps = kb.array("vals", dtype, mutable=False), kb.array("cmps", dtype, mutable=False)
    olds = kb.array("olds", dtype)
    g = kb.gid()
    with kb.if_(kb.cmp("lt", g, kb.shape(idx))):
        extra = (kb.load(cmps, g),) if kind == "cas" else ()
        old = kb.atomic(kind, mem, kb.load(idx, g), *extra, kb.load(vals, g))
        kb.store(olds, g, old)
    return kb


def run_atomic(kind, mem, idx, vals, cmps=None, units=256, lower=False):
    n = len(idx)
    olds = np.zeros(n, mem.dtype)
    cmps = np.zeros(n, mem.dtype) if cmps is None else cmps
    make = atomic_kernel.__wrapped__ if lower else atomic_kernel  # lowering edits the kernel: a fresh one
    kb = make(kind, _dname(mem.dtype), units)
    kb.run([mem, idx.astype(np.int32), vals, cmps, olds], cube_count=(-(-n // units),), lower=lower)
    return olds


def _dname(npd):
    by_numpy = {np.dtype(d.numpy_name): d.name for d in DTYPES_BY_NAME.values() if d.name != "bf16"}
    return by_numpy[np.dtype(npd)]


def step(kind, m, v, c=None):
    if kind == "add":
        return m + v
    if kind == "sub":
        return m - v
    if kind == "min":
        return min(m, v)
    if kind == "max":
        return max(m, v)
    if kind == "and":
        return m & v
    if kind == "or":
        return m | v
    if kind == "xor":
        return m ^ v
    if kind == "exchange":
        return v
    return v if m == c else m


def replay(kind, init, order, vals, olds, cmps=None):
    """Whether serial order ``order`` (unit ids) gives exactly ``olds``; returns the final value."""
    m = init
    for j in order:
        if olds[j] != m:
            return None
        m = step(kind, m, vals[j], None if cmps is None else cmps[j])
    return m


SORT_KEYS = {  # an order every valid serialization can be rearranged into
    "add": lambda o, v: (o,),            # positive values: old values increase
    "sub": lambda o, v: (-o,),
    "max": lambda o, v: (o, v),          # the one unit that raised the value goes last in its group
    "min": lambda o, v: (-o, -v),
}


def check_by_sorting(kind, mem0, mem, idx, vals, olds):
    for a in np.unique(idx):
        units = np.flatnonzero(idx == a)
        o, v = [int(x) for x in olds[units]], [int(x) for x in vals[units]]
        order = sorted(range(len(units)), key=lambda j: SORT_KEYS[kind](o[j], v[j]))
        assert replay(kind, int(mem0[a]), order, v, o) == int(mem[a]), (kind, a)


@pytest.mark.parametrize("kind", ["add", "sub", "min", "max"])
@pytest.mark.parametrize("n,bins", [(1, 1), (300, 1), (5000, 7), (100_000, 50)])
def test_arith_atomics_equal_a_serial_order(kind, n, bins):
    idx = rng.integers(0, bins, n)
    vals = rng.integers(1, 1000, n).astype(np.int32)
    mem0 = rng.integers(-10**6, 10**6, bins + 3).astype(np.int32)
    mem = mem0.copy()
    olds = run_atomic(kind, mem, idx, vals)
    check_by_sorting(kind, mem0, mem, idx, vals, olds)
    assert (mem[bins:] == mem0[bins:]).all()


def test_histogram_with_many_collisions():
    n, bins = 200_000, 10
    data = rng.integers(0, bins, n)
    hist = np.zeros(bins, np.int32)
    olds = run_atomic("add", hist, data, np.ones(n, np.int32))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=bins))
    for b in range(bins):  # each unit saw a distinct count: 0, 1, ..., hist[b] - 1
        np.testing.assert_array_equal(np.sort(olds[data == b]), np.arange(hist[b]))


def test_add_wraps_in_its_type():
    mem = np.array([2**31 - 10], np.int32)
    olds = run_atomic("add", mem, np.zeros(20, int), np.ones(20, np.int32))
    assert mem[0] == -2**31 + 10
    expect = np.array([2**31 - 10 + k for k in range(20)]).astype(np.int32)  # wrapping past the maximum
    assert sorted(olds.tolist()) == sorted(expect.tolist())


def test_float_add_sums():
    n = 10_000
    vals = rng.standard_normal(n).astype(np.float32)
    mem = np.zeros(4, np.float32)
    idx = rng.integers(0, 4, n)
    olds = run_atomic("add", mem, idx, vals)
    for a in range(4):
        np.testing.assert_allclose(mem[a], vals[idx == a].astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
        assert len(np.unique(olds[idx == a])) >= (idx == a).sum() - 2


def test_exchange_forms_one_chain():
    n, bins = 3000, 5
    idx = rng.integers(0, bins, n)
    vals = rng.permutation(n).astype(np.int32) + 100      # distinct values
    mem0 = np.arange(bins, dtype=np.int32) - 50
    mem = mem0.copy()
    olds = run_atomic("exchange", mem, idx, vals)
    for a in range(bins):
        units = np.flatnonzero(idx == a)
        after = {int(olds[u]): u for u in units}          # whose value each unit overwrote
        assert len(after) == len(units)
        cur, seen = int(mem0[a]), 0
        while cur in after:
            cur = int(vals[after[cur]])
            seen += 1
        assert seen == len(units) and cur == mem[a]


@pytest.mark.parametrize("kind", ["and", "or", "xor"])
def test_bitwise_atomics_with_one_bit_per_unit(kind):
    # each unit owns one bit of its address, so an old value tells exactly which units came first
    per, bins = 64, 6
    n = per * bins
    idx = np.repeat(np.arange(bins), per)
    rng.shuffle(idx)
    bit = np.zeros(n, np.uint64)
    for a in range(bins):
        units = np.flatnonzero(idx == a)
        bit[units] = np.left_shift(np.uint64(1), rng.permutation(per).astype(np.uint64))
    init = np.full(bins, 0xFFFFFFFFFFFFFFFF if kind == "and" else 0, np.uint64)
    vals = ~bit if kind == "and" else bit
    mem = init.copy()
    olds = run_atomic(kind, mem, idx, vals, units=128)
    for a in range(bins):
        units = np.flatnonzero(idx == a)
        changed = [int(o) ^ int(init[a]) for o in olds[units]]
        order = sorted(range(per), key=lambda j: bin(changed[j]).count("1"))
        assert [bin(changed[j]).count("1") for j in order] == list(range(per))
        v = [int(x) for x in vals[units]]
        assert replay(kind, int(init[a]), order, v, [int(o) for o in olds[units]]) == int(mem[a])


def test_cas_lock_has_one_winner_per_address():
    n, bins = 4096, 9
    idx = rng.integers(0, bins, n)
    mem = np.zeros(bins, np.int32)
    vals = np.arange(1, n + 1, dtype=np.int32)
    olds = run_atomic("cas", mem, idx, vals, np.zeros(n, np.int32))
    for a in range(bins):
        units = np.flatnonzero(idx == a)
        winners = units[olds[units] == 0]
        assert len(winners) == 1 and mem[a] == vals[winners[0]]
        assert (olds[units[units != winners[0]]] == mem[a]).all()


def test_cas_chain_every_unit_can_succeed():
    n = 1000
    mem = np.zeros(1, np.int32)
    perm = rng.permutation(n).astype(np.int32)             # unit u expects perm[u] and writes perm[u] + 1
    olds = run_atomic("cas", mem, np.zeros(n, int), perm + 1, perm)
    order = np.argsort(olds, kind="stable")
    assert replay("cas", 0, order, (perm + 1).tolist(), olds.tolist(), perm.tolist()) == int(mem[0])


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas"]),
       idx=st.lists(st.integers(0, 2), min_size=1, max_size=6),
       data=st.data())
def test_small_cases_against_every_permutation(kind, idx, data):
    k = len(idx)
    vals = data.draw(st.lists(st.integers(-3, 3), min_size=k, max_size=k))
    cmps = data.draw(st.lists(st.integers(-3, 3), min_size=k, max_size=k))
    mem0 = data.draw(st.lists(st.integers(-3, 3), min_size=3, max_size=3))
    mem = np.array(mem0, np.int32)
    olds = run_atomic(kind, mem, np.array(idx), np.array(vals, np.int32), np.array(cmps, np.int32), units=4)
    olds = olds.tolist()
    for a in range(3):
        units = [u for u in range(k) if idx[u] == a]
        ok = any(replay(kind, mem0[a], order, vals, olds, cmps) == mem[a]
                 for order in itertools.permutations(units))
        assert ok, (kind, a, mem0[a], [(vals[u], cmps[u], olds[u]) for u in units], int(mem[a]))


def test_shared_memory_counter_per_cube():
    units, cubes = 128, 6
    kb = KB("shared_atomic", cube_dim=(units, 1, 1))
    out, olds = kb.array("out", i32), kb.array("olds", i32)
    s = kb.shared("counter", i32, (2,))
    t = kb.builtin("unit_pos_x")
    with kb.if_(kb.cmp("eq", t, kb.c(0))):
        kb.store(s, kb.c(1), kb.c(0))
    kb.sync()
    kb.store(olds, kb.gid(), kb.atomic("add", s, kb.c(1), kb.op("add", t, kb.c(1))))
    kb.sync()
    with kb.if_(kb.cmp("eq", t, kb.c(0))):
        kb.store(out, kb.builtin("cube_pos_x"), kb.load(s, kb.c(1)))
    res, ol = np.zeros(cubes, np.int32), np.zeros(units * cubes, np.int32)
    kb.run([res, ol], cube_count=(cubes,), races=True)
    assert (res == units * (units + 1) // 2).all()
    for c in range(cubes):
        o = ol[c * units:(c + 1) * units]
        order = np.argsort(o)
        assert replay("add", 0, order, list(range(1, units + 1)), o.tolist()) == res[c]


@pytest.mark.parametrize("lower", [False, True])
def test_atomic_out_of_bounds_is_skipped_and_reported(lower):
    mem_big = np.zeros(12, np.int32)
    mem = mem_big[2:-2]
    idx = np.array([0, 3, 8, -1, 7, 3], np.int32)
    pattern = r"index \(8,\) is out of bounds for array 'mem' of shape \(8,\)"
    with pytest.raises(OutOfBoundsError, match=pattern):
        run_atomic("add", mem, idx, np.full(6, 5, np.int32), lower=lower)
    np.testing.assert_array_equal(mem_big, [0, 0, 5, 0, 0, 10, 0, 0, 0, 5, 0, 0])


def test_u64_and_float_min_max():
    vals = rng.integers(0, 2**63, 500, dtype=np.uint64) * np.uint64(2)
    mem = np.array([2**63], np.uint64)
    run_atomic("max", mem, np.zeros(500, int), vals)
    assert mem[0] == max(vals.max(), np.uint64(2**63))
    fv = rng.standard_normal(500).astype(np.float32)
    fm = np.array([0.5], np.float32)
    olds = run_atomic("min", fm, np.zeros(500, int), fv)
    assert fm[0] == min(fv.min(), np.float32(0.5)) and olds.max() == np.float32(0.5)
