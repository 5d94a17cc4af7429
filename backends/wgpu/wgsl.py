"""IR -> WGSL compute shaders: the `render` entry and the module assembly (bindings, the argument
struct, workgroup variables, the entry point). The rest is the C-style renderer's (`cstyle`: the
walk, the order of the parts, the dispatch of every op, the memory ops) with WGSL's `Dialect`
(`dialect.py`: ``let``/``var``, ``loop``, ``select()``, storage types), overridden where WGSL
differs by more than a spelling: the mixins `naming`, `arith`, `memory` and `plane` of this package.

Bindings (group 0), in order: one storage buffer per array parameter (``read`` unless the kernel
writes it or uses it atomically), then the argument struct (extents and scalar parameters), then,
in checked kernels that may report, the error record (`cstyle.rendered` layout, int32 words).
Each SSA value becomes a ``let``, each `Var` a function ``var``; shared memory is a module-scope
``var<workgroup>``, per-unit arrays function ``var``s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cubepy.ir.nodes import Buffer, Const, Kernel, Op, ScalarParam
from cubepy.ir.types import DTYPES_BY_NAME, Type, u32, u64

from ..cstyle.control import ControlFlow
from ..cstyle.emitter import Emitter
from ..cstyle.naming import C_WORDS
from ..cstyle.rendered import ERROR_WORDS, OOBSite
from .arith import WgslArithmetic
from .dialect import RESERVED, STORAGE_NUMPY, WGSL, WGSL_EMULATED
from .memory import WgslMemory
from .naming import WgslNaming
from .plane import WgslPlane
from .quirks import WORST, Quirks


@dataclass(frozen=True)
class BufferBinding:
    """An array parameter's storage buffer: its binding, the NumPy dtype of its elements there."""

    param: int
    binding: int
    numpy: str
    writable: bool


@dataclass(frozen=True)
class ArgField:
    """A field of the argument struct: an extent (``kind`` "shape", axis ``dim``), a scalar, or a
    word the host sets to 0 ("zero") from which the shader makes values its compiler cannot know."""

    kind: str
    param: int
    offset: int
    numpy: str
    dim: int = 0


@dataclass
class WgslRendered:
    name: str
    source: str
    buffers: list[BufferBinding]
    fields: list[ArgField]
    args_size: int                       # bytes of the argument struct (never 0: it holds the opaque word)
    args_binding: int
    error_binding: int | None
    sites: list[OOBSite]
    units: int
    plane_dim: int
    shared_bytes: int = 0
    uses_subgroups: bool = False
    kernel_name: str = ""              # the kernel's own name, for messages (``name`` is the entry point's)

    def __post_init__(self):
        self.kernel_name = self.kernel_name or self.name

# 0 and 1 from a word of the argument struct the host sets to 0 (``{z}``, `ArgField` kind "zero"):
# no compiler can know it (NVIDIA's saw through ``num_workgroups.x >> 31``, which is 0 wherever
# there are fewer than 2**31 cubes); see `naming._lit` and `arith._product`
_OPAQUE = {"zero_f32": "bitcast<f32>({z})", "zero_f16": "f16(bitcast<f32>({z}))",
           "zero_f64": "bitcast<f64>(u64({z}))",
           # not i64({z}): that is a zero-extended u32, and lavapipe orders an extended value against
           # an i64 constant wrongly (`Quirks.ext_compare_wrong`), a constant it folded included
           "zero_i64": "bitcast<i64>((u64({z}) << 32u) | u64({z}))",
           "one_f32": "bitcast<f32>(0x3f800000u | {z})",
           "one_f16": "f16(bitcast<f32>(0x3f800000u | {z}))",
           "one_f64": "bitcast<f64>(0x3ff0000000000000lu | u64({z}))",
           "zero_u32": "{z}", "zero_u64": "u64({z})",
           # a second zero, for divisors (`arith._quotient`): a value hidden with the first one, such as
           # an integer converted to float, hidden again with it is itself (x | z | z == x | z)
           "divisor_zero_u32": "{d}", "divisor_zero_u64": "u64({d})"}


def render(kernel: Kernel, name: str | None = None, atomics64: bool = True, emulate: bool = False,
           quirks: Quirks = WORST) -> WgslRendered:
    """Render ``kernel`` (bounds checks already lowered) as a WGSL compute shader; ``atomics64``:
    the device has atomics on 64-bit integers (WebGPU's shader-int64-atomic-all-ops); ``emulate``:
    plane ops go through workgroup memory (barriers hoisted out of conditionals already);
    ``quirks``: what the adapter's compiler does to arithmetic (`quirks.probe_quirks`; the default
    works around all of it)."""
    return WgslRenderer(kernel, name, atomics64, emulate, quirks).run()


