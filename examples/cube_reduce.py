"""Sum of an array: each cube reduces its part in shared memory with sync_cube, then one
atomic per cube adds the partial sum into the result."""

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


@cb.kernel
def cube_sum(x: Array[f32], total: Mut[Array[f32]], dim: Comptime[int]):
    partial = cb.SharedMemory(f32, dim)
    unit = cb.UNIT_POS
    i = cb.ABSOLUTE_POS
    acc = 0.0
    stride = cb.CUBE_COUNT * dim
    while i < len(x):           # grid-stride loop: any size with any number of cubes
        acc += x[i]
        i += stride
    partial[unit] = acc
    cb.sync_cube()
    step = dim // 2
    while step > 0:             # a compile-time loop: unrolled into log2(dim) steps
        if unit < step:
            partial[unit] += partial[unit + step]
        cb.sync_cube()
        step //= 2
    if unit == 0:
        cb.atomic_add(total, 0, partial[0])


def main():
    rng = np.random.default_rng()
    x = rng.random(1_000_003, dtype=np.float32)
    total = np.zeros(1, np.float32)
    dim = 256
    cube_sum[cb.CubeCount(64), cb.CubeDim(dim)](x, total, dim)
    expected = x.astype(np.float64).sum()
    assert abs(total[0] - expected) <= 1e-4 * expected, (total[0], expected)
    print(f"cube reduction ok: {total[0]:.3f} (NumPy {expected:.3f})")


if __name__ == "__main__":
    main()
