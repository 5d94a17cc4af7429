"""The interpreter's race report: two units touching one element without an atomic."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32


@cb.kernel
def all_write_zero(y: Mut[Array[f32]]):
    y[0] = 1.0


@cb.kernel
def neighbour_read(y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i + 1 < len(y):
        y[i] = y[i + 1] + 1.0


@cb.kernel
def own_elements(y: Mut[Array[f32]], counts: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    y[i] = y[i] * 2.0
    cb.atomic_add(counts, 0, 1)


@cb.kernel
def shared_without_sync(y: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, 32)
    s[cb.UNIT_POS] = 1.0
    y[cb.ABSOLUTE_POS] = s[31 - cb.UNIT_POS]


@cb.kernel
def shared_with_sync(y: Mut[Array[f32]]):
    s = cb.SharedMemory(f32, 32)
    s[cb.UNIT_POS] = 1.0
    cb.sync_cube()
    y[cb.ABSOLUTE_POS] = s[31 - cb.UNIT_POS]


def test_write_write_race_names_the_array_and_both_units():
    with pytest.raises(cb.RaceError, match="'y'") as info:
        all_write_zero.launch(1, 4, np.zeros(4, np.float32), device="interp", races=True)
    assert isinstance(info.value, RuntimeError)
    assert "unit" in str(info.value)


def test_read_write_race():
    with pytest.raises(cb.RaceError, match="'y'"):
        neighbour_read.launch(1, 8, np.zeros(8, np.float32), device="interp", races=True)


def test_disjoint_writes_and_atomics_are_not_races():
    y, counts = np.ones(64, np.float32), np.zeros(1, np.int32)
    own_elements.launch(2, 32, y, counts, device="interp", races=True)
    assert counts[0] == 64 and (y == 2).all()


def test_shared_memory_race_without_a_barrier_and_none_with_it():
    with pytest.raises(cb.RaceError):
        shared_without_sync.launch(1, 32, np.zeros(32, np.float32), device="interp", races=True)
    shared_with_sync.launch(1, 32, np.zeros(32, np.float32), device="interp", races=True)


def test_race_mode_as_a_device_option():
    with pytest.raises(cb.RaceError):
        all_write_zero.launch(1, 4, np.zeros(4, np.float32), device=cb.device("interp", races=True))
