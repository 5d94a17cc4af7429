"""The transfer study on ENERGY's six dependent kernels (the plain port, checked: the default):

1. ``numpy``: NumPy arrays passed to every launch; cubepy moves them (inputs to the device, ``Mut``
   arrays there and back) launch after launch;
2. ``preload``: ``cb.preload`` the inputs and ``cb.preload_mut`` the outputs once, ``to_host`` at the end;
3. ``host read per kernel``: preloaded, but the output a kernel wrote is read on the host after every
   kernel (``to_host``), the pattern that made one run of the paper 400x slower.

Each reports end-to-end wall time, kernel time, H2D/D2H bytes and counts and synchronizations (all
from ``cb.profile()``) and peak device memory: on CUDA measured by routing CuPy's allocations
(which cubepy's copies and preloads use) through a wrapper of CuPy's default memory pool that
records the pool's ``used_bytes()`` after every allocation; the peak minus the bytes in use before
the scenario is the scenario's peak. On host devices there is no device memory to report.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

import cubepy as cb

from .app import cubes
from .apps.energy import PLAIN, Energy, loop_arguments

WRITES = ("e_new", "q_new", "e_new", "e_new", "e_new", "q_new")      # the output of each of the six loops
OUTPUTS = ("e_new", "q_new")


class PeakDeviceMemory:
    """Peak of CuPy's default pool's used bytes while active (None on host devices)."""

    def __init__(self, device):
        self.cupy = None
        if device.properties.backend == "cuda":
            import cupy
            self.cupy = cupy
        self.peak = self.base = 0

    def __enter__(self):
        if self.cupy is not None:
            pool = self.cupy.get_default_memory_pool()
            self.base = self.peak = pool.used_bytes()

            def malloc(size):
                memory = pool.malloc(size)
                self.peak = max(self.peak, pool.used_bytes())
                return memory
            self.cupy.cuda.set_allocator(malloc)
        return self

    def __exit__(self, *exc):
        if self.cupy is not None:
            self.cupy.cuda.set_allocator(self.cupy.get_default_memory_pool().malloc)

    @property
    def bytes(self):
        return None if self.cupy is None else self.peak - self.base


def _launchers(n: int):
    return [k[cubes(n, 256), 256] for k in PLAIN]


def _rep(launchers, args_list, device, after=None):
    for k, (launch, args) in enumerate(zip(launchers, args_list)):
        launch(*args, device=device)
        if after is not None:
            after(k)


def _scenario_numpy(problem, device, reps):
    host = problem.copy_arrays()
    args = loop_arguments(host, problem.scalars)
    launchers = _launchers(problem.size)
    for _ in range(reps):
        _rep(launchers, args, device)
    return {k: host[k] for k in OUTPUTS}


def _scenario_preload(problem, device, reps, read_every_kernel=False):
    host = problem.copy_arrays()
    handles = {k: (cb.preload_mut(v, device=device) if k in OUTPUTS else cb.preload(v, device=device))
               for k, v in host.items()}
    args = loop_arguments(handles, problem.scalars)
    launchers = _launchers(problem.size)
    after = (lambda k: handles[WRITES[k]].to_host(out=host[WRITES[k]])) if read_every_kernel else None
    for _ in range(reps):
        _rep(launchers, args, device, after)
    for k in OUTPUTS:
        handles[k].to_host(out=host[k])
    return {k: host[k] for k in OUTPUTS}


SCENARIOS = {
    "numpy": lambda p, d, r: _scenario_numpy(p, d, r),
    "preload": lambda p, d, r: _scenario_preload(p, d, r),
    "host read per kernel": lambda p, d, r: _scenario_preload(p, d, r, read_every_kernel=True),
}


def transfer_study(device, reps: int, size: int = 1_000_000) -> dict:
    """Run the three scenarios; return their measurements and whether each result was right."""
    app = Energy()
    problem = app.set_up(size)
    expected = problem.copy_arrays()
    app.reference(problem, expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cb.TransferWarning)      # scenario 1 is the trap, on purpose
        for run in SCENARIOS.values():                            # compile everything first, untimed
            run(problem, device, 1)
        out = {"size": size, "reps": reps, "kernels_per_rep": 6, "scenarios": {}}
        for name, run in SCENARIOS.items():
            with PeakDeviceMemory(device) as peak, cb.profile() as prof:
                start = time.perf_counter()
                result = run(problem, device, reps)
                device.synchronize()
                wall = time.perf_counter() - start
            stats = prof.kernels
            launched = [s for k, s in stats.items() if k.startswith("energy")]
            out["scenarios"][name] = {
                "wall_s": wall,
                "kernel_ms": sum(s.kernel_ms for s in launched),
                "launches": sum(s.launches for s in launched),
                "h2d_count": sum(s.h2d_count for s in stats.values()),
                "h2d_bytes": sum(s.h2d_bytes for s in stats.values()),
                "d2h_count": sum(s.d2h_count for s in stats.values()),
                "d2h_bytes": sum(s.d2h_bytes for s in stats.values()),
                "syncs": sum(s.syncs for s in stats.values()),
                "peak_device_bytes": peak.bytes,
                "correct": all(np.array_equal(result[k], expected[k]) for k in OUTPUTS),
                "profile": prof.table(),
            }
    return out


def transfer_table(study: dict) -> str:
    head = (f"transfer study: ENERGY's six kernels, n = {study['size']}, {study['reps']} reps "
            f"({study['reps'] * 6} launches) per scenario")
    cols = f"{'scenario':<22} {'wall ms':>10} {'kernel ms':>10} {'H2D':>6} {'H2D MB':>9} {'D2H':>6} {'D2H MB':>9} " \
           f"{'syncs':>6} {'peak dev MB':>12} {'correct':>8}"
    lines = [head, cols, "-" * len(cols)]
    for name, s in study["scenarios"].items():
        peak = "-" if s["peak_device_bytes"] is None else f"{s['peak_device_bytes'] / 1e6:.1f}"
        lines.append(f"{name:<22} {s['wall_s'] * 1e3:10.1f} {s['kernel_ms']:10.1f} {s['h2d_count']:6d} "
                     f"{s['h2d_bytes'] / 1e6:9.1f} {s['d2h_count']:6d} {s['d2h_bytes'] / 1e6:9.1f} {s['syncs']:6d} "
                     f"{peak:>12} {str(s['correct']):>8}")
    return "\n".join(lines)
