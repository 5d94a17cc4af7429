"""IR -> readable C-family kernel source, one renderer for every `Dialect`: the `render` entry and the
kernel assembly (signature, declarations, preamble); the ops are rendered by the mixins of `_Renderer`:
`naming` (identifiers, C types, literals), `arith`, `memory` (loads, stores, atomics, ``report_oob``),
`plane` and `control` (dispatch and control flow), over `emitter` (the rendering state and the
writing of statements, which the WGSL renderer shares). What it returns is in `rendered`.

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

from cubepy.ir.nodes import Buffer, Kernel, Op, ScalarParam, walk
from cubepy.ir.types import DTYPES_BY_NAME, RUNTIME_CUBE_UNITS, u64

from .arith import Arithmetic
from .control import ControlFlow
from .dialect import Dialect
from .emitter import Emitter
from .memory import Memory
from .naming import C_WORDS, Naming
from .plane import PlaneOps, uses_barrier
from .rendered import ERROR_WORDS, MAX_DIMS, ArgSlot, OOBSite, Rendered


def render(kernel: Kernel, dialect: Dialect, name: str | None = None) -> Rendered:
    """Render ``kernel`` (bounds checks already lowered) as ``dialect`` source."""
    return _Renderer(kernel, dialect, name).run()


class _Renderer(Naming, Arithmetic, Memory, PlaneOps, ControlFlow, Emitter):
    """The kernel assembly; the mixins render the ops (see the module docstring)."""

    def __init__(self, kernel: Kernel, dialect: Dialect, name: str | None):
        super().__init__(kernel, dialect)
        self.entry = name or self._ident(kernel.name)
        if self.entry in C_WORDS or self.entry.startswith("cb_"):     # a kernel named `double` or `int`
            self.entry = "cb_kernel_" + self.entry
        self.used: set[str] = set(C_WORDS) | {self.entry}
        self.structs: dict[str, str] = {}
        self.mask_t = self._c(u64 if self.P > 32 else DTYPES_BY_NAME["u32"])
        self.full_mask = f"0x{(1 << self.P) - 1:x}u" if self.P <= 32 else self._lit((1 << 64) - 1, u64)

    # --- the kernel around its body (the order is `Emitter.run`'s) ----------------------------

    def _interface(self, ops: list[Op]) -> None:
        """The parameters: an array as a pointer and one ``int`` extent per axis, a scalar as itself
        (or its `Dialect.param_storage` type), then the answer to the launch test where the kernel
        has one, then the error record where the kernel reports."""
        d = self.d
        if any(op.opcode == "report_oob" for op in ops):
            self.needs.add("error")
        self.params, self.slots, self.alignments = [], [], {}
        self.count_axes, self.first_one_cube = _count_axes(ops) if d.one_cube_builds else ((), ())
        for axis in self.count_axes:
            big = axis.upper()
            self.structs[f"one_cube_{axis}"] = (
                f"#if defined(CB_ONE_CUBE_{big}) && CB_ONE_CUBE_{big}\n#define CB_CUBE_POS_{big} 0\n"
                f"#define CB_CUBE_COUNT_{big} 1\n#else\n#define CB_CUBE_POS_{big} {d.builtins[f'cube_pos_{axis}']}\n"
                f"#define CB_CUBE_COUNT_{big} {d.builtins[f'cube_count_{axis}']}\n#endif")
        for p in self.k.params:
            if isinstance(p, Buffer):
                name = self._unique(p.name)
                self.names[p.id] = name
                st = self._storage(p.type)
                const = "" if p.mutable else "const "
                if p.inline:
                    self._inline_param(p, name, st)
                else:
                    self.params.append(f"{d.global_q}{const}{self._vt(st)}* {d.restrict} {name}")
                    self.slots.append(ArgSlot("buffer", p.param_index))
                size = st.dtype.itemsize * st.width
                self.alignments[p.param_index] = min(16, size & -size) if st.width > 1 else st.dtype.itemsize
                for dim in range(p.ndim):
                    self.extents[(p.id, dim)] = f"{name}_shape{dim}"
                    self.params.append(f"int {name}_shape{dim}")
                    self.slots.append(ArgSlot("shape", p.param_index, dim))
            else:
                assert isinstance(p, ScalarParam)
                name = self._unique(p.name)
                self.names[("param", p.param_index)] = name
                pd = DTYPES_BY_NAME.get(d.param_storage.get(p.type.dtype.name, p.type.dtype.name))
                self.params.append(f"{self._c(pd)} {name}")
                self.slots.append(ArgSlot("scalar", p.param_index, numpy=pd.numpy_name))
        if self.k.launch_test is not None:      # the host's answer to the kernel's launch test
            self.params.append("int cb_launch_ok")
            self.slots.append(ArgSlot("launch_ok"))
            # a backend may build the source once per answer (-DCB_LAUNCH_OK=1 and =0), each build
            # without the other's code, and launch the one the host's answer names
            self.structs["launch_ok"] = ("#ifndef CB_LAUNCH_OK\n#define CB_LAUNCH_OK (cb_launch_ok != 0)\n"
                                         "#endif")
        if "error" in self.needs:
            self.params.append(f"{d.global_q}int* {d.restrict} cb_err")
            self.slots.append(ArgSlot("error"))

    def _inline_param(self, p: Buffer, name: str, st) -> None:
        """A read-only array passed by value: a struct parameter of ``p.inline`` elements, read
        through a pointer of the array's name (loads render as for any array)."""
        if not self.d.inline_param:
            raise ValueError(f"kernel {self.k.name}: dialect {self.d.name} passes no array by value, "
                             f"but '{p.name}' is")
        vt = self._vt(st)
        struct = f"cb_by_value_{st.dtype.name}_{p.inline}"
        self.structs.setdefault(struct, f"struct {struct} {{ {vt} v[{p.inline}]; }};")
        holder = self._unique(f"{p.name}_by_value")
        self.params.append(self.d.inline_param.format(struct=struct, name=holder))
        self.slots.append(ArgSlot("inline", p.param_index, nbytes=p.inline * st.dtype.itemsize))
        self._line(f"const {vt}* {self.d.restrict} {name} = {holder}.v;")

    def _declare_arrays(self) -> None:
        """Shared memory (in the dynamic shared memory past the dialect's static limit) and per-unit arrays."""
        d = self.d
        static_shared = sum(b.type.dtype.itemsize * b.type.width * math.prod(b.shape)
                            for b in self.k.buffers if b.kind == "shared")
        dynamic = d.shared_static_limit is not None and static_shared > d.shared_static_limit
        offset = 0
        if dynamic:
            self._line(d.dynamic_shared)
        for b in self.k.buffers:
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
        self.dynamic_bytes = offset if dynamic else 0

    def _declare_vars(self) -> None:
        # PoCL, in kernels with a loop that holds a barrier: variables are volatile (see
        # ControlFlow._hide_unit_values)
        super()._declare_vars("volatile " if self.opaque_loops and _barrier_loop(walk(self.k.body), self.d) else "")

    def _declare_unit_state(self) -> None:
        """PoCL, in kernels with barriers: the unit's position, read through volatiles, so that LLVM
        cannot hoist what a barrier loop computes from it out of the loop (see
        ControlFlow._hide_unit_values). With plane ops: the unit's linear index and lane, and its
        plane's mask (shuffles) or scratch memory (emulation)."""
        d, P, M = self.d, self.P, self.mask_t
        if self.opaque_loops:
            for axis in "xyz":
                self._line(f"volatile int cb_unit_pos_{axis} = {d.builtins[f'unit_pos_{axis}']};")
        if not self.plane_state:
            return
        unit_q = "volatile " if self.opaque_loops else "const "
        b = d.builtins
        dx, dy, _ = self.dims
        self._line(f"{unit_q}int cb_lin = {b['unit_pos_x']} + {dx} * ({b['unit_pos_y']} + {dy} * {b['unit_pos_z']});")
        self._line(f"{unit_q}int cb_lane = cb_lin & {P - 1};")
        if d.plane_mode != "shuffle":
            most = (self.k.units_bound or RUNTIME_CUBE_UNITS) if self.k.shape_generic else self.units
            self._line(f"{d.shared_q}{self._c(u64)} cb_plane_scratch[{most}];")
        elif isinstance(self.units, int) and self.units % P == 0:
            self._line(f"const {M} cb_pmask = {self.full_mask};")
        else:
            self._line(f"const int cb_plane_n = {self.units} - (cb_lin - cb_lane);")
            self._line(f"const {M} cb_pmask = cb_plane_n >= {P} ? {self.full_mask} : ((({M})1 << cb_plane_n) - 1);")

    def _assemble(self) -> Rendered:
        """The source: the header, pragmas and preamble, struct types, helpers, then the kernel."""
        k, d = self.k, self.d
        if k.shape_generic:
            shape = d.generic_shape_hint.format(units=k.units_bound or RUNTIME_CUBE_UNITS)
        else:
            shape = d.shape_hint.format(units=self.units, dims=", ".join(str(x) for x in k.cube_dim))
        head = d.kernel_prefix.format(shape=shape)
        sig = f"{head} {self.entry}(\n    " + ",\n    ".join(self.params) + ")"
        strict = (d.strict_fp_pragma,) if d.strict_fp_pragma and not k.fastmath else ()
        parts = [self._header(), "\n".join([*(d.type_pragmas[n] for n in sorted(self.needs) if n in d.type_pragmas),
                                           *d.extensions, *strict, d.preamble.rstrip()])]
        if self.structs:
            parts.append("\n".join(self.structs.values()))
        parts.extend(self.helpers.values())
        parts.append(sig + " {\n" + "\n".join(self.body) + "\n}")
        source = "\n\n".join(p for p in parts if p) + "\n"
        return Rendered(self.entry, source, self.slots, self.sites, self.units, self.P, self.dynamic_bytes,
                        self.alignments, "cl_khr_subgroups" in self.needs, k.name, self.count_axes,
                        self.first_one_cube)


def _count_axes(ops: list[Op]) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """The axes (y, z) whose cube position or count ``ops`` read, and per axis whether they read
    its position only for linear positions (``implicit``: `cubepy.frontend.intrinsics.builtin_value`):
    a kernel that names CUBE_POS_Y is launched with more than one cube along y, one that reads
    ABSOLUTE_POS most often with one."""
    read, named = set(), set()
    for op in ops:
        name = op.attrs.get("name", "") if op.opcode == "builtin" else ""
        if name[:-2] in ("cube_pos", "cube_count") and name[-1] in "yz":
            read.add(name[-1])
            if name.startswith("cube_pos") and not op.attrs.get("implicit"):
                named.add(name[-1])
    axes = tuple(a for a in "yz" if a in read)
    return axes, tuple(a not in named for a in axes)


def _barrier_loop(ops, dialect: Dialect) -> bool:
    return any(op.opcode in ("for", "loop") and any(uses_barrier(o, dialect) for o in walk(op.blocks[0]))
               for op in ops)


__all__ = ["ERROR_WORDS", "MAX_DIMS", "ArgSlot", "OOBSite", "Rendered", "render"]
