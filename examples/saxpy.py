"""saxpy: y = a * x + y, one unit per element, and the same with Lines of 4."""

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f32


@cb.kernel
def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]


def main():
    rng = np.random.default_rng()
    n = 1 << 20
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    expected = 2.5 * x + y

    dim = 256
    saxpy[cb.CubeCount((n + dim - 1) // dim), cb.CubeDim(dim)](x, y, 2.5)
    np.testing.assert_allclose(y, expected, rtol=1e-6)

    # Lines: each element of x and y is a Line of 4 floats (a float4 on GPUs).
    y2 = expected.copy()
    saxpy[cb.CubeCount(n // 4 // dim), cb.CubeDim(dim)](cb.lines(x, 4), cb.lines(y2, 4), 2.5)
    np.testing.assert_allclose(y2, 2.5 * x + expected, rtol=1e-5)
    print(f"saxpy ok on {cb.current_device().name}: {n} elements")


if __name__ == "__main__":
    main()
