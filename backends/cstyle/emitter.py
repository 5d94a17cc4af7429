"""The state of one rendering and the writing of statements in the dialect's syntax, shared by the
C-style renderer (`renderer._Renderer`) and the WGSL one (`backends/wgpu/wgsl.py`): lines of the
kernel's body, helper functions, the definitions of values and the declarations of variables."""

from __future__ import annotations

import math

from cubepy.ir.nodes import Kernel, Op, walk
from cubepy.ir.types import Type

from .dialect import Dialect
from .plane import uses_barrier
from .rendered import OOBSite


class Emitter:
    """What a renderer keeps while it writes; each renderer adds its own (the C one its structs, the
    WGSL one its bindings) and the mixins provide ``_name``, ``_unique``, ``_vt`` and ``_el``."""

    def __init__(self, kernel: Kernel, dialect: Dialect):
        self.k, self.d = kernel, dialect
        self.P = kernel.plane_dim
        self.units = math.prod(kernel.cube_dim)
        self.names: dict = {}                   # IR ids (and ("param", index)) -> names in the source
        self.values_named = 0       # values are numbered per kernel, so equal kernels render equal text
        self.extents: dict[tuple[int, int], str] = {}    # (array id, axis) -> the extent's expression
        self.helpers: dict[str, str] = {}
        self.body: list[str] = []
        self.depth = 1
        self.sites: list[OOBSite] = []
        self.needs: set[str] = set()
        self.opaque_loops = dialect.opaque_loops and any(uses_barrier(op, dialect) for op in walk(kernel.body))

    def _line(self, s: str) -> None:
        self.body.append("  " * self.depth + s)

    def _helper(self, name: str, code: str) -> str:
        self.helpers.setdefault(name, code)
        return name

    def _let(self, name: str, type_: str, value: str) -> None:
        self._line(self.d.let.format(name=name, type=type_, value=value))

    def _define(self, op: Op, element) -> None:
        """Define op.result from ``element(i)``: the scalar expression of element ``i`` (None: scalar)."""
        t = op.result.type
        name = self._name(op.result)
        if t.width == 1:
            self._let(name, self._vt(t), element(None))
        else:
            self._define_line(name, t, element)

    def _define_line(self, name: str, t: Type, element) -> None:
        """A Line variable ``name`` of type ``t``, set element by element."""
        self._line(self.d.var.format(type=self._vt(t), name=name))
        for i in range(t.width):
            self._line(f"{self._el(name, t, i)} = {element(i)};")

    def _declare_vars(self) -> None:
        for v in self.k.vars:
            name = self._unique(v.name)
            self.names[v.id] = name
            self._line(self.d.var.format(type=self._vt(v.type), name=name))


__all__ = ["Emitter"]