class WgslRenderer(WgslNaming, WgslArithmetic, WgslMemory, WgslPlane, ControlFlow, Emitter):
    """The module assembly; the mixins render the ops."""

    def __init__(self, kernel: Kernel, name: str | None = None, atomics64: bool = True, emulate: bool = False,
                 quirks: Quirks = WORST):
        super().__init__(kernel, WGSL_EMULATED if emulate and kernel.plane_dim > 1 else WGSL)
        self.atomics64 = atomics64
        self.quirks = quirks
        self.used: set[str] = set(C_WORDS) | RESERVED
        self.entry = self._unique(name or kernel.name)
        self.atomic_buffers: set[int] = set()
        self.bound_consts: dict[int, str] = {}       # Const id -> the let that holds it
        self.mask_dtype = u64 if self.P > 32 else u32
        self.mask_t = self._c(self.mask_dtype)
        self.full_mask = self._lit((1 << self.P) - 1, self.mask_dtype)

    # --- Lines are arrays, made whole -----------------------------------------------------

    def _line_value(self, t: Type, element) -> str:
        return f"{self._vt(t)}({', '.join(element(i) for i in range(t.width))})"

    def _define_line(self, name: str, t: Type, element) -> None:
        self._line(f"let {name} = {self._line_value(t, element)};")

    def _store_line(self, ref: str, t: Type, element) -> None:
        self._line(f"{ref} = {self._line_value(t, element)};")

    # --- ops of constants only --------------------------------------------------------------

    def _op(self, op: Op) -> None:
        """An op of constants only (a math function the IR does not fold, ``sqrt(-7.5)``) takes its
        first operand from a ``let``: naga evaluates constant expressions while parsing, and some it
        cannot (f64 functions) or may not (integer overflow) are errors there."""
        if op.result is not None and op.args and not op.blocks and all(isinstance(a, Const) for a in op.args) \
                and op.args[0].type.width == 1:
            first = op.args[0]
            held = self._unique("cb_k")
            self._let(held, self._vt(first.type), self._lit(first.value, first.type.dtype))
            self.bound_consts[first.id] = held
            super()._op(op)
            del self.bound_consts[first.id]
            return
        super()._op(op)

    # --- the module around the body (the order is `Emitter.run`'s) ----------------------------

    def _interface(self, ops: list[Op]) -> None:
        """The bindings: a storage buffer per array parameter (``read`` unless written or atomic),
        the argument struct (extents and scalars), the error record where the kernel reports."""
        self.atomic_buffers = {op.args[0].id for op in ops if op.opcode == "atomic" and op.args[0].kind != "local"}
        for op in ops:
            if op.opcode == "atomic" and op.args[0].kind != "local":
                self._atomic_word(op.args[0])
        self.decls, self.bindings, self.fields, self.members = [], [], [], []
        offset = 0

        def add_field(kind: str, param: int, name: str, wgsl_type: str, numpy: str, dim: int = 0) -> None:
            nonlocal offset
            size = 8 if wgsl_type in ("i64", "u64", "f64") else 4
            offset = -(-offset // size) * size
            self.fields.append(ArgField(kind, param, offset, numpy, dim))
            self.members.append(f"  {name}: {wgsl_type},")
            offset += size

        for p in self.k.params:
            if isinstance(p, Buffer):
                name = self._unique(p.name)
                self.names[p.id] = name
                writable = p.mutable or p.id in self.atomic_buffers
                element = self._atomic_word(p) if p.id in self.atomic_buffers else self._vt(self._storage(p.type))
                binding = len(self.bindings)
                access = "read_write" if writable else "read"
                self.decls.append(f"@group(0) @binding({binding}) var<storage, {access}> {name}: array<{element}>;")
                numpy = STORAGE_NUMPY.get(p.type.dtype.name, p.type.dtype.numpy_name)
                self.bindings.append(BufferBinding(p.param_index, binding, numpy, writable))
                for dim in range(p.ndim):
                    extent = self._unique(f"{name}_shape{dim}")
                    self.extents[(p.id, dim)] = f"cb_args.{extent}"
                    add_field("shape", p.param_index, extent, "i32", "int32", dim)
            else:
                assert isinstance(p, ScalarParam)
                name = self._unique(p.name)
                self.names[("param", p.param_index)] = f"cb_args.{name}"
                held = DTYPES_BY_NAME[self.d.param_storage.get(p.type.dtype.name, p.type.dtype.name)]
                add_field("scalar", p.param_index, name, self._c(held), STORAGE_NUMPY.get(held.name, held.numpy_name))
        opaque = self._unique("cb_opaque")
        self.opaque_field = f"cb_args.{opaque}"
        add_field("zero", -1, opaque, "u32", "uint32")      # so the argument struct always exists
        divisor = self._unique("cb_opaque_divisor")      # a second zero, for divisors (`_OPAQUE`)
        self.divisor_opaque_field = f"cb_args.{divisor}"
        add_field("zero", -1, divisor, "u32", "uint32")
        self.args_binding = len(self.bindings)
        self.args_size = -(-offset // 8) * 8
        self.decls.append(f"@group(0) @binding({self.args_binding}) var<storage, read> cb_args: CbArgs;")
        reports = any(op.opcode == "report_oob" for op in ops)
        self.error_binding = self.args_binding + 1 if reports else None
        if reports:
            self.decls.append(f"@group(0) @binding({self.error_binding}) var<storage, read_write> cb_err: "
                              f"array<atomic<i32>, {ERROR_WORDS}>;")

    def _declare_arrays(self) -> None:
        """Shared memory as module-scope workgroup variables, per-unit arrays as function variables."""
        self.shared_bytes = 0
        for b in self.k.buffers:
            name = self._unique(b.name)
            self.names[b.id] = name
            size = math.prod(b.shape)
            element = self._atomic_word(b) if b.id in self.atomic_buffers else self._vt(self._storage(b.type))
            if b.kind == "shared":
                self.decls.append(f"var<workgroup> {name}: array<{element}, {size}>;")
                self.shared_bytes += size * 4 * b.type.width * max(1, b.type.dtype.itemsize // 4)
            else:
                self._line(f"var {name}: array<{element}, {size}>;")

    def _declare_unit_state(self) -> None:
        """With plane ops: the unit's linear index and lane, and its plane's mask."""
        if not self.plane_state:
            return
        P, M = self.P, self.mask_t
        self._line("let cb_lin = i32(cb_li);")
        self._line(f"let cb_lane = cb_lin & {P - 1}i;")
        if self.units % P == 0:
            self._line(f"let cb_pmask: {M} = {self.full_mask};")
        else:
            one = self._lit(1, self.mask_dtype)
            self._line(f"let cb_plane_n = {self.units}i - (cb_lin - cb_lane);")
            self._line(f"let cb_pmask: {M} = select(({one} << u32(cb_plane_n)) - {one}, {self.full_mask}, "
                       f"cb_plane_n >= {P}i);")

    def _opaque_value(self, need: str) -> str:
        return _OPAQUE[need].format(z=self.opaque_field, d=self.divisor_opaque_field)

    def _assemble(self) -> WgslRendered:
        """The module: the header, the argument struct, the module-scope variables, the helpers, then
        the entry point, which keeps its built-in positions in private variables for the helpers."""
        k = self.k
        if "scratch" in self.needs:
            self.decls.append(f"var<workgroup> cb_scratch: array<vec2<u32>, {self.units}>;")
            self.shared_bytes += 8 * self.units
        head = [self._header()]
        if "f16" in self.needs:
            head.append("enable f16;")
        parts = ["\n".join(head)]
        parts.append("struct CbArgs {\n" + "\n".join(self.members) + "\n}")
        opaque = [n for n in sorted(self.needs) if n in _OPAQUE]
        decls = [*self.decls, *(f"var<private> cb_{n}: vec3<u32>;" for n in ("unit", "cube", "count")),
                 *(f"var<private> cb_{n}: {n.rpartition('_')[2]};" for n in opaque)]
        parts.append("\n".join(decls))
        parts.extend(self.helpers.values())
        dims = ", ".join(str(x) for x in k.cube_dim)
        entry = (f"@compute @workgroup_size({dims})\nfn {self.entry}(@builtin(local_invocation_id) cb_l: vec3<u32>, "
                 "@builtin(workgroup_id) cb_w: vec3<u32>,\n    @builtin(num_workgroups) cb_n: vec3<u32>, "
                 "@builtin(local_invocation_index) cb_li: u32) {\n"
                 "  cb_unit = cb_l;\n  cb_cube = cb_w;\n  cb_count = cb_n;\n"
                 + "".join(f"  cb_{n} = {self._opaque_value(n)};\n" for n in opaque)
                 + "\n".join(self.body) + "\n}")
        parts.append(entry)
        source = "\n\n".join(parts) + "\n"
        subgroups = self.plane_state and self.P > 1 and self.d.plane_mode == "shuffle"
        return WgslRendered(self.entry, source, self.bindings, self.fields, self.args_size, self.args_binding,
                            self.error_binding, self.sites, self.units, self.P, self.shared_bytes, subgroups,
                            self.k.name)


__all__ = ["ArgField", "BufferBinding", "WgslRendered", "render"]
