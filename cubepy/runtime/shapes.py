"""Shape-generic specializations: one executable for the CubeDims a kernel does not specialize on.

A kernel's CubeDim is part of its specialization: traced for (256, 1, 1), ``CUBE_DIM`` is the
compile-time i32 256. Most kernels use the cube extents only through the positions
(``ABSOLUTE_POS``, ``UNIT_POS``), which a GPU reads at run time anyway. For those, a backend that
can read the extents at run time (`Backend.runtime_cube_dim`) compiles once per *rank pattern*:
the kernel is traced again with each extent above 1 left to run time (None) and each extent of 1
kept, so (64, 1, 1) and (1024, 1, 1) share the spec (None, 1, 1), and (8, 4, 2) and (4, 4, 4) share
(None, None, None); and per *units bound* (`Backend.units_bound`): on CUDA, ptxas allocates
registers for the kernel's ``__launch_bounds__``, so cubes of up to 256, 512 and 1024 units are
three bounds. Keeping the extents of 1 keeps what they give static code: ``UNIT_POS_Y``
folds to 0, a 1-D cube's lanes are its linear positions. Every CubeDim of at most
`RUNTIME_CUBE_UNITS` units of a pattern then shares its executable: tuning over eight cube sizes
costs one compile, not eight.

A CubeDim shares it only where that loses nothing (docs/design.md, "Shape-generic kernels"):

- the generic trace succeeds (and compiles). Code that needs an extent at compile time (a
  ``SharedMemory`` or ``cb.unroll`` sized by ``CUBE_DIM``), compares it (static code branches on
  a Python bool), or folds it with Python floats, true division or powers (where the static
  fold's weakly typed f64 differs from the run-time i32 op), is refused there (`ShapeSpecific`)
  and specializes;
- it keeps exactly the run-time bounds checks, and the per-cube or per-run versions of them, of
  the static trace for this CubeDim: where the static shape lets the compiler prove more, it
  specializes. A generic kernel with no run-time check left (unchecked, or every access proven)
  is used without tracing the static one: nothing could be proven more; so is one whose code for
  launches the host proves in bounds has none (a launch test, and every report in the checked
  copy of the per-cube test): the static trace could only shorten the checked copy, which runs
  where the host could not prove the launch;
- the executable takes that many units (`Backend.units_limit`: CUDA's register use may allow
  fewer than 1024).

``CUBEPY_SHAPE_GENERIC=0``, or a device made with ``shape_generic=False``, compiles every CubeDim
on its own; a backend may prefer that on some devices (`Backend.prefers_shape_generic`: PoCL,
which compiles per local size anyway), and ``shape_generic=True`` then asks for sharing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import settings
from ..frontend.scope import ShapeSpecific
from ..frontend.spec import KernelSpec
from ..ir.nodes import Kernel, walk
from ..ir.types import RUNTIME_CUBE_UNITS
from ..log import logger


def check_profile(kernel: Kernel) -> tuple:
    """What checked mode costs ``kernel`` at run time: the dimensions proven of each checked
    access (in IR order), its out-of-bounds reports, its versions of code on a per-cube and a
    per-run test, and whether the host decides its launches first."""
    proven: list = []
    reports = per_cube = per_run = 0
    for op in walk(kernel.body):
        if op.opcode in ("load", "store", "atomic") and "array" in op.attrs:
            proven.append(op.attrs.get("proven", ()))
        elif op.opcode == "report_oob":
            reports += 1
        elif op.opcode == "if":
            per_cube += bool(op.attrs.get("cube_checks"))
            per_run += bool(op.attrs.get("run_checks"))
    return tuple(proven), reports, per_cube, per_run, kernel.launch_test is not None


def checked_where_proven(kernel: Kernel) -> bool:
    """Whether a check is left in the code that launches the host proves in bounds run: a
    report outside the checked copies (the else sides of the per-cube test, which such a launch
    never takes), or no launch test at all."""
    if kernel.launch_test is None:
        return True

    def reports(block) -> bool:
        for op in block.ops:
            if op.opcode == "report_oob":
                return True
            inner = op.blocks[:1] if op.opcode == "if" and op.attrs.get("cube_checks") else op.blocks
            if any(reports(b) for b in inner):
                return True
        return False
    return reports(kernel.body)


class _Generic:
    """One shape-generic trace of a kernel for one device, and its executable once compiled."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.profile = check_profile(kernel)
        # compared with the static trace's only where that could find checks the generic one
        # keeps on the launches that matter: none left at all, or none where the host proved the
        # launch (the static trace could only shorten the checked copy of the other launches)
        self.compare = self.profile[1:] != (0, 0, 0, False) and checked_where_proven(kernel)
        self.executable: Any = None
        self.limit = RUNTIME_CUBE_UNITS


