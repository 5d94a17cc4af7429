"""Candidates compile in parallel in worker processes, and the tuning process loads them from the
disk cache: it compiles none of them itself (the counts come from cb.compile_stats)."""

from __future__ import annotations

import numpy as np
import pytest
from cubepy.autotune import autotune, pool

from tests.autotune.kernels import axpy, lines_grid

EIGHT_SHAPES = [8, 16, 32, 64, 128, 256, 512, 1024]
# Each test tunes its own per_unit, used by no other test: a configuration another test compiled
# earlier in the same process (pytest-xdist gives a worker files in any mix) is a hit in memory,
# neither a compile nor a disk load, and the counts below would be off by it.


def test_eight_cube_shapes_compile_in_the_workers_and_load_here(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    x = rng.standard_normal(8192).astype(np.float32)
    y = rng.standard_normal(8192).astype(np.float32)
    tuned = autotune(axpy, lines_grid, dims=EIGHT_SHAPES, comptime={"per_unit": [6]}, workers=2, rounds=2)
    result = tuned.tune(x, y, 0.5, device="cpu")
    assert result.compiles == {"compiles": 0, "disk_loads": 8, "shared_shapes": 0, "worker_compiles": 8,
                               "worker_disk_loads": 0}
    assert result.measured == 8 and not result.rejected


def test_without_workers_the_tuning_process_compiles_each_shape(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    x = rng.standard_normal(4096).astype(np.float32)
    y = rng.standard_normal(4096).astype(np.float32)
    tuned = autotune(axpy, lines_grid, dims=EIGHT_SHAPES[:4], comptime={"per_unit": [3]}, workers=0, rounds=2)
    assert tuned.tune(x, y, 0.5, device="cpu").compiles == {"compiles": 4, "disk_loads": 0, "shared_shapes": 0}


def test_fastmath_and_line_width_variants_compile_in_the_workers_too(rng, tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    x = rng.standard_normal(4096).astype(np.float32)
    y = rng.standard_normal(4096).astype(np.float32)
    tuned = autotune(axpy, lines_grid, dims=[64], comptime={"per_unit": [4]}, lines={("x", "y"): [1, 4]},
                     fastmath=[None, "algebraic"], workers=2, rounds=2)
    result = tuned.tune(x, y, 0.5, device="cpu")
    assert result.compiles["compiles"] == 0 and result.compiles["worker_compiles"] == 4


def test_a_backend_without_compiled_code_on_disk_compiles_in_the_tuning_process(rng, tmp_path, monkeypatch):
    import cubepy as cb

    if not next(d for d in cb.devices() if d.backend_name == "opencl").available:
        pytest.skip("no OpenCL device")
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    x = rng.standard_normal(4096).astype(np.float32)
    y = rng.standard_normal(4096).astype(np.float32)
    dev = cb.device("opencl", shape_generic=False)       # else the four shapes share one compile
    tuned = autotune(axpy, lines_grid, dims=EIGHT_SHAPES[2:6], comptime={"per_unit": [7]}, workers=2, rounds=2)
    compiles = tuned.tune(cb.preload(x, device=dev), cb.preload_mut(y, device=dev), 0.5, device=dev).compiles
    assert compiles["compiles"] >= 4 and "worker_compiles" not in compiles      # OpenCL builds in process


@pytest.mark.parametrize("backend", ["interp", "opencl"])
def test_eight_cube_shapes_of_a_shape_generic_kernel_cost_one_compile(backend, rng, tmp_path, monkeypatch):
    """On a device that reads cube extents at run time, the shapes share one executable: one
    compile, seven shared, no worker started; a shape over the shared executable's work-group
    limit (NVIDIA's OpenCL gives every kernel 256) compiles on its own."""
    import cubepy as cb

    if not next(d for d in cb.devices() if d.backend_name == backend).available:
        pytest.skip(f"no {backend} device")
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    x = rng.standard_normal(4096).astype(np.float32)
    y = rng.standard_normal(4096).astype(np.float32)
    dev = cb.device(backend, shape_generic=True)        # PoCL would compile per CubeDim by choice
    tuned = autotune(axpy, lines_grid, dims=EIGHT_SHAPES, comptime={"per_unit": [5]}, workers=2, rounds=2)
    with cb.profile() as prof:
        result = tuned.tune(x, y, 0.5, device=dev)
    limit = dev.backend.units_limit(axpy.compile(x, y, 0.5, 5, dim=8, device=dev).executable)
    over = sum(units > limit for units in EIGHT_SHAPES)
    assert prof.kernels["axpy"].compiles == 1 + over and result.compiles["shared_shapes"] == 7 - over
    assert result.compiles["disk_loads"] == 0 and "worker_compiles" not in result.compiles
    assert result.measured == 8 and not result.rejected


def test_a_cold_pool_starts_only_for_a_tuning_that_expects_enough_compiles(monkeypatch):
    monkeypatch.setattr(pool, "_pools", {})
    monkeypatch.setattr(pool.os, "cpu_count", lambda: 16)
    if hasattr(pool.os, "sched_getaffinity"):
        monkeypatch.setattr(pool.os, "sched_getaffinity", lambda _: set(range(16)))
    assert pool.workers_for(8, None, expected=8) == 0                # eight compiles: cheaper in process
    assert pool.workers_for(8, None, expected=pool.COLD_START_JOBS) == 8
    assert pool.workers_for(8, 2, expected=8) == 2                   # asked for: always
    monkeypatch.setattr(pool, "_pools", {16: object()})              # a running pool: always worth it
    assert pool.workers_for(8, None, expected=8) == 8
