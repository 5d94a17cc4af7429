"""IR -> readable C-family kernel source, one renderer for every `Dialect`: the `render` entry and the
kernel assembly (signature, declarations, preamble); the ops are rendered by the mixins of `_Renderer`:
`naming` (identifiers, C types, literals), `arith`, `memory` (loads, stores, atomics, ``report_oob``),
`plane` and `control` (dispatch and control flow). What it returns is in `rendered`.

Each SSA value becomes a typed local (``const float v12 = ...;``), each `Var` a C local declared at
the top, structured control flow maps to ``if``/``for``/``for (;;)`` with ``break``/``continue``/
``return``. Lines are vector types (native ones where the dialect has them, aligned structs
otherwise) loaded and stored whole; arithmetic on them is written element by element. Semantics
the C operators lack (Python's ``//`` and ``%``, wrapping shifts, plane ops, atomics the target
lacks) are small helper functions emitted into the preamble, once each.

Global arrays arrive as pointers followed by their extents (one ``int`` per dimension); a checked
kernel gets one more argument, the device-side error record written by ``report_oob`` (int32
words; its layout is in `rendered`).
"""

from __future__ import annotations

import math

from cubepy.ir.nodes import PLANE_OPS, Buffer, Kernel, Op, ScalarParam, walk
from cubepy.ir.types import DTYPES_BY_NAME, u64

from .arith import Arithmetic
from .control import ControlFlow
from .dialect import Dialect
from .memory import Memory
from .naming import C_WORDS, Naming
from .plane import PlaneOps, uses_barrier
from .rendered import ERROR_WORDS, MAX_DIMS, ArgSlot, OOBSite, Rendered


def render(kernel: Kernel, dialect: Dialect, name: str | None = None) -> Rendered:
    """Render ``kernel`` (bounds checks already lowered) as ``dialect`` source."""
    return _Renderer(kernel, dialect, name).run()


