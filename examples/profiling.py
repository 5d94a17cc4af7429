"""profile: where a loop of launches spends its time, before and after keeping arrays on the device.

    CUBEPY_DEVICE=opencl python examples/profiling.py
"""

import warnings

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f32


@cb.kernel
def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]


def main():
    n, launches = 1 << 20, 10
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    dev = cb.current_device()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cb.TransferWarning)     # the first loop is the trap on purpose
        with cb.profile() as p:
            for _ in range(launches):                           # NumPy arguments: copied every launch
                saxpy[n // 256, 256](x, y, 2.0, device=dev)
            x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(y, device=dev)
            for _ in range(launches):                           # preloaded: copied once
                saxpy[n // 256, 256](x_dev, y_dev, 2.0, device=dev)
            y_dev.to_host(out=y)
    print(p.table())
    np.testing.assert_array_equal(y, 2.0 * 2 * launches)
    assert p.kernels["saxpy"].launches == 2 * launches
    print(f"profile ok on {dev.name}")


if __name__ == "__main__":
    main()
