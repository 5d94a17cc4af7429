"""RAJAPerf's data set-up, reproduced: glibc's rand, the init counter, sizes and the mesh domain."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest
from cubepy.bench.glibc_rand import GlibcRandom, rand_values
from cubepy.bench.setup_data import DataInit, cbrt_size, domain_2d, domain_3d, sqrt_size


def _libc():
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name)
        lib.gnu_get_libc_version.restype = ctypes.c_char_p
        lib.gnu_get_libc_version()
    except (OSError, AttributeError, TypeError):
        pytest.skip("glibc is not this machine's C library")
    return lib


@pytest.mark.parametrize("seed", [4793, 0, 1, 12345, 2**31 + 5])
def test_the_generator_is_glibcs_rand(seed):
    libc = _libc()
    libc.srand(seed)
    expected = [libc.rand() for _ in range(5000)]
    gen = GlibcRandom(seed)
    assert [gen.rand() for _ in range(5000)] == expected


def test_many_values_at_once_are_the_same_sequence():
    gen = GlibcRandom(4793)
    expected = np.array([gen.rand() for _ in range(30011)])
    np.testing.assert_array_equal(rand_values(30011), expected)
    np.testing.assert_array_equal(rand_values(100), expected[:100])


def test_init_counter_parity_picks_the_factor():
    init = DataInit()
    assert init.scalar() == 0.19582535938404025          # count 0: factor 0.2
    assert init.scalar() == 0.09791267969202012          # count 1: factor 0.1
    init.const(4, 0.0)                                   # constants bump the counter too
    a = init.data(3)                                     # count 3: factor 0.1
    np.testing.assert_array_equal(a, 0.1 * (np.arange(3) + 1.1) / (np.arange(3) + 1.12345))
    r = init.rand_value(3)                               # reseeded: the first three rand() values
    gen = GlibcRandom(4793)
    np.testing.assert_array_equal(r, np.array([gen.rand() for _ in range(3)]) / 2147483647)
    assert init.count == 5


def test_size_formulas_keep_exact_squares_and_cubes():
    assert sqrt_size(1e6) == 1000 and sqrt_size(1e6, 1) == 1001
    assert cbrt_size(1e6) == 100 and cbrt_size(1e6, 1) == 101      # Python's 1e6 ** (1/3) is 99.999...
    assert cbrt_size(32e6, 1) == 318 and sqrt_size(32e6, 1) == 5658


def test_default_domains_match_rajaperfs():
    d2 = domain_2d(1e6)
    assert (d2.n, d2.jp, d2.kp, d2.nnalls, d2.n_real_zones, d2.n_real_nodes, d2.fpz, d2.lpz) == (
        1001, 1004, 0, 1_008_016, 1_000_000, 1_002_001, 1005, 1_007_010)
    d3 = domain_3d(1e6)
    assert (d3.n, d3.jp, d3.kp, d3.nnalls, d3.n_real_zones, d3.n_real_nodes, d3.fpz, d3.lpz) == (
        101, 104, 10_816, 1_124_864, 1_000_000, 1_030_301, 10_921, 1_113_942)
    assert d3.lpz + 1 - d3.fpz == 1_103_022


def test_real_zones_run_i_fastest_then_j_then_k():
    d = domain_3d(30)
    zones = d.real_zones()
    expected = [d.lin(i, j, k) for k in range(d.lo, d.hi) for j in range(d.lo, d.hi) for i in range(d.lo, d.hi)]
    np.testing.assert_array_equal(zones, expected)
    assert zones.dtype == np.int64 and len(zones) == d.n_real_zones


def test_mesh_positions_are_the_lattice():
    d = domain_2d(400)
    x, y = d.positions((0.2, 0.1))
    i, j = 3, 5
    assert x[d.lin(i, j)] == i * 0.2 and y[d.lin(i, j)] == j * 0.1
