"""Checked mode: an out-of-bounds index never touches memory and is reported with the kernel,
the array, the index, the extent and the user's line."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Linear1D, Mut, Region, f32, f64, i32, i64, u64
from tests.conftest import poisoned


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


@cb.kernel
def scatter64(idx: Array[i64], out: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        out[idx[i]] = 1.0


@pytest.mark.parametrize("bad", [2**32 + 5, -(2**32) + 5, 2**31, -(2**40) - 7])
def test_a_64_bit_index_is_checked_at_full_width_and_reported_at_its_true_value(dev, rng, bad):
    # 2**32 + 5 cut to 32 bits is 5, a valid element: the check must see the whole value
    idx = rng.permutation(10).astype(np.int64)
    where = int(rng.integers(10))
    idx[where] = bad
    backing = np.zeros(26)
    out = backing[8:18]
    with pytest.raises(cb.OutOfBoundsError) as info:
        scatter64.launch(1, 32, idx, out, device=dev)
        dev.synchronize()
    assert f"index ({bad},) is out of bounds for array 'out' of shape (10,)" in str(info.value)
    assert f"unit ({where}, 0, 0)" in str(info.value)
    assert backing[:8].sum() == 0 and backing[18:].sum() == 0
    assert out.sum() == 9 and out[np.delete(idx, where)].all()


@cb.kernel
def gather_u64(idx: Array[u64], j: Array[i64], x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        out[i] = x[idx[i], j[i]]


def test_unsigned_and_multi_dimensional_wide_indices_report_their_true_values(dev, rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    idx = rng.integers(0, 4, 40).astype(np.uint64)
    j = rng.integers(0, 5, 40).astype(np.int64)
    unit = int(rng.integers(40))
    idx[unit] = 2**64 - 3
    out = poisoned(40, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match=r"index \(18446744073709551613, \d\) is out of bounds "
                                                  r"for array 'x' of shape \(4, 5\)"):
        gather_u64.launch(1, 64, idx, j, x, out, device=dev)
        dev.synchronize()
    keep = np.arange(40) != unit
    np.testing.assert_array_equal(out[keep], x[idx[keep].astype(np.int64), j[keep]])


@cb.kernel
def looped64(x: Array[f32], y: Mut[Array[f32]], iters: i32, idx: Array[i64]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        acc = f32(0.0)
        for _ in range(iters):
            acc = acc * v + 0.5
        y[idx[i]] = acc


def test_a_wide_index_in_a_per_unit_loop_region_is_reported_at_its_true_value(dev, rng):
    # on the CPU backend a region holding a loop runs as a gang of units in vector registers
    x = rng.standard_normal(64).astype(np.float32)
    idx = rng.permutation(64).astype(np.int64)
    unit = int(rng.integers(64))
    idx[unit] = 3 * 2**32 + unit
    with pytest.raises(cb.OutOfBoundsError, match=rf"index \({3 * 2**32 + unit},\) is out of bounds for array 'y'"):
        looped64.launch(2, 32, x, poisoned(64, np.float32), 3, idx, device=dev)
        dev.synchronize()


def test_a_python_int_index_that_cannot_be_in_bounds_is_a_compile_error():
    @cb.kernel
    def far(out: Mut[Array[f32]]):
        out[2**32 + 5] = 1.0
    with pytest.raises(cb.CubeIndexError, match=r"index 4294967301 into array 'out' can never be in bounds"):
        far.launch(1, 1, np.zeros(8, np.float32), device="interp")


@cb.kernel
def region_wide(r: Region[f32, Linear1D], j: Array[i64]):
    r[j[cb.ABSOLUTE_POS]] = 1.0


def test_a_wide_region_index_is_checked_at_full_width(dev):
    j = np.zeros(32, np.int64)
    j[7] = 2**32
    with pytest.raises(cb.OutOfBoundsError, match=r"index \(4294967296,\) is out of bounds for array 'r"):
        region_wide.launch(1, 32, np.zeros(32, np.float32), j, device=dev)
        dev.synchronize()


@cb.kernel
def tiles_by_quotient(x: Array[f32], y: Mut[Array[f32]], w: i32, rows: i32):
    """A cube's rows x w tile staged transposed in shared memory by one counter, read back by
    quotient and remainder of a run-time width: the checks per cube and per launch test both."""
    tile = cb.SharedMemory(f32, (8, 16))
    base = cb.CUBE_POS * rows * w
    for f in range(cb.UNIT_POS, rows * w, cb.CUBE_DIM):
        tile[f % w, f // w] = x[base + f // w * w + f % w]
    cb.sync_cube()
    for f in range(cb.UNIT_POS, rows * w, cb.CUBE_DIM):
        y[base + f] = tile[f % w, f // w] * 2.0


@pytest.mark.parametrize("w, rows, n, bad", [(8, 16, 4 * 128, None), (5, 12, 4 * 60, None), (8, 16, 4 * 128 - 1, "x"),
                                             (9, 16, 4 * 144, "tile"), (8, 17, 4 * 136, "tile")])
def test_a_tile_by_quotient_and_remainder_of_a_run_time_width(dev, rng, w, rows, n, bad):
    x = rng.standard_normal(n).astype(np.float32)
    backing, y = _guarded(4 * rows * w, fill=7.0)
    if bad is None:
        tiles_by_quotient[4, 32](x, y, w, rows, device=dev)
        dev.synchronize()
        np.testing.assert_array_equal(y, x * 2)
    else:
        with pytest.raises(cb.OutOfBoundsError, match=f"array '{bad}'"):
            tiles_by_quotient[4, 32](x, y, w, rows, device=dev)
            dev.synchronize()
    np.testing.assert_array_equal(backing[:8], 7.0)
    np.testing.assert_array_equal(backing[-8:], 7.0)
