"""Regions: each unit gets its own disjoint part of the output, so writes can never race.

Indexing a region is local (``part[j]``) and checked against the unit's part, not the array;
``part.global_index(j)`` says where that element lies in the whole array, so a unit can read the
matching elements of plain inputs.
"""

import numpy as np

import cubepy as cb
from cubepy import Array, Linear1D, Region, Strided1D, Tile2D, f32


@cb.kernel
def scale_chunks(part: Region[f32, Linear1D], a: f32):
    for j in range(len(part)):      # this unit's chunk, indexed from 0
        part[j] = part[j] * a


@cb.kernel
def axpy_into(out: Region[f32, Linear1D], x: Array[f32], y: Array[f32], a: f32):
    for j in range(len(out)):
        g = out.global_index(j)     # this element's index in the whole array
        out[j] = a * x[g] + y[g]


@cb.kernel
def transpose_tiles(out: Region[f32, Tile2D(2, 4)], m: Array[f32]):
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            i, j = out.global_index(r, c)
            out[r, c] = m[j, i]


@cb.kernel
def fill_strided(part: Region[f32, Strided1D], value: f32):
    for j in range(len(part)):
        part[j] = value + j


@cb.kernel
def tile_add(tiles: Region[f32, Tile2D(2, 4)], a: f32):
    for r in range(tiles.shape[0]):
        for c in range(tiles.shape[1]):
            tiles[r, c] = tiles[r, c] + a


class Halves(cb.UnsafePartitioning):
    """A user strategy: unit u owns elements 2u and 2u + 1."""

    def part(self, shape, t):
        return [(t.min(t.unit * 2, shape[0]), 1, t.min(2, shape[0] - t.min(t.unit * 2, shape[0])))]


def main():
    rng = np.random.default_rng()
    y = rng.standard_normal(1000, dtype=np.float32)
    expected = y * 3.0
    z = y.copy()
    scale_chunks[cb.CubeCount(2), cb.CubeDim(64)](z, 3.0)
    np.testing.assert_allclose(z, expected, rtol=1e-6)

    x = rng.standard_normal(1000, dtype=np.float32)
    out = np.full(1000, np.nan, np.float32)
    axpy_into[cb.CubeCount(2), cb.CubeDim(64)](out, x, y, 2.0)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6)

    src = rng.standard_normal((50, 37), dtype=np.float32)
    t = np.full((37, 50), np.nan, np.float32)
    transpose_tiles[cb.CubeCount(4, 5), cb.CubeDim(4, 4)](t, src)
    np.testing.assert_array_equal(t, src.T)

    s = np.full(1000, np.nan, np.float32)
    fill_strided[cb.CubeCount(3), cb.CubeDim(32)](s, 1.0)
    np.testing.assert_array_equal(s, 1.0 + np.arange(1000) // 96)

    m = rng.standard_normal((37, 50), dtype=np.float32)
    m2 = m.copy()
    tile_add[cb.CubeCount(4, 5), cb.CubeDim(4, 4)](m2, 1.5)
    np.testing.assert_allclose(m2, m + 1.5, rtol=1e-6)

    for strategy, shape, count, dim in [(cb.Linear1D(), (1000,), 2, 64), (cb.Strided1D(), (1000,), 3, 32),
                                        (cb.Tile2D(2, 4), (37, 50), (4, 5), (4, 4)), (Halves(), (256,), 2, 64)]:
        cb.verify_partitioning(strategy, shape, count, dim)
    print("regions ok: Linear1D, Strided1D, Tile2D and a verified user strategy")


if __name__ == "__main__":
    main()
