"""What one specialization of a kernel is traced for (built by the runtime at launch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.types import DType


@dataclass(frozen=True)
class ParamSpec:
    """One parameter as specialized: ``kind`` is ``"array"``, ``"region"``, ``"scalar"``,
    ``"scalar_ref"`` (a scalar parameter given as a one-element array in device memory, read by
    the kernel there, so the host never waits for it) or ``"comptime"``."""

    name: str
    kind: str
    dtype: DType | None = None
    width: int = 1
    ndim: int = 1
    mutable: bool = False
    value: Any = None          # the comptime value
    strategy: Any = None       # a Partitioning, for regions
    inline: int = 0            # a small read-only host array passed by value: room for this many
                               # elements (cubepy.runtime.inline_arrays); 0: passed by address

    def key(self) -> tuple:
        strategy = self.strategy.key() if self.strategy is not None else None
        value = (type(self.value).__name__, self.value) if self.kind == "comptime" else None
        return (self.name, self.kind, self.dtype.name if self.dtype else None, self.width, self.ndim,
                self.mutable, value, strategy, self.inline)


@dataclass(frozen=True)
class KernelSpec:
    params: tuple[ParamSpec, ...]
    cube_dim: tuple[int | None, int | None, int | None]    # None: an extent read at run time (shape-generic)
    plane_dim: int
    checked: bool = True
    fastmath: str | None = None
    checks_per_cube: bool = False      # test affine indices once per cube (cubepy.ir.cube_checks)
    guards_per_cube: bool = False      # and decide cube-wide guards there, checked or not
    prints: bool = True                # print(...) records lines (CUBEPY_PRINT=0 compiles them out)
    checks_per_run: bool = False       # test checked loads once per run of code (cubepy.ir.run_checks)
    units_bound: int | None = None     # shape-generic: the most units per cube it launches with
    inline_array_bytes: int = 0        # launch-parameter bytes its inline arrays may take together
    checks_per_launch: bool = False    # the host decides a whole launch before the cube's test
    versions_barriers: bool = True     # checks_per_cube may version a body holding barriers

    def key(self) -> tuple:
        return (tuple(p.key() for p in self.params), self.cube_dim, self.plane_dim, self.checked, self.fastmath,
                self.checks_per_cube, self.guards_per_cube, self.prints, self.checks_per_run, self.units_bound,
                self.inline_array_bytes, self.checks_per_launch, self.versions_barriers)
