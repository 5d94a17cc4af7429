"""autotune: let the device pick the cube size and how many elements each unit handles."""

import numpy as np
from cubepy.autotune import autotune

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32


@cb.kernel
def scale_add(x: Array[f32], y: Mut[Array[f32]], a: f32, per_unit: Comptime[int]):
    base = cb.ABSOLUTE_POS * per_unit
    for k in cb.unroll(range(per_unit)):
        if base + k < len(x):
            y[base + k] = a * x[base + k] + y[base + k]


def cubes(args, dim, comptime):
    """The cube count for a cube of ``dim`` units, each handling ``per_unit`` elements."""
    n, per_cube = len(args[0]), dim[0] * comptime["per_unit"]
    return (n + per_cube - 1) // per_cube


def main():
    rng = np.random.default_rng()
    n = 1 << 18
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    expected = 0.5 * x + y

    dev = cb.current_device()
    x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(y, device=dev)
    tuned = autotune(scale_add, cubes, comptime={"per_unit": [1, 4]}, reps=3, rounds=3)
    tuned(x_dev, y_dev, 0.5, device=dev)    # measures each candidate on copies of y, then runs once
    best = tuned.best(x_dev, y_dev, 0.5, device=dev)
    np.testing.assert_allclose(y_dev.to_host(), expected, rtol=1e-6)
    print(f"autotune ok on {dev.name}: {best.label} fastest of {tuned.measured} measured")


if __name__ == "__main__":
    main()
