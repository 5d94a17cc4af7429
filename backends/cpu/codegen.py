"""IR -> LLVM IR text for the CPU backend (work-item loops; see DESIGN.md).

The kernel becomes ``<name>_range(buffers..., shapes..., scalars..., ws, err, first, last, counts)``
which runs cubes ``first..last-1`` one after another, and ``<name>_entry(args, first, last, ws)``
which unpacks a block of 8-byte argument slots and calls it.

A cube's body is split at barriers (``sync_cube`` and plane ops) into regions; each region is a
loop over the cube's units. Values and variables that live across regions are kept in per-unit
arrays ("slots") in the workspace ``ws``; everything else is an LLVM register. Control flow that
contains a barrier runs at cube level: with a scalar branch when its condition is cube-uniform,
otherwise masked through a per-unit status word (0 = running).
"""

from __future__ import annotations

import math

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import (
    ATOMIC_OPS,
    OPCODES,
    Buffer,
    Kernel,
    ScalarParam,
    walk,
)
from cubepy.ir.types import Type, i32, u64

from .analysis import AnalysisMixin
from .common import ERR_WORDS, MAX_OOB_DIMS, CpuCompileError, Layout, _sanitize
from .cube import CubeMixin
from .expr import ExprMixin
from .gang import GangMixin
from .gang_access import GangAccessMixin
from .gang_choice import INDIRECT_ACCESSES, GangChoiceMixin, indirect_accesses
from .llvmtext import Fn, ltype, scalar_type
from .memory import MemoryMixin
from .oob import OobMixin
from .plane import PlaneMixin
from .region import RegionMixin
from .unit import UnitMixin

# a gang (gang.py) is this many SIMD registers wide: independent chains hide FMA latency, and a
# gang's memory accesses cover several cache lines
GANG_VECTORS = 4


