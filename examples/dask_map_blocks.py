"""A cubepy kernel over a Dask array on a local cluster of worker processes.

`cubepy.dask.map_blocks` runs the kernel on every chunk, on the workers; the kernel travels to
them as its source (it is defined in __main__) and each worker compiles it once, or finds it in
the disk cache the workers of a machine share. A second wave of tasks compiles nothing, which
`cb.compile_stats()` on every worker shows. NumPy chunks run on the workers' `cpu` device; CuPy
chunks would run in place on `cuda`.
"""

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

import cubepy as cb
import cubepy.dask
from cubepy import Array, Mut, f32


@cb.kernel
def smooth(x: Array[f32], out: Mut[Array[f32]], weight: f32):
    """out[i] = x[i] blended with its neighbours inside the chunk."""
    i = cb.ABSOLUTE_POS
    n = len(x)
    if i < n:
        left = x[i - 1] if i > 0 else x[i]
        right = x[i + 1] if i + 1 < n else x[i]
        out[i] = (1.0 - weight) * x[i] + weight * 0.5 * (left + right)


def cubes(shape, units=256):
    return (shape[0] + units - 1) // units


def reference(chunk: np.ndarray, weight: float) -> np.ndarray:
    padded = np.concatenate([chunk[:1], chunk, chunk[-1:]])
    w = np.float32(weight)
    return (np.float32(1) - w) * chunk + w * np.float32(0.5) * (padded[:-2] + padded[2:])


def main():
    rng = np.random.default_rng(0)
    data = rng.standard_normal(400_000).astype(np.float32)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        x = da.from_array(data, chunks=50_000)
        y = cubepy.dask.map_blocks(smooth, x, 0.25, count=cubes, dim=256)
        first = y.compute()
        after_first = client.run(cb.compile_stats)
        second = (y * 2).compute()
        after_second = client.run(cb.compile_stats)
    expected = np.concatenate([reference(c, 0.25) for c in np.split(data, 8)])
    np.testing.assert_allclose(first, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(second, 2 * expected, rtol=1e-6, atol=1e-6)
    assert after_first == after_second, (after_first, after_second)      # the second wave compiled nothing
    per_worker = ", ".join(f"{s['traces']} trace(s), {s['compiles']} compile(s), {s['disk_loads']} disk load(s)"
                           for s in after_first.values())
    print(f"dask_map_blocks ok: 8 chunks on 2 workers ({per_worker}); the second wave compiled nothing")


if __name__ == "__main__":
    main()
