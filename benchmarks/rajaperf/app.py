"""What every RAJAPerf kernel of the suite provides: its set-up, a NumPy reference, and cubepy ports.

A `Problem` holds one kernel's data after RAJAPerf's set-up (host NumPy arrays, scalars, sizes).
An `App` makes problems and knows how to run one rep (all of its launches) in NumPy and in cubepy:
``app.port(variant, problem, arrays, device, checked)`` returns a callable running one rep on the
device's ``arrays`` (NumPy arrays on ``cpu``/``interp``, CuPy arrays on ``cuda``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from cubepy.autotune import autotune
from cubepy.autotune.measure import Measure, time_interleaved

import cubepy as cb

POISON = np.nan            # what outputs hold before a checked run: every unwritten element shows


@dataclass
class Problem:
    """One kernel's data after RAJAPerf's set-up."""

    app: str
    target_size: int
    size: int                      # RAJAPerf's actual problem size
    its_per_rep: int
    arrays: dict[str, np.ndarray]
    scalars: dict[str, float] = field(default_factory=dict)
    params: dict[str, int] = field(default_factory=dict)   # strides, extents, loop bounds
    bytes_per_rep: int = 0         # RAJAPerf's declared bytes (read + written + 2 * modified)
    flops_per_rep: int = 0

    def copy_arrays(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self.arrays.items()}


@dataclass(frozen=True)
class Launch:
    """One launch of a port: the kernel, its cube count and dim, its arguments."""

    kernel: object
    count: object
    dim: object
    args: tuple

    def describe(self) -> dict:
        return {"kernel": self.kernel.__name__, "cube_count": self.count, "cube_dim": self.dim}


class Rep:
    """One rep of a cubepy port: its launches in order, each through the kernel's launcher (so
    repeated reps take the warm path). ``launches`` says what runs, for reports and checks."""

    def __init__(self, launches: list[Launch], device, checked: bool):
        self.launches, self.device, self.checked = launches, device, checked
        calls = [(launch.kernel[launch.count, launch.dim], launch.args) for launch in launches]
        if len(calls) == 1:
            (launcher, args), = calls

            def run():
                launcher(*args, device=device, checked=checked)
        else:
            def run():
                for launcher, args in calls:
                    launcher(*args, device=device, checked=checked)
        self.run = run

    def __call__(self) -> None:
        self.run()


class App:
    """A RAJAPerf kernel. Subclasses set the class attributes and implement the methods."""

    name: str = ""
    default_size: int = 1_000_000
    default_reps: int = 100
    kernels_per_rep: int = 1
    outputs: tuple[str, ...] = ()  # the arrays of RAJAPerf's checksum
    written: tuple[str, ...] = ()  # every array a rep writes (default: the outputs)
    accumulates: bool = False      # outputs carry over from rep to rep (then the checksum needs exactly reps)
    tuned_summary: str = ""        # what the tuned variant uses, for the report
    tuned_rtol: float = 1e-12      # tolerance of the tuned variant against the reference (fastmath)

    def set_up(self, target_size: int) -> Problem:
        raise NotImplementedError

    def reference(self, problem: Problem, arrays: dict[str, np.ndarray]) -> None:
        """One rep in NumPy, in place on ``arrays``, in the C code's operation order."""
        raise NotImplementedError

    def plain(self, problem: Problem, arrays: dict, device, checked: bool) -> Rep:
        raise NotImplementedError

    def tuned(self, problem: Problem, arrays: dict, device, checked: bool) -> Rep:
        raise NotImplementedError

    def port(self, variant: str, problem: Problem, arrays: dict, device, checked: bool) -> Rep:
        return (self.plain if variant == "plain" else self.tuned)(problem, arrays, device, checked)

    def written_arrays(self) -> tuple[str, ...]:
        return self.written or self.outputs

    def poison(self, arrays: dict, memory=None) -> None:
        """Make what a previous run wrote unusable before a check (in place, any array type; an
        app that needs host-made values writes them through ``memory``, `memory.HostMemory` if None)."""
        for name in self.written_arrays():
            arrays[name].fill(POISON)

    def checksum_reps(self, problem: Problem) -> int:
        """Reps from the set-up state before the checksum. Where state carries across reps (LTIMES)
        RAJAPerf's checksum is defined after exactly its default reps: those, up to the default
        size (beyond it no RAJAPerf value exists, and the NumPy reference of 50 reps would take
        minutes), else one; every other kernel gives the same result after any number of reps."""
        if self.accumulates and problem.target_size <= self.default_size:
            return self.default_reps
        return 1


def cubes(n: int, dim: int) -> int:
    return (n + dim - 1) // dim


# Autotune settings per backend kind: GPU launches are cheap to repeat, CPU launches of the large
# sizes are not (each candidate costs rounds * reps launches, once per size; results are cached).
TUNE_REPS = {"cuda": (20, 5), "hip": (20, 5), "opencl": (10, 3)}
TUNE_DEFAULT = (2, 3)


def tune_dim(kernel, args: tuple, n_units: int, device, checked: bool, dims=None, grid=None) -> tuple:
    """``(count, dim)`` of ``kernel`` over ``n_units`` units in the build that runs (``checked``).
    Each build is autotuned (`cubepy.autotune.autotune`: a checked build can want another cube
    size, for its registers); where the two choices differ, both shapes run in this build in
    interleaved turns (`cubepy.autotune.measure.time_interleaved`, GPU time alone on a GPU) and the
    faster is kept. So each build runs at the better of the two shapes as measured side by side:
    the tuner's noise cannot give one build a worse shape than the other's (tuned apart without
    this, FIR's checked cost was 1.11 on the H200; both at the unchecked build's shape, the tuned
    MATVEC_3D_STENCIL's was 1.06-1.07 on an H100: docs/benchmarks.md)."""
    reps, rounds = TUNE_REPS.get(device.properties.backend, TUNE_DEFAULT)
    grid = grid or (lambda _args, dim: cubes(n_units, dim[0]))
    shapes: list[tuple] = []
    for build_checked in (False, True):
        best = autotune(_build(kernel, build_checked), grid, dims=dims, reps=reps, rounds=rounds).best(
            *args, device=device)
        if best.dim not in shapes:
            shapes.append(best.dim)
    if len(shapes) > 1:
        shapes = [_faster(_build(kernel, checked), shapes, args, grid, device)]
    dim3 = shapes[0]
    return grid(args, dim3), dim3[0] if dim3[1:] == (1, 1) else dim3


def _faster(build, shapes: list, args: tuple, grid, device) -> tuple:
    """The shape of ``shapes`` at which ``build`` runs fastest, timed in interleaved turns."""
    launches = [lambda d=d: build[grid(args, d), d](*args, device=device) for d in shapes]
    timings = time_interleaved(launches, device, Measure(), rounds=15)
    return min(zip(timings, shapes), key=lambda pair: pair[0].ms)[1]


_BUILDS: dict = {}


def _build(kernel, checked: bool):
    """``kernel`` as it runs with ``checked`` (the same source and fastmath; made once)."""
    if kernel.checked is checked:
        return kernel
    key = (kernel, checked)
    if key not in _BUILDS:
        _BUILDS[key] = cb.kernel(kernel.__wrapped__, checked=checked, fastmath=kernel.fastmath)
    return _BUILDS[key]
