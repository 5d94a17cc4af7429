"""Atomic read-modify-writes by many units at once, equal to some serial order of them.

The units of one lockstep step are sorted by address, so the units hitting one element form a
segment; each op then finds, per segment, the old value every unit would see in one serial
order, and writes the segment's final value once.
"""

from __future__ import annotations

import numpy as np

from .ops import maximum, minimum


def _segments(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted addresses: where each segment starts, and each entry's segment number."""
    start = np.ones(len(a), bool)
    start[1:] = a[1:] != a[:-1]
    return start, np.cumsum(start) - 1


def _ends(start: np.ndarray) -> np.ndarray:
    end = np.ones(len(start), bool)
    end[:-1] = start[1:]
    return end


def _segmented_scan(v: np.ndarray, seg: np.ndarray, start: np.ndarray, ufunc) -> np.ndarray:
    """Inclusive scan of ``ufunc`` within each segment (Hillis-Steele: log2(longest) passes)."""
    x = v.copy()
    longest = np.diff(np.append(np.flatnonzero(start), len(v))).max()
    d = 1
    while d < longest:
        same = seg[d:] == seg[:-d]
        x[d:] = np.where(same, ufunc(x[d:], x[:-d]), x[d:])
        d *= 2
    return x


def _add(mem0, v, start, seg, sub):
    acc = np.float64 if v.dtype.kind == "f" and v.dtype.itemsize < 8 else v.dtype
    excl = np.add.accumulate(v, dtype=acc) - v             # integers wrap, so segments subtract out
    excl = excl - excl[start][seg]
    return (mem0 - excl, mem0 - (excl + v)) if sub else (mem0 + excl, mem0 + (excl + v))


def _min_max(mem0, v, start, fn):
    prev = np.roll(v, 1)  # segments are ordered so that prev is the running extreme before v
    old = np.where(start, mem0, fn(mem0, prev))
    return old, fn(mem0, v)


def _cas(mem0, cmp, v, start, seg):
    state = mem0[start].copy()                              # per segment, the current value
    old = np.empty_like(v)
    pos = np.arange(len(v))
    while pos.size:                                         # one round per successful swap
        s = state[seg[pos]]
        hit = cmp[pos] == s
        hit_seg, first = np.unique(seg[pos][hit], return_index=True)
        winners = pos[hit][first]
        limit = np.full(len(state), len(v))
        limit[hit_seg] = winners
        done = pos <= limit[seg[pos]]                       # failures up to and including the winner
        old[pos[done]] = s[done]
        state[hit_seg] = v[winners]
        pos = pos[~done]
    return old, state[seg]


def atomic(kind: str, flat: np.ndarray, addr: np.ndarray, value: np.ndarray,
           compare: np.ndarray | None = None) -> np.ndarray:
    """Apply atomic ``kind`` for every (addr, value) in order of the entries; return old values."""
    if len(addr) == 0:
        return flat[:0].copy()
    if kind in ("min", "max"):
        # by address, then each unit sees a new extreme: descending values for min, ascending
        # for max, -0.0 below +0.0, NaNs last (once a NaN is in, it stays: min/max propagate it)
        ascending = np.lexsort((~np.signbit(value), value)) if value.dtype.kind == "f" else np.argsort(value)
        rank = np.empty(len(value), np.int64)
        rank[ascending] = np.arange(len(value))
        if kind == "min":
            rank = len(value) - 1 - rank
        if value.dtype.kind == "f":
            rank = np.where(np.isnan(value), len(value) + rank, rank)
        order = np.lexsort((rank, addr))
    else:
        order = np.argsort(addr, kind="stable")             # by address, then unit order
    a, v = addr[order], value[order]
    start, seg = _segments(a)
    mem0 = flat[a]
    if kind in ("add", "sub"):
        old, new = _add(mem0, v, start, seg, kind == "sub")
    elif kind in ("min", "max"):
        old, new = _min_max(mem0, v, start, minimum if kind == "min" else maximum)
    elif kind == "exchange":
        old, new = np.where(start, mem0, np.roll(v, 1)), v
    elif kind in ("and", "or", "xor"):
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
        incl = _segmented_scan(v, seg, start, fn)
        old, new = np.where(start, mem0, fn(mem0, np.roll(incl, 1))), fn(mem0, incl)
    elif kind == "cas":
        old, new = _cas(mem0, compare[order], v, start, seg)
    else:
        raise ValueError(f"unknown atomic op {kind!r}")
    end = _ends(start)
    flat[a[end]] = np.asarray(new)[end].astype(flat.dtype)
    out = np.empty(len(v), flat.dtype)
    out[order] = np.asarray(old).astype(flat.dtype)
    return out
