"""Checked accesses proven in bounds at compile time are not tested at run time; every other one
still is, and the interpreter asserts that each proof held (an unsound proof is a test failure)."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from tests.conftest import poisoned


def _accesses(compiled) -> dict:
    """array name -> the proven dimensions of each of its accesses, in IR order."""
    from cubepy.ir.nodes import walk

    out: dict = {}
    for op in walk(compiled.ir_module.body):
        if op.opcode in ("load", "store", "atomic") and "array" in op.attrs:
            out.setdefault(op.attrs["array"], []).append(op.attrs.get("proven", ()))
    return out


def _checks(compiled) -> int:
    from cubepy.ir.nodes import walk

    return sum(op.opcode == "report_oob" for op in walk(compiled.ir_module.body))


@cb.kernel
def guarded(x: Array[f32], y: Array[f32], z: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        z[i] = x[i] + y[i]


@cb.kernel
def early_return(x: Array[f32], z: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i >= len(z):
        return
    z[i] = x[i] * 2.0


@cb.kernel
def shifted(x: Array[f32], z: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(z):
        z[i] = x[i - 1] + x[i + 1]


@cb.kernel
def rows(x: Array[f32], out: Mut[Array[f32]]):
    row = cb.CUBE_POS
    for c in range(cb.UNIT_POS, x.shape[1], cb.CUBE_DIM):
        out[row, c] = x[row, c] * 2.0


@cb.kernel
def staged(x: Array[f32], out: Mut[Array[f32]]):
    tile = cb.SharedMemory(f32, cb.CUBE_DIM)
    i = cb.ABSOLUTE_POS
    tile[cb.UNIT_POS] = x[i]
    cb.sync_cube()
    out[i] = tile[cb.CUBE_DIM - 1 - cb.UNIT_POS]


def test_a_guarded_access_is_proven_and_the_others_keep_their_check():
    x = np.ones(10, np.float32)
    compiled = guarded.compile(x, x, x.copy(), dim=32, device="interp")
    found = _accesses(compiled)
    assert found["x"] == [(0,)] and found["y"] == [()] and found["z"] == [()]
    assert _checks(compiled) == 2                          # y and z: their lengths may differ from x's
    assert compiled.ir_module.units_fit_index


def test_the_rest_of_a_block_after_an_early_return_is_guarded():
    x = np.ones(10, np.float32)
    found = _accesses(early_return.compile(x, x.copy(), dim=32, device="interp"))
    assert found["z"] == [(0,)] and found["x"] == [()]


def test_shifted_indices_are_not_proven():
    x = np.ones(10, np.float32)
    found = _accesses(shifted.compile(x, x.copy(), dim=32, device="interp"))
    assert found["x"] == [(), ()] and found["z"] == [(0,)]


def test_a_range_counter_is_below_its_stop_and_a_cube_position_is_not_below_a_shape():
    x = np.ones((4, 100), np.float32)
    found = _accesses(rows.compile(x, x.copy(), dim=64, device="interp"))
    assert found["x"] == [(1,)] and found["out"] == [()]      # out may be narrower than x


def test_shared_memory_indexed_by_unit_position_needs_no_check():
    x = np.ones(64, np.float32)
    found = _accesses(staged.compile(x, x.copy(), dim=64, device="interp"))
    assert found["tile"] == [(0,), (0,)]
    assert found["x"] == [()] and found["out"] == [()]


def test_the_unproven_checks_still_report(dev, rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(60).astype(np.float32)              # shorter: y[i] goes out of bounds
    z = poisoned(100, np.float32)
    # a GPU reports whichever out-of-bounds access claims the record first: any of y[60..99]
    with pytest.raises(cb.OutOfBoundsError, match="index \\((6[0-9]|[7-9][0-9]),\\) is out of bounds for array 'y'"):
        guarded[4, 32](x, y, z, device=dev)
        dev.synchronize()
    z = poisoned(100, np.float32)
    # x[i - 1] at unit 0 and x[i + 1] at unit 99 both go out: a GPU may report either first
    with pytest.raises(cb.OutOfBoundsError, match="index \\((-1|100),\\) is out of bounds for array 'x'"):
        shifted[4, 32](x, z, device=dev)
        dev.synchronize()


def test_proven_kernels_give_the_same_answer(dev, rng):
    x = rng.standard_normal((5, 100)).astype(np.float32)
    out = poisoned((5, 100), np.float32)
    rows[5, 64](x, out, device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(out, x * 2)
    v = rng.standard_normal(128).astype(np.float32)
    out = poisoned(128, np.float32)
    staged[2, 64](v, out, device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(out, v.reshape(2, 64)[:, ::-1].reshape(-1))


def test_a_launch_whose_positions_would_not_fit_i32_is_refused():
    x = np.ones(10, np.float32)
    with pytest.raises(ValueError, match="units; this kernel indexes with positions .* at most 2147483647 units"):
        guarded[(1 << 22, 1), 1024](x, x, x.copy(), device="interp")


@cb.kernel
def differences(x: Array[f32], out: Mut[Array[f32]]):
    sm = cb.SharedMemory(f32, 64)
    t = cb.UNIT_POS_X
    sm[t] = x[cb.ABSOLUTE_POS_X]
    cb.sync_cube()
    out[cb.UNIT_POS] = sm[t - cb.UNIT_POS_Y]                # a bound minus a bound: may be negative


def test_a_difference_of_two_bounded_values_is_not_proven(rng):
    x = rng.standard_normal(64).astype(np.float32)
    compiled = differences.compile(x, poisoned(128, np.float32), dim=(64, 2), device="interp")
    assert _accesses(compiled)["sm"][1] == ()
    with pytest.raises(cb.OutOfBoundsError, match="array 'sm'"):
        compiled[1](x, poisoned(128, np.float32))


@cb.kernel
def strided(x: Array[f32], out: Mut[Array[f32]], stop: cb.i32):
    for j in range(cb.UNIT_POS, stop, 2048):
        out[cb.UNIT_POS] = x[j]


def test_a_counter_that_could_wrap_keeps_its_sign_check():
    """``counter += 2048`` wraps past 2**31 - 1 for a stop near it, so the counter is not known
    to stay non-negative; a step of at most 1024 towards an extent is (arrays are that much shorter)."""
    x = np.ones(10, np.float32)
    compiled = strided.compile(x, x.copy(), 10, dim=4, device="interp")
    assert _accesses(compiled)["x"] == [()]
    from cubepy.ir.nodes import walk

    ops = [op for op in walk(compiled.ir_module.body)
           if op.opcode == "load" and op.attrs.get("array") == "x"]
    assert all("nonneg" not in op.attrs for op in ops)
    found = _accesses(rows.compile(np.ones((4, 100), np.float32), np.ones((4, 100), np.float32), dim=64,
                                   device="interp"))
    assert found["x"] == [(1,)]


@cb.kernel
def periodic(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(y):
        window = cb.LocalArray(f32, 4)
        window[(i * 7) % 4] = x[(i + 1) % len(x)]
        window[(i * 7 + 1) % 4] = x[(cb.i64(i) - 1) % len(x)]          # i64 % len(x): len widened
        y[i] = window[(i * 7) % 4] - window[(i * 7 + 1) % 4]


def _nonempty(compiled, name: str) -> list:
    from cubepy.ir.nodes import walk

    return [op.attrs.get("nonempty", ()) for op in walk(compiled.ir_module.body)
            if op.opcode in ("load", "store") and op.attrs.get("array") == name]


def test_an_index_modulo_an_extent_is_checked_only_for_an_empty_array():
    """``i % len(x)`` lies in [0, len(x)), and is 0 when x is empty: its check is ``len(x) > 0``;
    ``% 4`` into a local array of 4 needs none."""
    from cubepy.ir.nodes import walk

    x = np.ones(10, np.float32)
    compiled = periodic.compile(x, x.copy(), dim=32, device="interp")
    found = _accesses(compiled)
    assert found["x"] == [(), ()] and _nonempty(compiled, "x") == [(0,), (0,)]
    assert found["window"] == [(0,)] * 4
    assert not any(op.opcode == "ge" for op in walk(compiled.ir_module.body))     # no sign test left
    assert _checks(compiled) == 2                                                 # x's two


def test_an_index_modulo_an_extent_gives_the_same_answer_and_reports_an_empty_array(dev, rng):
    x = rng.standard_normal(50).astype(np.float32)
    y = poisoned(100, np.float32)
    periodic[4, 32](x, y, device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(y, np.tile(np.roll(x, -1) - np.roll(x, 1), 2))
    with pytest.raises(cb.OutOfBoundsError, match="index \\(0,\\) is out of bounds for array 'x'"):
        periodic[4, 32](np.zeros(0, np.float32), poisoned(100, np.float32), device=dev)
        dev.synchronize()


@cb.kernel
def grid_stride(x: Array[f32], out: Mut[Array[f32]]):
    for j in range(cb.ABSOLUTE_POS, len(out), 1024):
        out[j] = x[0] * 2.0


def test_a_counter_started_at_a_position_needs_the_launch_to_fit_i32():
    """``out[j]`` is proven from ``j >= ABSOLUTE_POS >= 0``, which holds only while positions do
    not wrap: the counter carries that condition, so a launch of more units is refused."""
    x = np.ones(10, np.float32)
    compiled = grid_stride.compile(x, x.copy(), dim=32, device="interp")
    assert _accesses(compiled)["out"] == [(0,)]
    assert compiled.ir_module.units_fit_index
    with pytest.raises(ValueError, match="at most 2147483647 units"):
        grid_stride[(1 << 22, 1), 1024](x, x.copy(), device="interp")


ROWS, COLS = 5, 16


@cb.kernel
def transpose_tile(x: Array[f32], out: Mut[Array[f32]]):
    """A (ROWS, COLS) tile of x staged transposed in shared memory by one counter over it."""
    tile = cb.SharedMemory(f32, (COLS, ROWS))
    base = cb.CUBE_POS * ROWS * COLS
    for f in range(cb.UNIT_POS, ROWS * COLS, cb.CUBE_DIM):
        tile[f % COLS, f // COLS] = x[base + f]
    cb.sync_cube()
    for f in range(cb.UNIT_POS, ROWS * COLS, cb.CUBE_DIM):
        out[base + f] = tile[f // ROWS, f % ROWS]


@cb.kernel
def overrun_tile(x: Array[f32], out: Mut[Array[f32]]):
    tile = cb.SharedMemory(f32, (ROWS, COLS))
    for f in range(cb.UNIT_POS, ROWS * COLS + COLS, cb.CUBE_DIM):     # one row too many
        tile[f // COLS, f % COLS] = x[f]
    cb.sync_cube()
    out[cb.UNIT_POS] = tile[0, cb.UNIT_POS % COLS]


def test_a_tile_indexed_by_a_counters_quotient_and_remainder_is_proven():
    x = np.ones(4 * ROWS * COLS, np.float32)
    found = _accesses(transpose_tile.compile(x, x.copy(), dim=32, device="interp"))
    assert found["tile"] == [(0, 1), (0, 1)]
    assert found["x"] == [()] and found["out"] == [()]                   # their extents are not known
    found = _accesses(overrun_tile.compile(x, x.copy(), dim=32, device="interp"))
    assert found["tile"][0] == (1,)                                      # the row may reach ROWS


def test_a_tile_by_quotient_and_remainder_gives_the_answer_and_an_overrun_reports(dev, rng):
    x = rng.standard_normal(4 * ROWS * COLS).astype(np.float32)
    out = poisoned(x.size, np.float32)
    transpose_tile[4, 32](x, out, device=dev)
    dev.synchronize()
    expected = x.reshape(4, ROWS, COLS).transpose(0, 2, 1).reshape(4, -1)      # tile[c, r] read row-major
    np.testing.assert_array_equal(out, expected.reshape(-1))
    with pytest.raises(cb.OutOfBoundsError, match=f"index \\({ROWS}, [0-9]+\\) is out of bounds for array 'tile'"):
        overrun_tile[1, 32](x, poisoned(32, np.float32), device=dev)
        dev.synchronize()
