"""Row softmax: one cube per row; the max and the sum are cube reductions in shared memory."""

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


@cb.func
def cube_reduce(scratch, value, dim, op_max):
    """Reduce ``value`` over the cube with max or sum; every unit gets the result."""
    unit = cb.UNIT_POS
    scratch[unit] = value
    cb.sync_cube()
    step = dim // 2
    while step > 0:
        if unit < step:
            if op_max:
                scratch[unit] = cb.max(scratch[unit], scratch[unit + step])
            else:
                scratch[unit] = scratch[unit] + scratch[unit + step]
        cb.sync_cube()
        step //= 2
    result = scratch[0]
    cb.sync_cube()
    return result


@cb.kernel
def softmax(x: Array[f32], out: Mut[Array[f32]], dim: Comptime[int]):
    scratch = cb.SharedMemory(f32, dim)
    row = cb.CUBE_POS
    cols = x.shape[1]
    local_max = -3.0e38
    for c in range(cb.UNIT_POS, cols, dim):
        local_max = cb.max(local_max, x[row, c])
    row_max = cube_reduce(scratch, local_max, dim, True)
    local_sum = 0.0
    for c in range(cb.UNIT_POS, cols, dim):
        local_sum += cb.exp(x[row, c] - row_max)
    row_sum = cube_reduce(scratch, local_sum, dim, False)
    for c in range(cb.UNIT_POS, cols, dim):
        out[row, c] = cb.exp(x[row, c] - row_max) / row_sum


def main():
    rng = np.random.default_rng()
    x = rng.standard_normal((64, 1000), dtype=np.float32) * 4
    out = np.full_like(x, np.nan)
    softmax[cb.CubeCount(x.shape[0]), cb.CubeDim(128)](x, out, 128)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    print(f"softmax ok: {x.shape}")


if __name__ == "__main__":
    main()
