"""Race report mode: conflicting accesses by different units without an atomic (or, for
shared memory, a sync_cube between them) raise RaceError naming both units and lines."""

from __future__ import annotations

import numpy as np
import pytest
from interp_kit import KB

import cubepy as cb
from cubepy import Array, Mut
from cubepy.errors import RaceError
from cubepy.ir.types import f32, i32


def shifted_kernel(read_first: bool):
    """read_first: v = x[g + 1] (line 1) then x[g] = v (line 2); else x[g] = 1 (line 1), v = x[g + 1]
    (line 2), and v goes to x[g] again (a unit's own element)."""
    kb = KB("shift", cube_dim=(32, 1, 1))
    x = kb.array("x", f32)
    g = kb.gid()
    nxt = kb.op("mod", kb.op("add", g, kb.c(1)), kb.shape(x))
    if read_first:
        kb.line(1)
        v = kb.load(x, nxt)
        kb.line(2)
        kb.store(x, g, v)
    else:
        kb.line(1)
        kb.store(x, g, kb.c(1.0, f32))
        kb.line(2)
        v = kb.load(x, nxt)
        kb.line(3)
        kb.store(x, g, v)
    return kb


def test_two_units_write_one_element():
    kb = KB("ww", cube_dim=(8, 1, 1))
    out = kb.array("out", i32)
    kb.line(4)
    kb.store(out, kb.op("floordiv", kb.gid(), kb.c(4)), kb.gid())  # units 0..3 -> out[0]
    res = np.zeros(4, np.int32)
    with pytest.raises(RaceError) as e:
        kb.run([res], races=True)
    msg = str(e.value)
    assert "array 'out' element (0,)" in msg
    assert "unit (0, 0, 0) of cube (0, 0, 0) wrote it (line 4)" in msg
    assert "unit (1, 0, 0) of cube (0, 0, 0) wrote it (line 4)" in msg
    # without race tracking, a clash inside one store is still refused (it is cheap to see)
    with pytest.raises(RaceError, match="wrote different values to it in the same store") as e:
        kb.run([res], races=False)
    assert "unit (0, 0, 0) of cube (0, 0, 0) and unit (1, 0, 0) of cube (0, 0, 0)" in str(e.value)


def test_units_writing_the_same_value_to_one_element_pass_without_race_tracking():
    kb = KB("same", cube_dim=(8, 1, 1))
    out = kb.array("out", i32)
    kb.store(out, kb.op("floordiv", kb.gid(), kb.c(4)), kb.op("floordiv", kb.gid(), kb.c(4)))
    res = np.full(2, -1, np.int32)
    kb.run([res], races=False)
    np.testing.assert_array_equal(res, [0, 1])


def test_a_store_of_nan_from_several_units_is_not_a_clash():
    kb = KB("nan", cube_dim=(4, 1, 1))
    out = kb.array("out", f32)
    kb.store(out, kb.c(0), kb.c(float("nan"), f32))
    res = np.zeros(1, np.float32)
    kb.run([res], races=False)
    assert np.isnan(res[0])


def test_write_then_read_by_another_unit_across_cubes():
    kb = shifted_kernel(read_first=False)
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(RaceError) as e:
        kb.run([x], cube_count=(2,), races=True)
    msg = str(e.value)
    assert "global array 'x'" in msg and "wrote it (line 1)" in msg and "read it (line 2)" in msg
    assert msg.splitlines()[-1].strip() == 'File "kernel.py", line 2'  # the loc of the second access


def test_read_then_write_by_another_unit():
    kb = shifted_kernel(read_first=True)
    x = np.arange(64, dtype=np.float32)
    # unit 0 writes x[0] after the last unit of cube 1 read it (x[63 + 1 mod 64])
    pattern = (r"element \(0,\): unit \(31, 0, 0\) of cube \(1, 0, 0\) read it \(line 1\) "
               r"and unit \(0, 0, 0\) of cube \(0, 0, 0\) wrote it \(line 2\), with no atomic ")
    with pytest.raises(RaceError, match=pattern):
        kb.run([x], cube_count=(2,), races=True)


def test_cross_cube_write_write_race():
    kb = KB("cubes", cube_dim=(4, 1, 1))
    out = kb.array("out", i32)
    kb.store(out, kb.builtin("unit_pos_x"), kb.builtin("cube_pos_x"))
    pattern = r"unit \(0, 0, 0\) of cube \(0, 0, 0\) wrote .* unit \(0, 0, 0\) of cube \(1, 0, 0\)"
    with pytest.raises(RaceError, match=pattern):
        kb.run([np.zeros(4, np.int32)], cube_count=(2,), races=True)


