"""Regions: each unit's part is disjoint, local indexing, and checks against the part."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cubepy as cb
from cubepy import Linear1D, Mut, Region, Strided1D, Tile2D, f32, i32
from tests.conftest import poisoned


@cb.kernel
def write_owner(part: Region[i32, Linear1D]):
    for j in range(len(part)):
        part[j] = cb.ABSOLUTE_POS * 1000 + j


@cb.kernel
def write_owner_strided(part: Region[i32, Strided1D]):
    for j in range(len(part)):
        part[j] = cb.ABSOLUTE_POS * 1000 + j


def test_linear_and_strided_parts_are_indexed_locally(dev):
    n, count, dim = 1000, 3, 32
    units = count * dim
    out = poisoned(n, np.int32)
    write_owner.launch(count, dim, out, device=dev)
    chunk = -(-n // units)
    e = np.arange(n)
    np.testing.assert_array_equal(out, (e // chunk) * 1000 + e % chunk)
    out2 = poisoned(n, np.int32)
    write_owner_strided.launch(count, dim, out2, device=dev)
    np.testing.assert_array_equal(out2, (e % units) * 1000 + e // units)


@cb.kernel
def tile_scale(tiles: Region[f32, Tile2D(3, 2)], a: f32):
    for r in range(tiles.shape[0]):
        for c in range(tiles.shape[1]):
            tiles[r, c] = tiles[r, c] * a


def test_tile2d_covers_a_matrix_with_ragged_edges(dev, rng):
    m = rng.standard_normal((31, 23)).astype(np.float32)
    got = m.copy()
    tile_scale.launch((3, 3), (4, 4), got, 2.0, device=dev)
    np.testing.assert_allclose(got, m * 2, rtol=1e-6)


@cb.kernel
def overreach(part: Region[i32, Linear1D]):
    part[len(part)] = 1      # one past this unit's part: inside the array, but not ours


def test_indexing_past_the_part_is_an_error_even_inside_the_array(dev):
    out = np.zeros(64, np.int32)
    with pytest.raises(cb.OutOfBoundsError, match="region part"):
        overreach.launch(1, 8, out, device=dev)
    # The unit whose part ends at the array's end and every other unit were stopped: no element
    # of a neighbour's part was written.
    assert (out == 0).all()


@pytest.mark.parametrize("strategy", [Linear1D(), Strided1D()], ids=["linear", "strided"])
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), count=st.integers(1, 5), dim=st.integers(1, 40))
def test_builtin_1d_strategies_are_disjoint_and_cover(strategy, n, count, dim):
    cb.verify_partitioning(strategy, (n,), count, dim)


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), th=st.integers(1, 4), tw=st.integers(1, 4),
       dim=st.tuples(st.integers(1, 5), st.integers(1, 5)))
def test_tile2d_is_disjoint_and_covers_when_the_launch_spans_the_matrix(rows, cols, th, tw, dim):
    count = (-(-cols // (tw * dim[0])), -(-rows // (th * dim[1])))
    cb.verify_partitioning(Tile2D(th, tw), (rows, cols), count, dim)


class Overlapping(cb.UnsafePartitioning):
    """Every unit claims two elements starting at 2*unit - 1: neighbours share one."""

    def part(self, shape, t):
        start = t.max(t.unit * 2 - 1, 0)
        return [(t.min(start, shape[0]), 1, t.min(2, shape[0] - t.min(start, shape[0])))]


def test_verify_partitioning_finds_an_overlapping_user_strategy():
    with pytest.raises(ValueError, match="not disjoint"):
        cb.verify_partitioning(Overlapping(), (64,), 1, 32)


class Gappy(cb.UnsafePartitioning):
    def part(self, shape, t):
        return [(t.min(t.unit * 3, shape[0]), 1, t.min(2, shape[0] - t.min(t.unit * 3, shape[0])))]


def test_verify_partitioning_finds_an_uncovered_element():
    with pytest.raises(ValueError, match="owned by no unit"):
        cb.verify_partitioning(Gappy(), (60,), 1, 20)


@cb.kernel
def user_region(part: Region[i32, Overlapping()], out: Mut[cb.Array[i32]]):
    out[cb.ABSOLUTE_POS] = len(part)


def test_user_strategy_runs_in_kernels(dev):
    a = np.zeros(9, np.int32)
    out = poisoned(8, np.int32)
    user_region.launch(1, 8, a, out, device=dev)
    np.testing.assert_array_equal(out, [2, 2, 2, 2, 2, 0, 0, 0])   # parts clipped at the array's end


@cb.kernel
def axpy_region(out: Region[f32, Linear1D], x: cb.Array[f32], y: cb.Array[f32], a: f32):
    for j in range(len(out)):
        g = out.global_index(j)
        out[j] = a * x[g] + y[g]


@cb.kernel
def transpose_region(out: Region[f32, Tile2D(2, 4)], m: cb.Array[f32]):
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            i, j = out.global_index(r, c)
            out[r, c] = m[j, i]


@cb.kernel
def global_index_past_the_part(out: Region[f32, Linear1D], x: cb.Array[f32]):
    for j in range(len(out)):
        out[j] = x[out.global_index(j + 1)]


@pytest.mark.parametrize("strategy_kernel", ["linear", "tile"])
def test_global_index_reads_the_matching_elements_of_plain_inputs(dev, rng, strategy_kernel):
    if strategy_kernel == "linear":
        n = 1000 + int(rng.integers(0, 50))
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out = poisoned(n, np.float32)
        axpy_region.launch(3, 32, out, x, y, np.float32(1.5), device=dev)
        np.testing.assert_allclose(out, np.float32(1.5) * x + y, rtol=1e-6)
    else:
        src = rng.standard_normal((50, 37)).astype(np.float32)
        out = poisoned((37, 50), np.float32)
        transpose_region.launch((4, 5), (4, 4), out, src, device=dev)
        np.testing.assert_array_equal(out, src.T)


def test_global_index_outside_the_part_is_reported(dev, rng):
    x = rng.standard_normal(256).astype(np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="'out'"):
        global_index_past_the_part.launch(2, 32, poisoned(256, np.float32), x, device=dev)
        dev.synchronize()
