"""2-D transpose through a shared-memory tile, so both the read and the write are contiguous."""

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


@cb.kernel
def transpose(a: Array[f32], out: Mut[Array[f32]], tile: Comptime[int]):
    buf = cb.SharedMemory(f32, (tile, tile + 1))      # +1 column avoids bank conflicts
    tx, ty = cb.UNIT_POS_X, cb.UNIT_POS_Y
    row = cb.CUBE_POS_Y * tile + ty
    col = cb.CUBE_POS_X * tile + tx
    if row < a.shape[0] and col < a.shape[1]:
        buf[ty, tx] = a[row, col]
    cb.sync_cube()
    out_row = cb.CUBE_POS_X * tile + ty
    out_col = cb.CUBE_POS_Y * tile + tx
    if out_row < out.shape[0] and out_col < out.shape[1]:
        out[out_row, out_col] = buf[tx, ty]


def main():
    rng = np.random.default_rng()
    a = rng.standard_normal((300, 190), dtype=np.float32)
    out = np.full((190, 300), np.nan, np.float32)
    tile = 16
    count = cb.CubeCount((a.shape[1] + tile - 1) // tile, (a.shape[0] + tile - 1) // tile)
    transpose[count, cb.CubeDim(tile, tile)](a, out, tile)
    np.testing.assert_array_equal(out, a.T)
    print(f"transpose ok: {a.shape} -> {out.shape}")


if __name__ == "__main__":
    main()