class Codegen(AnalysisMixin, GangChoiceMixin, CubeMixin, PlaneMixin, RegionMixin, UnitMixin, GangMixin,
              GangAccessMixin, MemoryMixin, OobMixin, ExprMixin):
    def __init__(self, kernel: Kernel, plane_dim: int, levels: dict | None = None, vf: int = 16,
                 masks_memory: bool = True):
        self.k = kernel
        self.P = int(plane_dim)
        self.dims = tuple(kernel.cube_dim)
        self.U = math.prod(self.dims)
        self.VF = gang_width(kernel, int(vf))   # units per gang (see gang.py)
        self.Upad = -(-self.U // self.VF) * self.VF
        self.masks_memory = masks_memory      # native masked loads/stores (gang_access.py)
        self.levels = levels or {}
        self.fast = kernel.fastmath == "algebraic"
        self.name = _sanitize(kernel.name)
        self.decls: dict[str, str] = {}
        self._barrier: dict[int, bool] = {}
        self.check_supported()
        self.analyze()

    # --- checks ---------------------------------------------------------------------------

    def check_supported(self) -> None:
        k = self.k
        types = [p.type for p in k.params] + [b.type for b in k.buffers] + [v.type for v in k.vars]
        for op in walk(k.body):
            if op.opcode not in OPCODES:
                raise CpuCompileError(f"unknown opcode {op.opcode!r}", k.name, op.loc)
            if op.result is not None:
                types.append(op.result.type)
            if op.opcode == "atomic" and (op.attrs.get("op") not in ATOMIC_OPS or op.args[0].type.width > 1):
                raise CubeTypeError(f"atomic {op.attrs.get('op')!r} on {op.args[0].type} is not supported",
                                    k.name, op.loc)
            if op.opcode == "report_oob" and len(op.args) // 2 > MAX_OOB_DIMS:
                raise CpuCompileError(f"checked arrays of more than {MAX_OOB_DIMS} dimensions", k.name, op.loc)
        for t in types:
            if t.dtype.name == "bf16":
                raise CubeTypeError("bf16 is not supported by the CPU backend", k.name, k.loc)

    # --- workspace layout -----------------------------------------------------------------

    def layout_workspace(self) -> None:
        off = 0

        def take(nbytes: int) -> int:
            nonlocal off
            at = off
            off += (nbytes + 63) // 64 * 64
            return at

        self.status_off = take(4 * self.Upad) if self.need_status else None
        self.slot_off: dict[int, tuple[int, str]] = {}
        values = {op.result.id: op.result for op in walk(self.k.body) if op.result is not None}
        for vid in sorted(self.slot_values):
            t = values[vid].type
            self.slot_off[vid] = (take(self._size(t) * self.Upad), ltype(t, True))
        for v in self.k.vars:
            if v.id in self.slot_vars:
                self.slot_off[v.id] = (take(self._size(v.type) * self.Upad), ltype(v.type, True))
        self.buf_off: dict[int, int] = {}
        for b in self.k.buffers:
            n = math.prod(b.shape) * self._size(b.type)
            self.buf_off[b.id] = take(n * (self.U if b.kind == "local" else 1))
        self.rec_off = take(4 * self.Upad * self._oob_layout_words())
        self.ws_size = off

    @staticmethod
    def _size(t: Type) -> int:
        return t.dtype.itemsize * t.width

    # --- module ---------------------------------------------------------------------------

    def generate(self, triple: str, datalayout: str) -> tuple[str, Layout]:
        self.layout_workspace()
        self.oob_sites: list = []
        self.metadata: list[str] = []          # module-level metadata nodes (loop hints, branch weights)
        self.named_md: dict[str, str] = {}      # the shared ones by purpose: "unroll", "likely"
        range_fn = self._range_function()
        entry_fn, slots = self._entry_function()
        text = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', "",
                range_fn, "", entry_fn, ""]
        text += sorted(self.decls.values())
        text += ["", "attributes #0 = { nounwind }", *self.metadata]
        return "\n".join(text) + "\n", Layout(f"{self.name}_entry", self.ws_size, slots, self.oob_sites)

    def _range_params(self) -> list[tuple[str, str, str]]:
        """(llvm type, name, attributes) of the range function's parameters, in order."""
        out = []
        for p in self.k.params:
            if isinstance(p, Buffer):
                attrs = "noalias" + ("" if p.mutable else " readonly")
                out.append(("ptr", f"%b{p.param_index}", attrs))
                for d in range(p.ndim):
                    out.append(("i32", f"%s{p.param_index}_{d}", ""))
            else:
                out.append((ltype(p.type), f"%p{p.param_index}", ""))
        out += [("ptr", "%ws", "noalias"), ("ptr", "%rec", "noalias"), ("ptr", "%err", "noalias"),
                ("i64", "%first", ""), ("i64", "%last", ""), ("i32", "%ccx", ""), ("i32", "%ccy", ""),
                ("i32", "%ccz", "")]
        return out

    def _entry_function(self) -> tuple[str, list]:
        fn = Fn()
        slots = argument_slots(self.k)
        loaded = []
        for i, slot in enumerate(slots):
            p = fn.op(f"getelementptr i64, ptr %args, i64 {i}")
            if slot[0] == "scalar":
                d = slot[2]
                v = fn.op(f"load {scalar_type(d, True)}, ptr {p}, align 8")
                if d.is_bool:
                    v = fn.op(f"icmp ne i8 {v}, 0")
            elif slot[0] in ("ptr", "err"):
                v = fn.op(f"load ptr, ptr {p}, align 8")
            else:
                v = fn.op(f"load i32, ptr {p}, align 8")
            loaded.append(v)
        args = []
        it = iter(loaded)
        rec = fn.op(f"getelementptr i8, ptr %ws, i64 {self.rec_off}")
        for ty, name, _ in self._range_params():
            if name == "%rec":
                args.append(f"ptr {rec}")
                continue
            args.append(f"{ty} {name}" if name in ("%ws", "%first", "%last") else f"{ty} {next(it)}")
        fn.emit(f"call void @{self.name}_range({', '.join(args)})")
        fn.emit("ret void")
        fn.terminated = True
        text = (f"define void @{self.name}_entry(ptr %args, i64 %first, i64 %last, ptr %ws) #0 {{\n"
                f"{fn.body()}\n}}")
        return text, slots

    def _range_function(self) -> str:
        self.fn = fn = Fn()
        params = ", ".join(f"{t} {a} {n}".replace("  ", " ") for t, n, a in self._range_params())
        # the cube's position: divided out of the range's first cube, then stepped like an
        # odometer (the divisions of every cube cost a 256-unit saxpy about 4% of its time)
        ccx, ccy = fn.op("zext i32 %ccx to i64"), fn.op("zext i32 %ccy to i64")
        rest = fn.op(f"udiv i64 %first, {ccx}")
        first = (fn.op(f"trunc i64 {fn.op(f'urem i64 %first, {ccx}')} to i32"),
                 fn.op(f"trunc i64 {fn.op(f'urem i64 {rest}, {ccy}')} to i32"),
                 fn.op(f"trunc i64 {fn.op(f'udiv i64 {rest}, {ccy}')} to i32"))
        slots = [fn.alloca("i32", 4) for _ in range(3)]
        for slot, v in zip(slots, first):
            fn.emit(f"store i32 {v}, ptr {slot}")
        cvar, c, (head, _, done) = fn.loop_begin(("cube_head", "cube_body", "cube_done"), "%last", "i64", "%first")
        self.cube_lin = c
        cx, cy, cz = (fn.op(f"load i32, ptr {slot}") for slot in slots)
        self.cube_pos = {"cube_pos_x": cx, "cube_pos_y": cy, "cube_pos_z": cz}
        if self.need_status:
            fn.emit(f"call void @llvm.memset.p0.i64(ptr align 64 {self._ws(self.status_off)}, i8 0, "
                    f"i64 {4 * self.U}, i1 false)")
            self.decls["memset"] = "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)"
        self.inv: dict[int, str] = {}
        self.regs: dict[int, str] = {}
        self.var_alloca: dict = {}      # stack slots of variables, by (var id, lanes)
        self.slot_local: dict = {}      # a gang's register copies of slot variables
        self.loops: list = []           # ("unit", break, continue) or ("cube", depth)
        self.unit_pos = None            # in a unit loop nest over rows: the unit's x, y, z registers
        self.depth = 0
        for op in walk(self.k.body):
            if op.result is not None and op.result.id in self.invariant:
                self.inv[op.result.id] = self._pure_or_leaf(op)
        self._cube_block(self.k.body)
        x1 = fn.op(f"add i32 {cx}, 1")
        wrap_x = fn.op(f"icmp eq i32 {x1}, %ccx")
        y1 = fn.op(f"add i32 {cy}, {fn.op(f'zext i1 {wrap_x} to i32')}")
        wrap_y = fn.op(f"icmp eq i32 {y1}, %ccy")
        fn.emit(f"store i32 {fn.op(f'select i1 {wrap_x}, i32 0, i32 {x1}')}, ptr {slots[0]}")
        fn.emit(f"store i32 {fn.op(f'select i1 {wrap_y}, i32 0, i32 {y1}')}, ptr {slots[1]}")
        z1 = fn.op(f"add i32 {cz}, {fn.op(f'zext i1 {wrap_y} to i32')}")
        fn.emit(f"store i32 {z1}, ptr {slots[2]}")
        fn.loop_end(cvar, c, head, done, ty="i64")
        fn.emit("ret void")
        fn.terminated = True
        return f"define internal void @{self.name}_range({params}) #0 {{\n{fn.body()}\n}}"

    def _shared_md(self, purpose: str, content: str) -> str:
        """The module's one metadata node for ``purpose`` (``"likely"``, ``"unroll"``), made once."""
        node = self.named_md.get(purpose)
        if node is None:
            node = self.named_md[purpose] = f"!{len(self.metadata)}"
            self.metadata.append(f"{node} = {content}")
        return node

    def _likely_md(self) -> str:
        """``!prof`` branch weights for a branch that almost always goes its first way."""
        return self._shared_md("likely", '!{!"branch_weights", i32 2000, i32 1}')

    def _unlikely_md(self) -> str:
        """``!prof`` branch weights for a branch that almost never goes its first way."""
        return self._shared_md("unlikely", '!{!"branch_weights", i32 1, i32 2000}')

    def _unit_loop_md(self) -> str:
        """The ``!llvm.loop`` of a small loop over a cube's units: unrolled 4 times at most. Vectorized
        and then unrolled whole, a 256-unit saxpy became one block of 32 vector multiplies a
        cube and ran 1.13x numba's time on a Sapphire Rapids host (2026-12-05); as a loop, 1.00x
        (docs/benchmarks.md, the sixteenth session). A 128-unit cube is still one block. The
        vectorizer interleaves once: on a Zen 4 it interleaved 4 vectors, which the unroll count
        made 256 units, the whole cube again (same speed there; one shape of code on every host)."""
        unroll = self._shared_md("unroll", '!{!"llvm.loop.unroll.count", i32 4}')
        interleave = self._shared_md("interleave", '!{!"llvm.loop.interleave.count", i32 1}')
        node = f"!{len(self.metadata)}"
        self.metadata.append(f"{node} = distinct !{{{node}, {unroll}, {interleave}}}")
        return node

    def _ws(self, off: int) -> str:
        return self.fn.op(f"getelementptr i8, ptr %ws, i64 {off}")