class ShapeGenericCache:
    """The shape-generic traces of one kernel function, by device and specialization minus CubeDim."""

    def __init__(self):
        self._entries: dict[tuple, _Generic | None] = {}

    def find(self, spec: KernelSpec, dev, static: Callable[[], Kernel], trace: Callable[[KernelSpec], Kernel],
             compile_: Callable[[Kernel], Any]) -> tuple[Kernel, Any] | None:
        """``(generic kernel, executable)`` to use for ``spec`` instead of its own trace (``static()``),
        or None: ``spec`` specializes on its CubeDim. ``compile_`` builds the executable the first
        time. A generic kernel left with no run-time check at all (unchecked, or every access
        proven), or none on the launches the host proves (`checked_where_proven`), needs no
        comparison, so ``static`` is traced only where checks remain there."""
        units = math.prod(spec.cube_dim)
        if not _enabled(dev) or units > RUNTIME_CUBE_UNITS or units == 1:
            return None
        generic_spec = replace(spec, cube_dim=tuple(None if d > 1 else 1 for d in spec.cube_dim),
                               units_bound=dev.backend.units_bound(units))
        key = (dev.key(), generic_spec.key())
        if key not in self._entries:
            self._entries[key] = self._trace(generic_spec, dev, trace)
        entry = self._entries[key]
        if entry is None or entry.compare and entry.profile != check_profile(static()):
            return None
        if entry.executable is None:
            try:
                entry.executable = compile_(entry.kernel)
            except Exception as e:      # the CubeDim's own compile reports what also fails there
                logger.debug("shape-generic compile failed (%s: %s); compiling per CubeDim", type(e).__name__, e)
                self._entries[key] = None
                return None
            entry.limit = dev.backend.units_limit(entry.executable)
        if units > min(entry.limit, generic_spec.units_bound):
            return None
        return entry.kernel, entry.executable

    @staticmethod
    def _trace(spec: KernelSpec, dev, trace: Callable[[KernelSpec], Kernel]) -> _Generic | None:
        if not dev.backend.runtime_cube_dim:
            return None
        try:
            kernel = trace(spec)
        except ShapeSpecific as e:
            logger.debug("shape-generic trace refused: %s", e)
            return None
        except Exception as e:      # any failure specializes; the static trace gave the user's errors
            logger.debug("shape-generic trace failed (%s: %s); compiling per CubeDim", type(e).__name__, e)
            return None
        if kernel.shared_bytes > dev.properties.shared_memory_per_cube or \
                not dev.backend.accepts_shape_generic(kernel, dev.properties):
            return None
        return _Generic(kernel)


def _enabled(dev) -> bool:
    """CUBEPY_SHAPE_GENERIC, then the device's ``shape_generic`` option, then the backend's choice."""
    if not settings.shape_generic() or not dev.backend.runtime_cube_dim:
        return False
    chosen = dev.options.get("shape_generic")
    return dev.backend.prefers_shape_generic(dev.properties) if chosen is None else bool(chosen)
