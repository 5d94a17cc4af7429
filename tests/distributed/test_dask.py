"""Dask: a kernel from __main__ over a Dask array on a LocalCluster of worker processes.

Each cluster runs in a subprocess with a timeout, so a cluster that hangs fails the test instead
of blocking the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import subprocess_env

pytest.importorskip("distributed", exc_type=ModuleNotFoundError)    # a broken install fails
ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent('''
    import json, sys
    import dask.array as da
    import numpy as np
    from distributed import Client, LocalCluster
    import cubepy as cb
    import cubepy.dask
    from cubepy import Array, Comptime, Mut, f32

    @cb.kernel
    def poly(x: Array[f32], out: Mut[Array[f32]], a: f32, degree: Comptime[int]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            v = x[i]
            acc = 0.0
            for _ in cb.unroll(range(degree)):
                acc = acc * v + a
            out[i] = acc

    def cubes(shape):
        return (shape[0] + 127) // 128

    if __name__ == "__main__":
        data = np.random.default_rng(int(sys.argv[1])).standard_normal(60_000).astype(np.float32)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
                Client(cluster) as client:
            x = da.from_array(data, chunks=10_000)
            y = cubepy.dask.map_blocks(poly, x, 0.5, 3, count=cubes, dim=128)
            first = y.compute()
            waves = [client.run(cb.compile_stats)]
            second = (y - 1).compute()
            waves.append(client.run(cb.compile_stats))
        expected = np.zeros_like(data)
        for _ in range(3):
            expected = expected * data + np.float32(0.5)
        print(json.dumps({"first": bool(np.array_equal(first, expected)),
                          "second": bool(np.array_equal(second, expected - 1)),
                          "waves": [list(w.values()) for w in waves]}))
''')


def _cluster_run(tmp_path: Path, cache: Path, seed: int) -> dict:
    script = tmp_path / "dask_program.py"
    script.write_text(PROGRAM)
    env = subprocess_env(CUBEPY_CACHE_DIR=str(cache), CUBEPY_DEVICE="cpu")
    run = subprocess.run([sys.executable, str(script), str(seed)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_map_blocks_on_a_two_worker_cluster_compiles_once_and_a_new_cluster_finds_it_on_disk(tmp_path):
    cache = tmp_path / "cache"
    first = _cluster_run(tmp_path, cache, 1)
    assert first["first"] and first["second"]
    wave1, wave2 = first["waves"]
    assert wave1 == wave2                                   # the second wave traced and compiled nothing
    assert sum(s["compiles"] for s in wave1) == 1           # one worker compiled it; one that ran a task...
    # ...loaded it (traced, or restored with its trace: cubepy.runtime.trace_index)
    assert all(s["traces"] + s["restored"] <= 1 and s["compiles"] + s["disk_loads"] == s["traces"] + s["restored"]
               for s in wave1)
    again = _cluster_run(tmp_path, cache, 2)                # fresh worker processes, the same cache folder
    assert again["first"] and again["second"]
    assert sum(s["compiles"] for s in again["waves"][0]) == 0
    assert sum(s["disk_loads"] for s in again["waves"][0]) == sum(s["restored"] for s in again["waves"][0]) >= 1


CUPY_PROGRAM = textwrap.dedent('''
    import json
    import cupy, dask.array as da, numpy as np
    from distributed import Client, LocalCluster
    import cubepy as cb
    import cubepy.dask
    from cubepy import Array, Mut, f32

    @cb.kernel
    def triple(x: Array[f32], out: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            out[i] = x[i] * 3.0

    if __name__ == "__main__":
        data = np.arange(80_000, dtype=np.float32)
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
                Client(cluster) as client:
            x = da.from_array(data, chunks=20_000).map_blocks(cupy.asarray)      # CuPy chunks on the worker
            y = cubepy.dask.map_blocks(triple, x, count=lambda s: (s[0] + 255) // 256, dim=256)
            result = y.compute()
            kind = type(result).__module__.split(".")[0]
            print(json.dumps({"same": bool(np.array_equal(cupy.asnumpy(result), data * 3)), "library": kind}))
''')


def _cuda() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU with CuPy")
def test_cupy_chunks_run_in_place_on_cuda_workers(tmp_path):
    script = tmp_path / "dask_cupy.py"
    script.write_text(CUPY_PROGRAM)
    env = subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"same": True, "library": "cupy"}
