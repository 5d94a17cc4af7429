"""Checked mode: an out-of-bounds index never touches memory and is reported with the kernel,
the array, the index, the extent and the user's line."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32


@cb.kernel
def shifted_copy(x: Array[f32], y: Mut[Array[f32]], shift: i32):
    i = cb.ABSOLUTE_POS
    y[i] = x[i + shift]


def _guarded(n, fill=-1.0):
    """A view of n elements with guard elements on both sides, to see stray writes."""
    backing = np.full(n + 16, np.float32(fill))
    return backing, backing[8:8 + n]


def test_out_of_bounds_read_is_reported_and_reads_nothing(dev, rng):
    x = rng.standard_normal(64).astype(np.float32)
    backing, y = _guarded(64)
    with pytest.raises(cb.OutOfBoundsError) as info:
        shifted_copy.launch(2, 32, x, y, 3, device=dev)
        dev.synchronize()
    text = str(info.value)
    assert "shifted_copy" in text and "'x'" in text and "64" in text and "y[i] = x[i + shift]" in text
    assert isinstance(info.value, IndexError)
    np.testing.assert_array_equal(backing[:8], -1)
    np.testing.assert_array_equal(backing[-8:], -1)
    np.testing.assert_array_equal(y[:61], x[3:])          # the in-bounds units did their work


@cb.kernel
def scatter(idx: Array[i32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        y[idx[i]] = 1.0


@pytest.mark.parametrize("bad", [-1, 64, 1000])
def test_out_of_bounds_write_is_reported_and_writes_nothing_outside(dev, rng, bad):
    idx = rng.permutation(64).astype(np.int32)
    idx[17] = bad
    backing, y = _guarded(64, 0.0)
    with pytest.raises(cb.OutOfBoundsError, match=f"'y'.*{bad}|{bad}.*'y'"):
        scatter.launch(1, 64, idx, y, device=dev)
        dev.synchronize()
    assert backing[:8].sum() == 0 and backing[-8:].sum() == 0
    assert y.sum() == 63


@cb.kernel
def atomic_oob(y: Mut[Array[i32]]):
    cb.atomic_add(y, cb.ABSOLUTE_POS * 2, 1)


def test_out_of_bounds_atomic_is_reported(dev):
    y = np.zeros(40, np.int32)
    with pytest.raises(cb.OutOfBoundsError, match="'y'"):
        atomic_oob.launch(1, 32, y, device=dev)
        dev.synchronize()
    np.testing.assert_array_equal(y, np.arange(40) % 2 == 0)


@cb.kernel
def two_d(a: Mut[Array[f32]]):
    a[cb.UNIT_POS_Y, cb.UNIT_POS_X] = 1.0


def test_each_dimension_is_checked_not_only_the_flat_index(dev):
    a = np.zeros((4, 8), np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="'a'"):
        two_d.launch(1, (9, 4), a, device=dev)       # column 8 of a row would be the next row's 0
        dev.synchronize()
    np.testing.assert_array_equal(a, 1.0)


def test_unchecked_mode_compiles_no_checks(dev):
    x = np.zeros(64, np.float32)
    text = shifted_copy.ir(x, x.copy(), 0, dim=32, device=dev, checked=False)
    assert "report_oob" not in text
    y = np.zeros(64, np.float32)
    shifted_copy.launch(2, 32, x + 1, y, 0, device=dev, checked=False)
    np.testing.assert_array_equal(y, 1)
