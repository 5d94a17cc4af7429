"""Histogram with atomics: a per-cube histogram in shared memory, merged with global atomics."""

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, i32, u8


@cb.kernel
def histogram(data: Array[u8], bins: Mut[Array[i32]], nbins: Comptime[int]):
    local = cb.SharedMemory(i32, nbins)
    for b in range(cb.UNIT_POS, nbins, cb.CUBE_DIM):
        local[b] = 0
    cb.sync_cube()
    i = cb.ABSOLUTE_POS
    if i < len(data):
        cb.atomic_add(local, i32(data[i]), 1)
    cb.sync_cube()
    for b in range(cb.UNIT_POS, nbins, cb.CUBE_DIM):
        cb.atomic_add(bins, b, local[b])


def main():
    rng = np.random.default_rng()
    data = rng.integers(0, 256, 200_000, dtype=np.uint8)
    bins = np.zeros(256, np.int32)
    histogram[cb.CubeCount((len(data) + 255) // 256), cb.CubeDim(256)](data, bins, 256)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=256))
    print(f"histogram ok: {bins.sum()} samples in 256 bins")


if __name__ == "__main__":
    main()
