"""What the C-style renderer (`renderer._Renderer`) and the WGSL one (`backends/wgpu/wgsl.py`) share
around the ops: the state of one rendering, the order of its parts (`Emitter.run`), and the writing
of statements in the dialect's syntax (lines of the body, helper functions, the definitions of
values and the declarations of variables)."""

from __future__ import annotations

import math

from cubepy.ir.nodes import PLANE_OPS, Kernel, Op, walk
from cubepy.ir.printer import format_dims
from cubepy.ir.types import Type

from .dialect import Dialect
from .plane import uses_barrier
from .rendered import OOBSite


class Emitter:
    """What a renderer keeps while it writes. Each renderer adds its own state (the C one its structs,
    the WGSL one its bindings) and writes the parts of `run` in its language: ``_interface``,
    ``_declare_arrays``, ``_declare_unit_state`` and ``_assemble``; the mixins give ``_name``,
    ``_unique``, ``_vt``, ``_el`` and ``_block``."""

    def __init__(self, kernel: Kernel, dialect: Dialect):
        self.k, self.d = kernel, dialect
        self.P = kernel.plane_dim
        # per axis the extent, a number or (read at run time: shape-generic) an expression, and
        # the units per cube likewise
        self.dims = [str(d) if d is not None else dialect.builtins.get(f"cube_dim_{a}", "")
                     for a, d in zip("xyz", kernel.cube_dim)]
        self.units = "(" + " * ".join(d for d in self.dims if d != "1") + ")" if kernel.shape_generic else \
            math.prod(kernel.cube_dim)
        self.names: dict = {}                   # IR ids (and ("param", index)) -> names in the source
        self.values_named = 0       # values are numbered per kernel, so equal kernels render equal text
        self.extents: dict[tuple[int, int], str] = {}    # (array id, axis) -> the extent's expression
        self.helpers: dict[str, str] = {}
        self.body: list[str] = []
        self.depth = 1
        self.sites: list[OOBSite] = []
        self.needs: set[str] = set()
        self.opaque_loops = dialect.opaque_loops and any(uses_barrier(op, dialect) for op in walk(kernel.body))
        self.unit_levels = None            # the uniformity of values, once a barrier loop needs it
        self.negations: set[int] = set()   # ids of signed integer negations (`Dialect.min_max_of_negation`)
        self.count_axes: tuple[str, ...] = ()   # cube positions and counts read through macros (`Rendered`)

    def run(self):
        """Render the kernel: its interface (`_interface`) and declarations, its body, then the
        source around them (`_assemble`): each renderer writes those parts in its own language."""
        ops = list(walk(self.k.body))
        self.plane_state = any(op.opcode in PLANE_OPS or op.opcode == "builtin" and op.attrs["name"] == "unit_pos_plane"
                               for op in ops)
        self._interface(ops)
        self._declare_arrays()
        self._declare_vars()
        self._declare_unit_state()
        self._block(self.k.body)
        return self._assemble()

    def _header(self) -> str:
        k, dims = self.k, format_dims(self.k.cube_dim)
        return f"// cubepy kernel '{k.name}': cube_dim={dims} plane_dim={self.P} dialect={self.d.name}"

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

    def _declare_vars(self, qualifier: str = "") -> None:
        for v in self.k.vars:
            name = self._unique(v.name)
            self.names[v.id] = name
            self._line(self.d.var.format(type=qualifier + self._vt(v.type), name=name))


__all__ = ["Emitter"]
