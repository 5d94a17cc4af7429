"""The compile pipeline: the named stages a traced kernel goes through before a backend sees it.

`PIPELINE` is the list every kernel runs, in order (docs/design.md, "The IR", says what each
stage does). A stage is a check (reads the IR, may raise), a transform (rewrites the IR in place)
or an analysis (its result is stored in ``kernel.analyses`` under the stage's name, for backends
to read with `analysis` instead of computing it again). A transform drops the analyses stored
before it, since they name values it may have replaced, so a stored analysis always describes
the IR as it is.

A backend with passes of its own builds a `Pipeline` of its stages (OpenCL's barrier hoisting,
`backends/opencl`) and runs it on a copy in its ``compile``; ``PIPELINE.extended(stage,
after="eliminate_dead_code")`` gives the whole list with a stage inserted.

    >>> PIPELINE.names()[:3]
    ('verify', 'check_uniformity', 'flatten_short_circuits')
    >>> kernel = PIPELINE.run(kernel, Options(checks_per_cube=True))     # doctest: +SKIP
    >>> levels = analysis(kernel, "uniformity")                           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .bounds import prove_in_bounds
from .cube_checks import check_per_cube
from .inline_arrays import place_inline_arrays
from .nodes import Kernel, walk
from .opcodes import PLANE_OPS
from .passes import eliminate_dead_code, lower_bounds_checks
from .run_checks import check_per_run
from .short_circuit import flatten_short_circuits
from .uniformity import analyze_uniformity
from .verify import verify

KINDS = ("check", "transform", "analysis")


@dataclass(frozen=True)
class Options:
    """What stages need to know beyond the kernel itself: facts of the device it is compiled for."""

    checks_per_cube: bool = False      # test affine indices once per cube (`cube_checks`)
    guards_per_cube: bool = False      # and decide there the guards every unit of a cube passes
    checks_per_launch: bool = False    # and let the host decide a whole launch first (`cube_checks.launch_test`)
    checks_per_run: bool = False       # test the checked loads of a run of code once before it (`run_checks`)
    versions_barriers: bool = True     # checks may be versioned per cube in a kernel with barriers
    inline_array_bytes: int = 0        # parameter bytes the arrays passed by value may take (`inline_arrays`)


def _always(kernel: Kernel, options: Options) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    """One named step: ``run(kernel, options)``; ``kind`` is one of `KINDS`; ``when(kernel,
    options)`` says whether it runs for this kernel."""

    name: str
    run: Callable[[Kernel, Options], Any]
    kind: str
    when: Callable[[Kernel, Options], bool] = _always

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"stage '{self.name}': kind must be one of {KINDS}, got {self.kind!r}")


class Pipeline:
    """Stages run in order on one kernel."""

    def __init__(self, stages: Iterable[Stage]):
        self.stages = tuple(stages)
        names = self.names()
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"stage names must be unique in a pipeline, repeated: {', '.join(repeated)}")

    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    def __getitem__(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage '{name}' in the pipeline; its stages are {', '.join(self.names())}")

    def __repr__(self) -> str:
        return f"Pipeline({' -> '.join(self.names())})"

    def extended(self, *stages: Stage, after: str | None = None) -> Pipeline:
        """A new pipeline with ``stages`` inserted after the stage ``after`` (at the end if None)."""
        at = len(self.stages) if after is None else self.names().index(self[after].name) + 1
        return Pipeline(self.stages[:at] + stages + self.stages[at:])

    def run(self, kernel: Kernel, options: Options | None = None) -> Kernel:
        """Run every stage whose ``when`` holds; returns the kernel (changed in place)."""
        options = options or Options()
        for stage in self.stages:
            if not stage.when(kernel, options):
                continue
            result = stage.run(kernel, options)
            if stage.kind == "transform":
                kernel.analyses.clear()
            elif stage.kind == "analysis":
                kernel.analyses[stage.name] = result
        return kernel


def analysis(kernel: Kernel, name: str) -> Any:
    """The result of the analysis stage ``name`` that the pipeline stored for ``kernel``."""
    try:
        return kernel.analyses[name]
    except KeyError:
        raise LookupError(f"kernel '{kernel.name}' has no stored '{name}' analysis: run it through "
                          f"cubepy.ir.pipeline.PIPELINE (a transform after the analysis drops it)") from None


def _check_per_cube_wanted(kernel: Kernel, options: Options) -> bool:
    """Per-cube versioning, unless the device keeps a kernel holding barriers (sync_cube, plane
    ops) unversioned (`Options.versions_barriers`). Per-run versioning needs no such rule: a run
    holds no barrier, return or other control (`cubepy.ir.run_checks`)."""
    return options.checks_per_cube and (kernel.checked or options.guards_per_cube) and \
        (options.versions_barriers or not any(op.opcode == "sync_cube" or op.opcode in PLANE_OPS
                                              for op in walk(kernel.body)))


PIPELINE = Pipeline([
    Stage("verify", lambda k, o: verify(k), "check"),
    # misplaced sync_cube and plane ops are errors naming the user's line, before any pass can
    # move or remove them
    Stage("check_uniformity", lambda k, o: analyze_uniformity(k), "check"),
    # `a and b` with a small pure right side as one op, so the provers read both compares
    Stage("flatten_short_circuits", lambda k, o: flatten_short_circuits(k), "transform"),
    Stage("prove_in_bounds", lambda k, o: prove_in_bounds(k), "transform"),
    Stage("check_per_cube", lambda k, o: check_per_cube(k, guards=o.guards_per_cube, launch=o.checks_per_launch),
          "transform", when=_check_per_cube_wanted),
    Stage("check_per_run", lambda k, o: check_per_run(k), "transform",
          when=lambda k, o: o.checks_per_run and k.checked),
    Stage("lower_bounds_checks", lambda k, o: lower_bounds_checks(k), "transform"),
    Stage("eliminate_dead_code", lambda k, o: eliminate_dead_code(k), "transform"),
    # small read-only arrays the runtime offered to pass by value keep it where read at
    # plane-uniform indices, within the budget (cubepy.ir.inline_arrays)
    Stage("place_inline_arrays", lambda k, o: place_inline_arrays(k, o.inline_array_bytes), "transform",
          when=lambda k, o: o.inline_array_bytes > 0),
    Stage("verify_lowered", lambda k, o: verify(k), "check"),
    # the uniformity level of every value of the final IR (cubepy.ir.uniformity): the CPU backend
    # runs cube-uniform values and branches once per cube
    Stage("uniformity", lambda k, o: analyze_uniformity(k), "analysis"),
])

__all__ = ["KINDS", "PIPELINE", "Options", "Pipeline", "Stage", "analysis"]