class _Renderer(Naming, Arithmetic, Memory, PlaneOps, ControlFlow):
    """The rendering state and kernel assembly; the mixins render the ops (see the module docstring)."""

    def __init__(self, kernel: Kernel, dialect: Dialect, name: str | None):
        self.k, self.d = kernel, dialect
        self.P = kernel.plane_dim
        self.units = math.prod(kernel.cube_dim)
        self.entry = name or self._ident(kernel.name)
        self.used: set[str] = set(C_WORDS) | {self.entry}
        self.names: dict[int, str] = {}
        self.values_named = 0       # values are numbered per kernel, so equal kernels render equal text
        self.helpers: dict[str, str] = {}
        self.structs: dict[str, str] = {}
        self.body: list[str] = []
        self.depth = 1
        self.sites: list[OOBSite] = []
        self.needs: set[str] = set()
        self.mask_t = self._c(u64 if self.P > 32 else DTYPES_BY_NAME["u32"])
        self.full_mask = "0xffffffffffffffffull" if self.P == 64 else f"0x{(1 << self.P) - 1:x}u"
        if self.P > 32:
            self.full_mask = self._lit((1 << 64) - 1, u64)

    # --- emission -----------------------------------------------------------------------

    def _line(self, s: str) -> None:
        self.body.append("  " * self.depth + s)

    def _helper(self, name: str, code: str) -> str:
        if name not in self.helpers:
            self.helpers[name] = code
        return name

    def _define(self, op: Op, element) -> None:
        """Define op.result from ``element(i)``: the scalar expression of element ``i`` (None: scalar)."""
        t = op.result.type
        name = self._name(op.result)
        vt = self._vt(t)
        if t.width == 1:
            self._line(f"const {vt} {name} = {element(None)};")
            return
        self._line(f"{vt} {name};")
        for i in range(t.width):
            self._line(f"{self._el(name, t, i)} = {element(i)};")

    # --- kernel -------------------------------------------------------------------------

    def run(self) -> Rendered:
        k, d = self.k, self.d
        ops = list(walk(k.body))
        if any(op.opcode == "report_oob" for op in ops):
            self.needs.add("error")
        self.opaque_loops = d.opaque_loops and any(uses_barrier(op, d) for op in ops)
        self.unit_levels = None            # the uniformity of values, once a barrier loop needs it
        plane_ops = any(op.opcode in PLANE_OPS for op in ops) or any(
            op.opcode == "builtin" and op.attrs["name"] == "unit_pos_plane" for op in ops)

        params, slots, alignments = [], [], {}
        for p in k.params:
            if isinstance(p, Buffer):
                name = self._unique(p.name)
                self.names[p.id] = name
                st = self._storage(p.type)
                const = "" if p.mutable else "const "
                params.append(f"{d.global_q}{const}{self._vt(st)}* {d.restrict} {name}")
                slots.append(ArgSlot("buffer", p.param_index))
                size = st.dtype.itemsize * st.width
                alignments[p.param_index] = min(16, size & -size) if st.width > 1 else st.dtype.itemsize
                for dim in range(p.ndim):
                    params.append(f"int {name}_shape{dim}")
                    slots.append(ArgSlot("shape", p.param_index, dim))
            else:
                assert isinstance(p, ScalarParam)
                name = self._unique(p.name)
                self.names[("param", p.param_index)] = name
                pd = DTYPES_BY_NAME.get(d.param_storage.get(p.type.dtype.name, p.type.dtype.name))
                params.append(f"{self._c(pd)} {name}")
                slots.append(ArgSlot("scalar", p.param_index, numpy=pd.numpy_name))
        if "error" in self.needs:
            params.append(f"{d.global_q}int* {d.restrict} cb_err")
            slots.append(ArgSlot("error"))

        # declarations: shared memory, local arrays, variables, plane state
        static_shared = sum(b.type.dtype.itemsize * b.type.width * math.prod(b.shape)
                            for b in k.buffers if b.kind == "shared")
        dynamic = d.shared_static_limit is not None and static_shared > d.shared_static_limit
        offset = 0
        if dynamic:
            self._line(d.dynamic_shared)
        for b in k.buffers:
            name = self._unique(b.name)
            self.names[b.id] = name
            st = self._storage(b.type)
            size = math.prod(b.shape)
            if b.kind == "shared" and dynamic:
                self._line(f"{self._vt(st)}* {name} = ({self._vt(st)}*)(cb_dynamic_smem + {offset});")
                offset += -(-st.dtype.itemsize * st.width * size // 16) * 16
            elif b.kind == "shared":
                self._line(f"{d.shared_q}{self._vt(st)} {name}[{size}];")
            else:
                self._line(f"{self._vt(st)} {name}[{size}];")
        # PoCL, in kernels with a loop that holds a barrier: variables are volatile (see
        # ControlFlow._hide_unit_values)
        var_q = "volatile " if self.opaque_loops and _barrier_loop(ops, d) else ""
        for v in k.vars:
            name = self._unique(v.name)
            self.names[v.id] = name
            self._line(f"{var_q}{self._vt(v.type)} {name};")
        # PoCL, in kernels with barriers: the unit's position is read through volatiles, so that
        # LLVM cannot hoist what a barrier loop computes from it out of the loop (see
        # ControlFlow._hide_unit_values)
        unit_q = "volatile " if self.opaque_loops else "const "
        if self.opaque_loops:
            for axis in "xyz":
                self._line(f"volatile int cb_unit_pos_{axis} = {d.builtins[f'unit_pos_{axis}']};")
        if plane_ops:
            dx, dy, _ = k.cube_dim
            b = d.builtins
            self._line(f"{unit_q}int cb_lin = {b['unit_pos_x']} + {dx} * ({b['unit_pos_y']} + {dy} * "
                       f"{b['unit_pos_z']});")
            self._line(f"{unit_q}int cb_lane = cb_lin & {self.P - 1};")
            if d.plane_mode == "shuffle":
                if self.units % self.P == 0:
                    self._line(f"const {self.mask_t} cb_pmask = {self.full_mask};")
                else:
                    self._line(f"const int cb_plane_n = {self.units} - (cb_lin - cb_lane);")
                    self._line(f"const {self.mask_t} cb_pmask = cb_plane_n >= {self.P} ? {self.full_mask} : "
                               f"((({self.mask_t})1 << cb_plane_n) - 1);")
            else:
                self._line(f"{d.shared_q}{self._c(u64)} cb_plane_scratch[{self.units}];")
        self._block(k.body)

        dims = ", ".join(str(x) for x in k.cube_dim)
        head = d.kernel_prefix.format(units=self.units, dims=dims)
        sig = f"{head} {self.entry}(\n    " + ",\n    ".join(params) + ")"
        parts = [f"// cubepy kernel '{k.name}': cube_dim={k.cube_dim} plane_dim={self.P} "
                 f"dialect={d.name}"]
        strict = (d.strict_fp_pragma,) if d.strict_fp_pragma and not k.fastmath else ()
        parts.append("\n".join([*(d.type_pragmas[n] for n in sorted(self.needs) if n in d.type_pragmas),
                                *d.extensions, *strict, d.preamble.rstrip()]))
        if self.structs:
            parts.append("\n".join(self.structs.values()))
        parts.extend(self.helpers.values())
        parts.append(sig + " {\n" + "\n".join(self.body) + "\n}")
        source = "\n\n".join(p for p in parts if p) + "\n"
        return Rendered(self.entry, source, slots, self.sites, self.units, self.P,
                        offset if dynamic else 0, alignments, "cl_khr_subgroups" in self.needs)


def _barrier_loop(ops: list[Op], dialect: Dialect) -> bool:
    return any(op.opcode in ("for", "loop") and any(uses_barrier(o, dialect) for o in walk(op.blocks[0]))
               for op in ops)


__all__ = ["ERROR_WORDS", "MAX_DIMS", "ArgSlot", "OOBSite", "Rendered", "render"]