def argument_slots(kernel: Kernel) -> list:
    """The host-side layout of the argument block (one 8-byte slot each)."""
    out = []
    for p in kernel.params:
        if isinstance(p, Buffer):
            out.append(("ptr", p.param_index))
            out.extend(("shape", p.param_index, d) for d in range(p.ndim))
        elif isinstance(p, ScalarParam):
            out.append(("scalar", p.param_index, p.type.dtype))
    return out + [("err",), ("ccx",), ("ccy",), ("ccz",)]


def gang_width(kernel: Kernel, f32_width: int) -> int:
    """Units per gang: ``f32_width`` (GANG_VECTORS f32 vectors a value), half of it where the
    kernel computes in f64, so that a value is GANG_VECTORS vectors there too: 64 f64 lanes are 8
    zmm registers a value, and FIR's plain port (an f64 gang) stored 58 zmm registers to the
    stack at 64 lanes against 11 at 32 (counted in its `source("asm")`), 5.2 -> 4.0 ms
    (docs/benchmarks.md)."""
    wide = any(op.result is not None and op.result.type.dtype.is_float and op.result.type.dtype.bits == 64
               for op in walk(kernel.body))
    width = max(1, f32_width // 2) if wide else f32_width
    if indirect_accesses(kernel.body.ops) >= INDIRECT_ACCESSES:
        # gangs that gather through an index array (gang_choice): a vector a value; at four, the
        # plain MATVEC_3D_STENCIL's 27 gathered pairs spilled (2,176 `(%rsp)` operands in its
        # `source("asm")`) and ran 2.4-3.5x its one-vector gang (docs/benchmarks.md)
        width = max(1, width // GANG_VECTORS)
    return width


__all__ = ["Codegen", "GANG_VECTORS", "CpuCompileError", "Layout", "argument_slots", "ERR_WORDS", "MAX_OOB_DIMS",
           "i32", "u64"]