def test_no_race_for_own_elements_shared_reads_and_atomics():
    kb = KB("clean", cube_dim=(32, 1, 1))
    x, out, hist = kb.array("x", f32, mutable=False), kb.array("out", f32), kb.array("hist", i32)
    g = kb.gid()
    first = kb.load(x, kb.c(0))                     # every unit reads x[0]: fine
    kb.store(out, g, kb.op("add", kb.load(x, g), first))
    kb.store(out, g, kb.op("mul", kb.load(out, g), kb.c(2.0, f32)))  # read-modify-write own element
    kb.atomic("add", hist, kb.op("mod", g, kb.c(3)), kb.c(1))
    kb.atomic("add", hist, kb.op("mod", g, kb.c(3)), kb.c(1))
    xv = np.random.default_rng().standard_normal(64).astype(np.float32)
    res, h = np.zeros(64, np.float32), np.zeros(3, np.int32)
    kb.run([xv, res, h], cube_count=(2,), races=True)
    np.testing.assert_allclose(res, (xv + xv[0]) * 2, rtol=1e-6)
    np.testing.assert_array_equal(h, 2 * np.bincount(np.arange(64) % 3))


def shared_neighbour_kernel(sync: bool, units=16):
    kb = KB("neigh", cube_dim=(units, 1, 1))
    out = kb.array("out", i32)
    s = kb.shared("s", i32, (units,))
    t = kb.builtin("unit_pos_x")
    kb.line(7)
    kb.store(s, t, kb.op("mul", t, kb.c(3)))
    if sync:
        kb.sync()
    kb.line(8)
    nb = kb.load(s, kb.op("mod", kb.op("add", t, kb.c(1)), kb.c(units)))
    if sync:
        kb.sync()
    kb.line(9)
    kb.store(s, t, nb)                              # after a barrier: no race with line 8's reads
    kb.store(out, kb.gid(), kb.load(s, t))
    return kb


def test_shared_memory_with_barriers_is_clean():
    res = np.zeros(48, np.int32)
    shared_neighbour_kernel(True).run([res], cube_count=(3,), races=True)
    np.testing.assert_array_equal(res, np.tile((np.arange(1, 17) % 16) * 3, 3))


def test_shared_memory_without_barrier_races():
    res = np.zeros(48, np.int32)
    pattern = (r"shared array 's' element \(1,\): unit \(1, 0, 0\) of cube \(0, 0, 0\) wrote it "
               r"\(line 7\) and unit \(0, 0, 0\) of cube \(0, 0, 0\) read it \(line 8\), "
               r"with no atomic or sync_cube\(\) between")
    with pytest.raises(RaceError, match=pattern):
        shared_neighbour_kernel(False).run([res], cube_count=(3,), races=True)


def test_same_shared_index_in_different_cubes_is_no_race():
    kb = KB("percube", cube_dim=(8, 1, 1))
    out = kb.array("out", i32)
    s = kb.shared("s", i32, (1,))
    t = kb.builtin("unit_pos_x")
    with kb.if_(kb.cmp("eq", t, kb.c(0))):
        kb.store(s, kb.c(0), kb.builtin("cube_pos_x"))
    kb.sync()
    kb.store(out, kb.gid(), kb.load(s, kb.c(0)))
    res = np.zeros(32, np.int32)
    kb.run([res], cube_count=(4,), races=True)
    np.testing.assert_array_equal(res, np.repeat(np.arange(4), 8))


def test_race_on_element_read_by_two_units_then_written_by_one_of_them():
    kb = KB("readers", cube_dim=(2, 1, 1))
    out = kb.array("out", i32)
    t = kb.builtin("unit_pos_x")
    v = kb.load(out, kb.c(0))                       # units 0 and 1 read out[0]
    with kb.if_(kb.cmp("eq", t, kb.c(0))):
        kb.line(3)
        kb.store(out, kb.c(0), kb.op("add", v, kb.c(1)))   # unit 0 writes it: races with unit 1's read
    with pytest.raises(RaceError, match=r"unit \(1, 0, 0\) of cube \(0, 0, 0\) read it and unit \(0, 0, 0\)"):
        kb.run([np.zeros(1, np.int32)], races=True)



@cb.kernel
def half_filled(x: Array[f32], out: Mut[Array[f32]]):
    sm = cb.SharedMemory(f32, 64)
    if cb.UNIT_POS < 32:
        sm[cb.UNIT_POS] = x[cb.UNIT_POS]
    cb.sync_cube()
    out[cb.UNIT_POS] = sm[63 - cb.UNIT_POS]


def test_reading_shared_memory_no_unit_wrote_is_reported_in_race_mode():
    x = np.ones(64, np.float32)
    with pytest.raises(RaceError, match="element \\(63,\\).*which no unit of its cube wrote") as e:
        half_filled[1, 64](x, np.zeros(64, np.float32), device="interp", races=True)
    assert "unit (0, 0, 0) of cube (0, 0, 0) read shared array 'sm'" in str(e.value)
    half_filled[1, 64](x, np.zeros(64, np.float32), device="interp")        # without races: not tracked
