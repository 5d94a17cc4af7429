"""Atomics return the old value and serialize: results match some order of the updates."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, i32, u32
from tests.conftest import poisoned


@cb.kernel
def atomic_ops(idx: Array[i32], val: Array[i32], mem: Mut[Array[i32]], old: Mut[Array[i32]], which: cb.Comptime[str]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        if which == "add":
            old[i] = cb.atomic_add(mem, idx[i], val[i])
        elif which == "sub":
            old[i] = cb.atomic_sub(mem, idx[i], val[i])
        elif which == "min":
            old[i] = cb.atomic_min(mem, idx[i], val[i])
        elif which == "max":
            old[i] = cb.atomic_max(mem, idx[i], val[i])
        elif which == "and":
            old[i] = cb.atomic_and(mem, idx[i], val[i])
        elif which == "or":
            old[i] = cb.atomic_or(mem, idx[i], val[i])
        elif which == "xor":
            old[i] = cb.atomic_xor(mem, idx[i], val[i])
        elif which == "exchange":
            old[i] = cb.atomic_exchange(mem, idx[i], val[i])


_COMBINE = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "min": min, "max": max,
            "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
            "exchange": lambda a, b: b}


@pytest.mark.parametrize("which", list(_COMBINE))
def test_atomics_on_colliding_addresses_serialize(dev, rng, which):
    n, slots = 300, 7
    idx = rng.integers(0, slots, n).astype(np.int32)
    val = rng.integers(-1000, 1000, n).astype(np.int32) if which not in ("and", "or", "xor") else \
        rng.integers(0, 2**20, n).astype(np.int32)
    start = rng.integers(-50, 50, slots).astype(np.int32)
    mem = start.copy()
    old = poisoned(n, np.int32)
    atomic_ops.launch(3, 128, idx, val, mem, old, which, device=dev)
    combine = _COMBINE[which]
    for s in range(slots):
        lanes = [int(u) for u in np.flatnonzero(idx == s)]
        order = _serialization(int(start[s]), lanes, old, val, combine)
        assert order is not None, f"slot {s}: the old values {sorted(old[lanes])} fit no order of the updates"
        value = int(start[s])
        for u in order:
            value = combine(value, int(val[u]))
        assert mem[s] == value


def _serialization(start, lanes, old, val, combine):
    """An order of the units in which each one saw, as its old value, the value before its update;
    None if there is none. Depth-first, trying updates that leave the value unchanged first."""
    dead = set()

    def search(value, remaining):
        if not remaining:
            return []
        key = (value, remaining)
        if key in dead:
            return None
        ready = [u for u in remaining if old[u] == value]
        ready.sort(key=lambda u: combine(value, int(val[u])) != value)
        for u in ready:
            rest = search(combine(value, int(val[u])), remaining - {u})
            if rest is not None:
                return [u, *rest]
        dead.add(key)
        return None

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(lanes) + 100))
    try:
        return search(start, frozenset(lanes))
    finally:
        sys.setrecursionlimit(limit)


@cb.kernel
def cas_counter(counter: Mut[Array[u32]], tickets: Mut[Array[u32]]):
    i = cb.ABSOLUTE_POS
    if i < len(tickets):
        done = False
        while not done:
            current = counter[0]
            if cb.atomic_cas(counter, 0, current, current + 1) == current:
                tickets[i] = current
                done = True


def test_compare_and_swap_hands_out_unique_tickets(dev):
    n = 200
    counter = np.zeros(1, np.uint32)
    tickets = poisoned(n, np.uint32)
    cas_counter.launch(2, 128, counter, tickets, device=dev)
    assert counter[0] == n
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))


@cb.kernel
def shared_histogram(data: Array[i32], bins: Mut[Array[i32]]):
    local = cb.SharedMemory(i32, 16)
    if cb.UNIT_POS < 16:
        local[cb.UNIT_POS] = 0
    cb.sync_cube()
    i = cb.ABSOLUTE_POS
    if i < len(data):
        cb.atomic_add(local, data[i], 1)
    cb.sync_cube()
    if cb.UNIT_POS < 16:
        cb.atomic_add(bins, cb.UNIT_POS, local[cb.UNIT_POS])


def test_atomics_on_shared_memory(dev, rng):
    data = rng.integers(0, 16, 1000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    shared_histogram.launch(8, 128, data, bins, device=dev)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=16))


@cb.kernel
def float_atomic(x: Array[cb.f32], total: Mut[Array[cb.f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        cb.atomic_add(total, i % 3, x[i])


def test_float_atomic_add(dev, rng):
    x = rng.random(500).astype(np.float32)
    total = np.zeros(3, np.float32)
    float_atomic.launch(4, 128, x, total, device=dev)
    np.testing.assert_allclose(total, [x[k::3].sum() for k in range(3)], rtol=1e-5)
