"""Sum with plane (warp / wavefront / sub-group) operations, correct at every plane size:
the kernel reads PLANE_DIM, never assumes 32."""

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f32


@cb.kernel
def plane_sum(x: Array[f32], total: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    value = x[i] if i < len(x) else 0.0
    s = cb.plane_sum(value)
    if cb.UNIT_POS_PLANE == 0:
        cb.atomic_add(total, 0, s)


@cb.kernel
def plane_sum_shuffle(x: Array[f32], total: Mut[Array[f32]]):
    """The same with a butterfly of shuffles: log2(PLANE_DIM) steps, unrolled."""
    i = cb.ABSOLUTE_POS
    value = x[i] if i < len(x) else 0.0
    offset = cb.PLANE_DIM // 2
    while offset > 0:
        value += cb.plane_shuffle_xor(value, offset)
        offset //= 2
    if cb.UNIT_POS_PLANE == 0:
        cb.atomic_add(total, 0, value)


def main():
    rng = np.random.default_rng()
    x = rng.random(100_000, dtype=np.float32)
    expected = x.astype(np.float64).sum()
    for plane_dim in (1, 8, 16, 32, 64):
        dev = cb.device("interp", plane_dim=plane_dim)
        for kernel in (plane_sum, plane_sum_shuffle):
            total = np.zeros(1, np.float32)
            kernel.launch((len(x) + 127) // 128, 128, x, total, device=dev)
            assert abs(total[0] - expected) <= 1e-4 * expected, (kernel.__name__, plane_dim, total[0], expected)
    print(f"plane reductions ok at plane sizes 1..64: {expected:.3f}")


if __name__ == "__main__":
    main()
