"""`a and b` / `a or b` with a small pure right side become one op (cubepy.ir.short_circuit); a
right side that reads memory keeps Python's meaning (it runs only where it is needed), and the
guards of the flattened form prove and decide the accesses under them."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32
from cubepy.ir.nodes import walk
from tests.conftest import poisoned


def _ops(compiled) -> list[str]:
    return [op.opcode for op in walk(compiled.ir_module.body)]


@cb.kernel(checked=False)
def window(x: Array[f32], out: Mut[Array[f32]], n: i32, m: i32):
    i = cb.UNIT_POS_X
    j = cb.CUBE_POS * 4
    if i < n and j + i < m or i == 3:
        out[cb.ABSOLUTE_POS] = x[cb.ABSOLUTE_POS]


@cb.kernel
def guarded_read(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x) and x[i] > 0.0:            # the right side reads x where the left guards it
        out[i] = x[i]


@cb.kernel
def two_guards(x: Array[f32], out: Mut[Array[f32]], n: i32):
    i = cb.UNIT_POS_X
    c = cb.CUBE_POS_X
    if i < out.shape[1] and c < out.shape[0] and i < n:
        out[c, i] = x[c, i] * 2.0


def test_pure_right_sides_become_and_and_or_ops():
    x = np.ones(64, np.float32)
    ops = _ops(window.compile(x, x.copy(), 3, 9, dim=32, device="interp"))
    assert ops.count("and") == 1 and ops.count("or") == 1
    assert ops.count("if") == 1 and "load_var" not in ops and "store_var" not in ops


def test_a_right_side_that_reads_memory_keeps_its_branch(rng):
    x = rng.standard_normal(40).astype(np.float32)
    compiled = guarded_read.compile(x, x.copy(), dim=32, device="interp")
    assert "and" not in _ops(compiled) and "store_var" in _ops(compiled)
    out = poisoned(40, np.float32)
    guarded_read[2, 32](x, out, device="interp")      # units 40..63 must not read x: no report
    np.testing.assert_array_equal(out[x > 0], x[x > 0])


def test_the_compares_of_a_flattened_guard_prove_the_access_under_it():
    x = np.ones((3, 20), np.float32)
    compiled = two_guards.compile(x, x.copy(), 20, dim=32, device="interp")
    stores = [op for op in walk(compiled.ir_module.body) if op.opcode == "store"]
    assert "report_oob" in _ops(compiled)                 # x[c, i]: x's extents are not out's
    assert stores and all(not op.attrs.get("checked") for op in stores)
    assert [op.attrs.get("proven") for op in walk(compiled.ir_module.body)
            if op.opcode == "store" and op.attrs.get("array") == "out"] == [(0, 1)]


@pytest.mark.parametrize("n, m", [(0, 0), (3, 9), (32, 64), (17, 5), (-1, 100)])
def test_flattened_guards_give_the_branchy_answer(dev, n, m, rng):
    x = rng.standard_normal(96).astype(np.float32)
    out = poisoned(96, np.float32)
    window[3, 32](x, out, n, m, device=dev)
    dev.synchronize()
    expected = poisoned(96, np.float32)
    for c in range(3):
        for i in range(32):
            if i < n and c * 4 + i < m or i == 3:
                expected[c * 32 + i] = x[c * 32 + i]
    np.testing.assert_array_equal(out, expected)
    shape = (3, 20)
    y = rng.standard_normal(shape).astype(np.float32)
    got = poisoned(shape, np.float32)
    two_guards[3, 32](y, got, max(n, 0), device=dev)
    dev.synchronize()
    want = poisoned(shape, np.float32)
    want[:, :min(max(n, 0), 20)] = y[:, :min(max(n, 0), 20)] * 2
    np.testing.assert_array_equal(got, want)
