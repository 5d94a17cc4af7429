"""Compiling candidates in parallel: a pool of worker processes fills the disk cache of compiled
code, and the tuning process then loads each candidate from it.

Comptime values, Line widths and ``fastmath`` are part of a kernel's compile key, and so is the
CubeDim of a kernel that specializes on it (others share shape-generic code where the device reads
cube extents at run time: `cubepy.runtime.shapes`), so most candidates are compiles of their own.
A worker gets the kernel (kernels pickle, by reference or by value), small placeholder arguments
of the same kinds (array lengths are not part of the key) and the launch shape, and calls
``kernel.compile``; the disk cache's per-entry lock makes each entry be built once across
processes. Eight candidates then cost about one compile's wall time through a running pool
(given eight cores), and `cubepy.compile_stats` in the tuning process shows disk loads.

Backends without a disk cache of compiled code gain nothing (the interpreter compiles nothing;
OpenCL programs are built by the driver, in process): they compile in the tuning process.

The pool is started on first use (``spawn``: safe with GPU drivers and the CPU backend's threads)
by a tuning that expects enough compiles to pay for its start (`COLD_START_JOBS`), and kept for
the life of the process.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from typing import Any

import numpy as np

from cubepy import settings
from cubepy.lang.types import ArraySpec, ComptimeSpec, LinesArg, RegionSpec
from cubepy.log import logger

_pools: dict[int, ProcessPoolExecutor] = {}
# Devices (by name) found to keep nothing on disk although their backend says `disk_cached`
# (a load after a worker's compile compiled again): candidates compile in the tuning process.
NOT_DISK_CACHED: set[str] = set()


def compiles_in_workers(dev) -> bool:
    """Whether a worker process's compile for ``dev`` is a disk load in this one."""
    return dev.backend.disk_cached and dev.name not in NOT_DISK_CACHED


def placeholders(signature, args: tuple, named: dict) -> list | None:
    """Small positional arguments of the kinds of a launch's ``args`` and ``named`` values: arrays
    of one element (one Line) of the same dtype and rank, the same scalars and Comptime values.
    None where a kind cannot be made small (regions, scalars given as device arrays)."""
    out: list[Any] = []
    for i, (name, annotation) in enumerate(zip(signature.names, signature.annotations)):
        if i >= len(args) and name not in named:
            return None
        arg = args[i] if i < len(args) else named[name]
        if isinstance(annotation, ComptimeSpec):
            out.append(arg)
        elif isinstance(annotation, RegionSpec):
            return None
        elif isinstance(annotation, ArraySpec):
            tiny = _tiny(arg)
            if tiny is None:
                return None
            out.append(tiny)
        elif isinstance(arg, (bool, int, float, np.generic)):
            out.append(arg)
        else:
            return None
    return out


def _tiny(arg) -> Any:
    width = arg.width if isinstance(arg, LinesArg) else 1
    array = arg.array if isinstance(arg, LinesArg) else arg
    try:
        dtype = np.dtype(array.dtype)
    except TypeError:                         # torch: torch.float32
        try:
            dtype = np.dtype(str(array.dtype).rpartition(".")[2])
        except TypeError:
            return None
    ndim = getattr(array, "ndim", None)
    if not ndim:
        return None
    tiny = np.zeros((1,) * (ndim - 1) + (width,), dtype)
    return LinesArg(tiny, width) if width > 1 else tiny


def compile_all(jobs: list[tuple], dev, workers: int) -> dict[str, int]:
    """Compile ``jobs`` (``(kernel, args, dim, named)`` each) for ``dev`` in ``workers`` processes.
    Returns what the workers did: ``{"compiles": n, "disk_loads": m}``, with ``"failed": k`` if any
    failed; a job that fails in a worker is left for the tuning process, which raises or reports
    its error."""
    env = {"CUBEPY_CACHE_DIR": str(settings.cache_dir()), "CUBEPY_CHECKED": os.environ.get("CUBEPY_CHECKED", "1")}
    pool = _pool(workers)
    with _without_main():
        futures = [pool.submit(_compile_one, kernel, args, dim, named, dev.backend_name, dev.options, env)
                   for kernel, args, dim, named in jobs]
    totals = {"compiles": 0, "disk_loads": 0}
    for future in futures:
        try:
            done = future.result()
        except Exception as e:           # a worker that died or a kernel that did not pickle
            logger.debug("autotune: a compile worker failed (%s: %s); the tuning process compiles instead",
                         type(e).__name__, e)
            done = {"failed": 1}
        for name, count in done.items():
            totals[name] = totals.get(name, 0) + count
    return totals


# Starting the pool costs about 2 s on the H200's host (eight NVRTC compiles: 2.1-2.7 s through a
# pool started for them, 0.6-1.2 s one after another, 0.15-0.22 s through a running pool), so by
# default a tuning that expects fewer compiles than this makes them in the tuning process, unless
# the pool already runs.
COLD_START_JOBS = 32


def workers_for(jobs: int, requested: int | None, expected: int | None = None) -> int:
    """How many worker processes to use for ``jobs`` compiles: ``requested``, else one per core
    where there are at least 4 (on 2 cores, starting workers and sending them jobs cost more than
    the second core gains: measured by benchmarks/autotune, part ``compiles``), and none while no
    pool runs if the whole tuning expects (``expected``, else ``jobs``) fewer than
    `COLD_START_JOBS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    most = (cores if cores >= 4 else 0) if requested is None else requested
    if requested is None and not _pools and (jobs if expected is None else expected) < COLD_START_JOBS:
        most = 0
    return max(0, min(jobs, most))


def _pool(workers: int) -> ProcessPoolExecutor:
    """The process's pool, of at least ``workers`` (it starts workers as jobs arrive, so a larger
    pool than a batch needs costs nothing; a pool too small is replaced)."""
    size, pool = next(iter(_pools.items()), (0, None))
    if pool is None or size < workers:
        if pool is not None:
            pool.shutdown(wait=False)
        _pools.clear()
        pool = _pools[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
    return pool


@contextmanager
def _without_main() -> Iterator[None]:
    """Start workers without the program's ``__main__``: ``spawn`` would run a script again in
    every worker (and a script without a ``__name__`` guard would start tuning there). Workers
    need only cubepy; kernels of ``__main__`` travel by value. Workers start on ``submit``."""
    main = sys.modules.get("__main__")
    saved = {name: main.__dict__[name] for name in ("__spec__", "__file__")
             if main is not None and name in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)
            if "__spec__" not in saved:
                main.__dict__.pop("__spec__", None)


@atexit.register
def _shutdown() -> None:
    for pool in _pools.values():
        pool.shutdown(wait=False, cancel_futures=True)
    _pools.clear()


def _compile_one(kernel, args: list, dim: tuple, named: dict, backend: str, options: dict, env: dict) -> dict:
    os.environ.update(env)
    import cubepy as cb

    before = cb.compile_stats()
    try:
        kernel.compile(*args, dim=dim, device=cb.device(backend, **options), **named)
    except Exception:                     # the tuning process compiles it again and reports why
        return {"failed": 1}
    after = cb.compile_stats()
    return {name: after[name] - before[name] for name in ("compiles", "disk_loads")}
