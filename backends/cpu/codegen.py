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
import re
from dataclasses import dataclass, field

from cubepy.errors import CompileError, CubeTypeError
from cubepy.ir.nodes import (
    ATOMIC_OPS,
    BINARY,
    COMPARE,
    OPCODES,
    PLANE_OPS,
    UNARY,
    Block,
    Buffer,
    Const,
    Kernel,
    Op,
    ScalarParam,
    Value,
    Var,
    walk,
)
from cubepy.ir.types import Type, bool_, f32, f64, i32, u64

from .llvmtext import Fn, const, ltype, mangle, scalar_type

MAX_OOB_DIMS = 8
ERR_WORDS = 4 + 2 * MAX_OOB_DIMS          # flag, site, unit, cube, indices[8], extents[8]
RET = 1                                    # status of a unit that returned


def _code(depth: int, kind: int) -> int:
    """Status of a unit suspended by the cube-level construct at ``depth``:
    kind 0 break, 1 continue, 2 skipped (else side of a masked if), 3 done (then side)."""
    return 2 + 4 * depth + kind


PURE = set(UNARY) | set(BINARY) | set(COMPARE) | {"fma", "select", "cast", "broadcast", "extract", "insert"}
_UNIT_BUILTINS = {"unit_pos_x", "unit_pos_y", "unit_pos_z", "unit_pos_plane"}


class CpuCompileError(CompileError, NotImplementedError):
    """Something the CPU backend does not implement."""


@dataclass
class Layout:
    """What the host side needs to know about a compiled kernel."""

    entry: str
    ws_size: int
    slots: list = field(default_factory=list)       # argument slot kinds, in order
    oob_sites: list = field(default_factory=list)   # (array name, loc, ndim)


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "kernel"


class Codegen:
    def __init__(self, kernel: Kernel, plane_dim: int, levels: dict | None = None):
        self.k = kernel
        self.P = int(plane_dim)
        self.dims = tuple(kernel.cube_dim)
        self.U = math.prod(self.dims)
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

    # --- analysis -------------------------------------------------------------------------

    def barrier(self, op: Op) -> bool:
        key = id(op)
        if key not in self._barrier:
            self._barrier[key] = op.opcode == "sync_cube" or op.opcode in PLANE_OPS or any(
                self.barrier(o) for b in op.blocks for o in b.ops)
        return self._barrier[key]

    def analyze(self) -> None:
        self.invariant: set[int] = set()
        self.remat: dict[int, str] = {}
        for op in walk(self.k.body):
            r = op.result
            if r is None:
                continue
            code = op.opcode
            if code == "builtin" and op.attrs["name"] in _UNIT_BUILTINS:
                self.remat[r.id] = op.attrs["name"]
            elif code in ("param", "shape", "builtin") or (code in PURE and all(
                    isinstance(a, Const) or (isinstance(a, Value) and a.id in self.invariant) for a in op.args)):
                self.invariant.add(r.id)
        self.def_region: dict[int, int] = {}
        self.use_regions: dict[int, set] = {}
        self.var_regions: dict[int, set] = {}
        self.forced: set[int] = set()
        self.loop_regions: set[int] = set()
        self.n_regions = 0
        self.cube_constructs = 0
        self.has_return = any(op.opcode == "return" for op in walk(self.k.body))
        self._scan_cube(self.k.body, False)
        self.slot_values = {vid for vid, rid in self.def_region.items()
                            if vid in self.forced or any(u != rid for u in self.use_regions.get(vid, ()))}
        self.slot_vars = {vid for vid, rs in self.var_regions.items()
                          if len(rs) > 1 or any(r in self.loop_regions or r < 0 for r in rs)}
        self.need_status = self.cube_constructs > 0 or (self.n_regions > 1 and self.has_return)

    def _uniform(self, v) -> bool:
        return isinstance(v, Const) or v.id in self.invariant or self.levels.get(v.id, 2) == 0

    def _new_region(self, in_loop: bool) -> int:
        self.n_regions += 1
        if in_loop:
            self.loop_regions.add(self.n_regions)
        return self.n_regions

    def _use(self, a, rid: int) -> None:
        if isinstance(a, Var):
            self.var_regions.setdefault(a.id, set()).add(rid)
        elif isinstance(a, Value) and not isinstance(a, Const) and a.id not in self.invariant \
                and a.id not in self.remat:
            self.use_regions.setdefault(a.id, set()).add(rid)

    def _scan_cube(self, block: Block, in_loop: bool) -> None:
        seg = None
        for op in block.ops:
            if not self.barrier(op):
                if seg is None:
                    seg = self._new_region(in_loop)
                self._scan_unit(op, seg)
                continue
            seg = None
            rid = self._new_region(in_loop)
            for a in op.args:
                self._use(a, rid)
            if op.opcode in PLANE_OPS:
                self.def_region[op.result.id] = rid
                self.forced.add(op.result.id)
            elif op.opcode in ("if", "for", "loop"):
                self.cube_constructs += op.opcode != "if" or not self._uniform(op.args[0])
                if op.opcode == "for":
                    self._use(op.attrs["var"], -1)
                for b in op.blocks:
                    self._scan_cube(b, in_loop or op.opcode != "if")

    def _scan_unit(self, op: Op, rid: int) -> None:
        for a in op.args:
            self._use(a, rid)
        if op.opcode == "for":
            self._use(op.attrs["var"], rid)
        if op.result is not None and op.result.id not in self.invariant and op.result.id not in self.remat:
            self.def_region[op.result.id] = rid
        for b in op.blocks:
            for o in b.ops:
                self._scan_unit(o, rid)

    # --- workspace layout -----------------------------------------------------------------

    def layout_workspace(self) -> None:
        off = 0

        def take(nbytes: int) -> int:
            nonlocal off
            at = off
            off += (nbytes + 63) // 64 * 64
            return at

        self.status_off = take(4 * self.U) if self.need_status else None
        self.slot_off: dict[int, tuple[int, str]] = {}
        values = {op.result.id: op.result for op in walk(self.k.body) if op.result is not None}
        for vid in sorted(self.slot_values):
            t = values[vid].type
            self.slot_off[vid] = (take(self._size(t) * self.U), ltype(t, True))
        for v in self.k.vars:
            if v.id in self.slot_vars:
                self.slot_off[v.id] = (take(self._size(v.type) * self.U), ltype(v.type, True))
        self.buf_off: dict[int, int] = {}
        for b in self.k.buffers:
            n = math.prod(b.shape) * self._size(b.type)
            self.buf_off[b.id] = take(n * (self.U if b.kind == "local" else 1))
        self.ws_size = off

    @staticmethod
    def _size(t: Type) -> int:
        return t.dtype.itemsize * t.width

    # --- module ---------------------------------------------------------------------------

    def generate(self, triple: str, datalayout: str) -> tuple[str, Layout]:
        self.layout_workspace()
        self.oob_sites: list = []
        range_fn = self._range_function()
        entry_fn, slots = self._entry_function()
        text = [f'target triple = "{triple}"', f'target datalayout = "{datalayout}"', "",
                range_fn, "", entry_fn, ""]
        text += sorted(self.decls.values())
        text += ["", "attributes #0 = { nounwind }"]
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
        out += [("ptr", "%ws", "noalias"), ("ptr", "%err", "noalias"), ("i64", "%first", ""),
                ("i64", "%last", ""), ("i32", "%ccx", ""), ("i32", "%ccy", ""), ("i32", "%ccz", "")]
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
        for ty, name, _ in self._range_params():
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
        cvar = fn.alloca("i64", 8)
        fn.emit(f"store i64 %first, ptr {cvar}")
        head, body, done = fn.label("cube_head"), fn.label("cube_body"), fn.label("cube_done")
        fn.block(head)
        c = fn.op(f"load i64, ptr {cvar}")
        fn.cbr(fn.op(f"icmp slt i64 {c}, %last"), body, done)
        fn.block(body)
        self.cube_lin = c
        ccx, ccy = fn.op("zext i32 %ccx to i64"), fn.op("zext i32 %ccy to i64")
        rest = fn.op(f"udiv i64 {c}, {ccx}")
        cx = fn.op(f"trunc i64 {fn.op(f'urem i64 {c}, {ccx}')} to i32")
        cy = fn.op(f"trunc i64 {fn.op(f'urem i64 {rest}, {ccy}')} to i32")
        cz = fn.op(f"trunc i64 {fn.op(f'udiv i64 {rest}, {ccy}')} to i32")
        self.cube_pos = {"cube_pos_x": cx, "cube_pos_y": cy, "cube_pos_z": cz}
        if self.need_status:
            fn.emit(f"call void @llvm.memset.p0.i64(ptr align 64 {self._ws(self.status_off)}, i8 0, "
                    f"i64 {4 * self.U}, i1 false)")
            self.decls["memset"] = "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)"
        self.inv: dict[int, str] = {}
        self.regs: dict[int, str] = {}
        self.u = None
        self.loops: list = []           # ("unit", break, continue) or ("cube", depth)
        self.depth = 0
        for op in walk(self.k.body):
            if op.result is not None and op.result.id in self.invariant:
                self.inv[op.result.id] = self._pure_or_leaf(op)
        self._cube_block(self.k.body)
        fn.emit(f"store i64 {fn.op(f'add i64 {c}, 1')}, ptr {cvar}")
        fn.br(head)
        fn.block(done)
        fn.emit("ret void")
        fn.terminated = True
        return f"define internal void @{self.name}_range({params}) #0 {{\n{fn.body()}\n}}"

    def _ws(self, off: int) -> str:
        return self.fn.op(f"getelementptr i8, ptr %ws, i64 {off}")

    # --- cube level -----------------------------------------------------------------------

    def _cube_block(self, block: Block) -> None:
        seg: list[Op] = []
        for op in block.ops:
            if self.barrier(op):
                if seg:
                    self._region(seg)
                    seg = []
                self._cube_op(op)
            else:
                seg.append(op)
        if seg:
            self._region(seg)

    def _region(self, ops: list[Op]) -> None:
        def body():
            for op in ops:
                self._unit_op(op)
        self._unit_loop(body)

    def _unit_loop(self, body, all_units: bool = False) -> None:
        """for u in range(U): (if status[u] == 0:) body() -- body may branch to self.unit_end."""
        fn = self.fn
        uvar = fn.alloca("i32", 4)
        fn.emit(f"store i32 0, ptr {uvar}")
        head, work, latch, done = (fn.label(x) for x in ("u_head", "u_work", "u_latch", "u_done"))
        fn.block(head)
        u = fn.op(f"load i32, ptr {uvar}")
        fn.cbr(fn.op(f"icmp slt i32 {u}, {self.U}"), work, done)
        fn.block(work)
        saved = self.u, self.regs, getattr(self, "unit_end", None)
        self.u, self.regs, self.unit_end = u, {}, latch
        if self.need_status and not all_units:
            go = fn.label("u_go")
            fn.cbr(fn.op(f"icmp eq i32 {self._status(u)}, 0"), go, latch)
            fn.block(go)
        body()
        fn.block(latch)
        fn.emit(f"store i32 {fn.op(f'add i32 {u}, 1')}, ptr {uvar}")
        fn.br(head)
        fn.block(done)
        self.u, self.regs, self.unit_end = saved

    def _status_ptr(self, u: str) -> str:
        base = self._ws(self.status_off)
        return self.fn.op(f"getelementptr i32, ptr {base}, i32 {u}")

    def _status(self, u: str) -> str:
        return self.fn.op(f"load i32, ptr {self._status_ptr(u)}, align 4")

    def _set_status(self, u: str, value) -> None:
        self.fn.emit(f"store i32 {value}, ptr {self._status_ptr(u)}, align 4")

    def _remap_status(self, mapping: dict[int, int]) -> None:
        """Over all units: status[u] = mapping.get(status[u], status[u])."""
        def body():
            s = self._status(self.u)
            new = s
            for old, to in mapping.items():
                new = self.fn.op(f"select i1 {self.fn.op(f'icmp eq i32 {s}, {old}')}, i32 {to}, i32 {new}")
            self._set_status(self.u, new)
        self._unit_loop(body, all_units=True)

    def _any_running(self) -> str:
        """An i1: does any unit have status 0?"""
        fn = self.fn
        acc = fn.alloca("i1", 1)
        fn.emit(f"store i1 false, ptr {acc}")

        def body():
            z = fn.op(f"icmp eq i32 {self._status(self.u)}, 0")
            cur = fn.op(f"load i1, ptr {acc}")
            fn.emit(f"store i1 {fn.op(f'or i1 {cur}, {z}')}, ptr {acc}")
        self._unit_loop(body, all_units=True)
        return fn.op(f"load i1, ptr {acc}")

    def _cube_op(self, op: Op) -> None:
        code = op.opcode
        if code == "sync_cube":
            return
        if code in PLANE_OPS:
            self._plane(op)
        elif code == "if":
            self._cube_if(op)
        elif code in ("for", "loop"):
            self._cube_loop(op)
        else:  # pragma: no cover
            raise CpuCompileError(f"{code} cannot hold a barrier", self.k.name, op.loc)

    def _first_running_value(self, v) -> tuple[str, str | None]:
        """(value, has_any): ``v`` of the first running unit; has_any is an i1 or None (all run)."""
        fn = self.fn
        if isinstance(v, Const) or v.id in self.invariant:
            return self._get_cube(v), None
        if not self.need_status:
            self.u, self.regs = "0", {}
            r = self._get(v)
            self.u = None
            return r, None
        idx = fn.alloca("i32", 4)
        fn.emit(f"store i32 {self.U}, ptr {idx}")
        uvar = fn.alloca("i32", 4)
        fn.emit(f"store i32 0, ptr {uvar}")
        head, work, found, latch, done = (fn.label(x) for x in ("f_head", "f_work", "f_found", "f_latch", "f_done"))
        fn.block(head)
        u = fn.op(f"load i32, ptr {uvar}")
        fn.cbr(fn.op(f"icmp slt i32 {u}, {self.U}"), work, done)
        fn.block(work)
        fn.cbr(fn.op(f"icmp eq i32 {self._status(u)}, 0"), found, latch)
        fn.block(found)
        fn.emit(f"store i32 {u}, ptr {idx}")
        fn.br(done)
        fn.block(latch)
        fn.emit(f"store i32 {fn.op(f'add i32 {u}, 1')}, ptr {uvar}")
        fn.br(head)
        fn.block(done)
        first = fn.op(f"load i32, ptr {idx}")
        has = fn.op(f"icmp slt i32 {first}, {self.U}")
        safe = fn.op(f"select i1 {has}, i32 {first}, i32 0")
        self.u, self.regs = safe, {}
        r = self._get(v)
        self.u = None
        return r, has

    def _cube_if(self, op: Op) -> None:
        fn = self.fn
        cond = op.args[0]
        then_b = op.blocks[0]
        else_b = op.blocks[1] if len(op.blocks) > 1 else Block()
        if self._uniform(cond):
            c, has = self._first_running_value(cond)
            lt_, le_, merge = fn.label("cif_then"), fn.label("cif_else"), fn.label("cif_end")
            if has is not None:
                test = fn.label("cif_test")
                fn.cbr(has, test, merge)
                fn.block(test)
            fn.cbr(c, lt_, le_)
            fn.block(lt_)
            self._cube_block(then_b)
            fn.br(merge)
            fn.block(le_)
            self._cube_block(else_b)
            fn.br(merge)
            fn.block(merge)
            return
        d = self.depth
        self.depth += 1
        skip, done = _code(d, 2), _code(d, 3)

        def mask():
            nc = fn.op(f"xor i1 {self._get(cond)}, true")
            yes, no = fn.label("m_skip"), fn.label("m_keep")
            fn.cbr(nc, yes, no)
            fn.block(yes)
            self._set_status(self.u, skip)
            fn.block(no)
        self._unit_loop(mask)
        self._cube_block(then_b)
        self._remap_status({0: done, skip: 0})
        self._cube_block(else_b)
        self._remap_status({done: 0})
        self.depth -= 1

    def _cube_loop(self, op: Op) -> None:
        fn = self.fn
        d = self.depth
        self.depth += 1
        brk, cont = _code(d, 0), _code(d, 1)
        var = op.attrs.get("var") if op.opcode == "for" else None
        if var is not None:
            start, stop, step = op.args

            def init():
                self._store_var(var, self._get(start))
            self._unit_loop(init)
        head, body, done = fn.label("cl_head"), fn.label("cl_body"), fn.label("cl_done")
        fn.block(head)
        if var is not None:
            def check():
                i = self._load_var(var)
                ok = self._for_cond(i, self._get(stop), step)
                stop_l, go = fn.label("cl_stop"), fn.label("cl_go")
                fn.cbr(ok, go, stop_l)
                fn.block(stop_l)
                self._set_status(self.u, brk)
                fn.block(go)
            self._unit_loop(check)
        fn.cbr(self._any_running(), body, done)
        fn.block(body)
        self.loops.append(("cube", d))
        self._cube_block(op.blocks[0])
        self.loops.pop()

        def latch():
            s = self._status(self.u)
            s2 = fn.op(f"select i1 {fn.op(f'icmp eq i32 {s}, {cont}')}, i32 0, i32 {s}")
            self._set_status(self.u, s2)
            if var is not None:
                inc, skip = fn.label("cl_inc"), fn.label("cl_skip")
                fn.cbr(fn.op(f"icmp eq i32 {s2}, 0"), inc, skip)
                fn.block(inc)
                i = self._load_var(var)
                self._store_var(var, fn.op(f"add i32 {i}, {self._get(step)}"))
                fn.block(skip)
        self._unit_loop(latch, all_units=True)
        fn.br(head)
        fn.block(done)
        self._remap_status({brk: 0, cont: 0})
        self.depth -= 1

    def _for_cond(self, i: str, stop: str, step) -> str:
        fn = self.fn
        if isinstance(step, Const):
            return fn.op(f"icmp {'slt' if step.value > 0 else 'sgt'} i32 {i}, {stop}")
        s = self._get(step)
        pos = fn.op(f"icmp sgt i32 {s}, 0")
        return fn.op(f"select i1 {pos}, i1 {fn.op(f'icmp slt i32 {i}, {stop}')}, "
                     f"i1 {fn.op(f'icmp sgt i32 {i}, {stop}')}")

    # --- plane operations (cube level) ----------------------------------------------------

    def _plane(self, op: Op) -> None:
        """A loop over the cube's planes; in each, a pass over the lanes to combine, and one to
        write every lane's result."""
        fn = self.fn
        code, P, U = op.opcode, self.P, self.U
        t = op.result.type
        x = op.args[0] if op.args else None
        pvar = fn.alloca("i32", 4)
        fn.emit(f"store i32 0, ptr {pvar}")
        head, body, done = fn.label("p_head"), fn.label("p_body"), fn.label("p_done")
        fn.block(head)
        base = fn.op(f"load i32, ptr {pvar}")
        fn.cbr(fn.op(f"icmp slt i32 {base}, {U}"), body, done)
        fn.block(body)
        if U % P:
            end = fn.op(f"add i32 {base}, {P}")
            short = fn.op(f"icmp slt i32 {U}, {end}")
            n = fn.op(f"select i1 {short}, i32 {fn.op(f'sub i32 {U}, {base}')}, i32 {P}")
        else:
            n = str(P)

        def lanes(fn_lane):
            """for l in range(n): u = base + l; fn_lane(l, u, valid)"""
            lv = fn.alloca("i32", 4)
            fn.emit(f"store i32 0, ptr {lv}")
            h, w, e = fn.label("l_head"), fn.label("l_work"), fn.label("l_done")
            fn.block(h)
            lane = fn.op(f"load i32, ptr {lv}")
            fn.cbr(fn.op(f"icmp slt i32 {lane}, {n}"), w, e)
            fn.block(w)
            u = fn.op(f"add i32 {base}, {lane}")
            valid = fn.op(f"icmp eq i32 {self._status(u)}, 0") if self.need_status else "true"
            self.u, self.regs = u, {}
            fn_lane(lane, u, valid)
            self.u = None
            fn.emit(f"store i32 {fn.op(f'add i32 {lane}, 1')}, ptr {lv}")
            fn.br(h)
            fn.block(e)

        def write_all(value_fn):
            def each(lane, u, valid):
                self._store_slot(op.result, u, value_fn(lane, u, valid))
            lanes(each)

        rty = ltype(t)
        if code in ("plane_sum", "plane_prod", "plane_min", "plane_max", "plane_all", "plane_any",
                    "plane_ballot"):
            acc = fn.alloca(rty)
            ident = self._identity(code, t)
            fn.emit(f"store {rty} {ident}, ptr {acc}")

            def combine(lane, u, valid):
                xv = self._get(x)
                cur = fn.op(f"load {rty}, ptr {acc}")
                if code == "plane_ballot":
                    bit = fn.op(f"shl i64 1, {fn.op(f'zext i32 {lane} to i64')}")
                    new = fn.op(f"or i64 {cur}, {fn.op(f'select i1 {xv}, i64 {bit}, i64 0')}")
                else:
                    kind = {"plane_sum": "add", "plane_prod": "mul", "plane_min": "min", "plane_max": "max",
                            "plane_all": "and", "plane_any": "or"}[code]
                    new = self._binary(kind, cur, xv, t)
                fn.emit(f"store {rty} {fn.op(f'select i1 {valid}, {rty} {new}, {rty} {cur}')}, ptr {acc}")
            lanes(combine)
            total = fn.op(f"load {rty}, ptr {acc}")
            write_all(lambda lane, u, valid: total)
        elif code in ("plane_inclusive_sum", "plane_exclusive_sum"):
            acc = fn.alloca(rty)
            fn.emit(f"store {rty} {const(t, 0)}, ptr {acc}")

            def scan(lane, u, valid):
                xv = fn.op(f"select i1 {valid}, {rty} {self._get(x)}, {rty} {const(t, 0)}")
                cur = fn.op(f"load {rty}, ptr {acc}")
                new = self._binary("add", cur, xv, t)
                fn.emit(f"store {rty} {new}, ptr {acc}")
                self._store_slot(op.result, u, new if code == "plane_inclusive_sum" else cur)
            lanes(scan)
        elif code == "plane_elect":
            seen = fn.alloca("i1", 1)
            fn.emit(f"store i1 false, ptr {seen}")

            def elect(lane, u, valid):
                s = fn.op(f"load i1, ptr {seen}")
                me = fn.op(f"and i1 {valid}, {fn.op(f'xor i1 {s}, true')}")
                fn.emit(f"store i1 {fn.op(f'or i1 {s}, {valid}')}, ptr {seen}")
                self._store_slot(op.result, u, me)
            lanes(elect)
        else:  # shuffles: lane reads lane src; out of range or inactive sources give its own value
            def shuffle(lane, u, valid):
                a = fn.op(f"sext i32 {self._get(op.args[1])} to i64")
                l64 = fn.op(f"zext i32 {lane} to i64")
                if code in ("plane_broadcast", "plane_shuffle"):
                    src = fn.op(f"and i64 {a}, {P - 1}")
                else:
                    inst = {"plane_shuffle_xor": "xor", "plane_shuffle_up": "sub", "plane_shuffle_down": "add"}[code]
                    src = fn.op(f"{inst} i64 {l64}, {a}")
                n64 = n if n == str(P) else fn.op(f"zext i32 {n} to i64")
                ge0 = fn.op(f"icmp sge i64 {src}, 0")
                inside = fn.op(f"and i1 {ge0}, {fn.op(f'icmp slt i64 {src}, {n64}')}")
                src_c = fn.op(f"select i1 {inside}, i64 {src}, i64 {l64}")
                su = fn.op(f"add i32 {base}, {fn.op(f'trunc i64 {src_c} to i32')}")
                ok = inside
                if self.need_status:
                    ok = fn.op(f"and i1 {inside}, {fn.op(f'icmp eq i32 {self._status(su)}, 0')}")
                mine = self._get(x)
                self.u, self.regs = su, {}
                other = self._get(x)
                self.u, self.regs = u, {}
                self._store_slot(op.result, u, fn.op(f"select i1 {ok}, {rty} {other}, {rty} {mine}"))
            lanes(shuffle)
        fn.emit(f"store i32 {fn.op(f'add i32 {base}, {P}')}, ptr {pvar}")
        fn.br(head)
        fn.block(done)

    def _identity(self, code: str, t: Type) -> str:
        d = t.dtype
        if code in ("plane_sum", "plane_any", "plane_ballot"):
            return const(t, 0)
        if code in ("plane_prod", "plane_all"):
            return const(t, 1)
        high = code == "plane_min"
        if d.is_bool:
            return const(t, high)
        if d.is_float:
            return const(t, float("inf") if high else float("-inf"))
        if d.is_signed:
            return const(t, (1 << (d.bits - 1)) - 1 if high else -(1 << (d.bits - 1)))
        return const(t, (1 << d.bits) - 1 if high else 0)

    # --- unit level -------------------------------------------------------------------------

    def _get_cube(self, v) -> str:
        if isinstance(v, Const):
            return const(v.type, v.value)
        return self.inv[v.id]

    def _get(self, v) -> str:
        if isinstance(v, Const):
            return const(v.type, v.value)
        if v.id in self.inv:
            return self.inv[v.id]
        if v.id in self.regs:
            return self.regs[v.id]
        if v.id in self.remat:
            r = self._unit_builtin(self.remat[v.id])
        elif v.id in self.slot_off:
            r = self._load_slot(v, self.u)
        else:
            raise CpuCompileError(f"internal: value {v!r} used outside its region", self.k.name, None)
        self.regs[v.id] = r
        return r

    def _define(self, v: Value, r: str) -> None:
        self.regs[v.id] = r
        if v.id in self.slot_off:
            self._store_slot(v, self.u, r)

    def _slot_ptr(self, key: int, u: str, off_ty=None) -> tuple[str, str]:
        off, mty = self.slot_off[key]
        return self.fn.op(f"getelementptr {mty}, ptr {self._ws(off)}, i32 {u}"), mty

    def _load_slot(self, v, u: str) -> str:
        p, mty = self._slot_ptr(v.id, u)
        return self._from_mem(self.fn.op(f"load {mty}, ptr {p}, align {v.type.dtype.itemsize}"), v.type)

    def _store_slot(self, v, u: str, r: str) -> None:
        p, mty = self._slot_ptr(v.id, u)
        self.fn.emit(f"store {mty} {self._to_mem(r, v.type)}, ptr {p}, align {v.type.dtype.itemsize}")

    def _from_mem(self, r: str, t: Type) -> str:
        if t.dtype.is_bool:
            zero = "zeroinitializer" if t.width > 1 else "0"
            return self.fn.op(f"icmp ne {ltype(t, True)} {r}, {zero}")
        return r

    def _to_mem(self, r: str, t: Type) -> str:
        if t.dtype.is_bool:
            return self.fn.op(f"zext {ltype(t)} {r} to {ltype(t, True)}")
        return r

    def _var_ptr(self, var: Var) -> tuple[str, str]:
        if var.id in self.slot_off:
            return self._slot_ptr(var.id, self.u)
        if not hasattr(self, "var_alloca"):
            self.var_alloca = {}
        if var.id not in self.var_alloca:
            self.var_alloca[var.id] = self.fn.alloca(ltype(var.type, True))
        return self.var_alloca[var.id], ltype(var.type, True)

    def _load_var(self, var: Var) -> str:
        p, mty = self._var_ptr(var)
        return self._from_mem(self.fn.op(f"load {mty}, ptr {p}, align {var.type.dtype.itemsize}"), var.type)

    def _store_var(self, var: Var, r: str) -> None:
        p, mty = self._var_ptr(var)
        self.fn.emit(f"store {mty} {self._to_mem(r, var.type)}, ptr {p}, align {var.type.dtype.itemsize}")

    def _unit_builtin(self, name: str) -> str:
        fn, u = self.fn, self.u
        dx, dy, _ = self.dims
        if name == "unit_pos_plane":
            return fn.op(f"and i32 {u}, {self.P - 1}")
        if name == "unit_pos_x":
            return u if dx == self.U else fn.op(f"urem i32 {u}, {dx}")
        if name == "unit_pos_y":
            return fn.op(f"urem i32 {fn.op(f'udiv i32 {u}, {dx}')}, {dy}")
        return fn.op(f"udiv i32 {u}, {dx * dy}")

    def _pure_or_leaf(self, op: Op) -> str:
        """An invariant op, emitted once per cube."""
        code = op.opcode
        if code == "param":
            return f"%p{op.attrs['index']}"
        if code == "shape":
            return f"%s{op.args[0].param_index}_{op.attrs['dim']}"
        if code == "builtin":
            name = op.attrs["name"]
            if name in self.cube_pos:
                return self.cube_pos[name]
            if name.startswith("cube_dim"):
                return str(self.dims["xyz".index(name[-1])])
            if name.startswith("cube_count"):
                return f"%cc{name[-1]}"
            if name == "plane_dim":
                return str(self.P)
            raise CpuCompileError(f"unknown builtin {name!r}", self.k.name, op.loc)
        saved = self.regs, self.u
        self.regs = {}
        r = self._pure(op, [self._get_cube(a) for a in op.args])
        self.regs, self.u = saved
        return r

    def _unit_op(self, op: Op) -> None:
        code = op.opcode
        fn = self.fn
        if op.result is not None and (op.result.id in self.invariant or op.result.id in self.remat):
            return
        if code in PURE:
            self._define(op.result, self._pure(op, [self._get(a) for a in op.args]))
        elif code == "load_var":
            self._define(op.result, self._load_var(op.args[0]))
        elif code == "store_var":
            self._store_var(op.args[0], self._get(op.args[1]))
        elif code == "load":
            p, mty = self._address(op.args[0], op.args[1:])
            r = fn.op(f"load {mty}, ptr {p}, align {op.args[0].type.dtype.itemsize}")
            self._define(op.result, self._from_mem(r, op.result.type))
        elif code == "store":
            buf = op.args[0]
            p, mty = self._address(buf, op.args[1:-1])
            v = self._to_mem(self._get(op.args[-1]), buf.type)
            fn.emit(f"store {mty} {v}, ptr {p}, align {buf.type.dtype.itemsize}")
        elif code == "atomic":
            self._atomic(op)
        elif code == "report_oob":
            self._report_oob(op)
        elif code == "if":
            self._unit_if(op)
        elif code in ("for", "loop"):
            self._unit_loop_op(op)
        elif code in ("break", "continue"):
            top = self.loops[-1]
            if top[0] == "unit":
                fn.br(top[1] if code == "break" else top[2])
            else:
                self._set_status(self.u, _code(top[1], 0 if code == "break" else 1))
                fn.br(self.unit_end)
        elif code == "return":
            if self.need_status:
                self._set_status(self.u, RET)
            fn.br(self.unit_end)
        else:
            raise CpuCompileError(f"opcode {code!r} is not supported here", self.k.name, op.loc)

    def _unit_if(self, op: Op) -> None:
        fn = self.fn
        t, e, m = fn.label("if_then"), fn.label("if_else"), fn.label("if_end")
        fn.cbr(self._get(op.args[0]), t, e)
        regs = self.regs
        fn.block(t)
        self.regs = dict(regs)
        for o in op.blocks[0].ops:
            self._unit_op(o)
        fn.br(m)
        fn.block(e)
        self.regs = dict(regs)
        if len(op.blocks) > 1:
            for o in op.blocks[1].ops:
                self._unit_op(o)
        fn.br(m)
        fn.block(m)
        self.regs = regs

    def _unit_loop_op(self, op: Op) -> None:
        fn = self.fn
        head, body, latch, done = (fn.label(x) for x in ("l_head", "l_body", "l_latch", "l_done"))
        var = op.attrs.get("var") if op.opcode == "for" else None
        if var is not None:
            start, stop, step = op.args
            self._store_var(var, self._get(start))
            stop_v = self._get(stop)
            step_v = self._get(step)
        fn.block(head)
        regs = self.regs
        self.regs = dict(regs)
        if var is not None:
            fn.cbr(self._for_cond(self._load_var(var), stop_v, step), body, done)
        fn.block(body)
        self.loops.append(("unit", done, latch))
        for o in op.blocks[0].ops:
            self._unit_op(o)
        self.loops.pop()
        fn.block(latch)
        self.regs = dict(regs)
        if var is not None:
            self._store_var(var, fn.op(f"add i32 {self._load_var(var)}, {step_v}"))
        fn.br(head)
        fn.block(done)
        self.regs = regs

    # --- memory -----------------------------------------------------------------------------

    def _address(self, buf: Buffer, indices) -> tuple[str, str]:
        fn = self.fn
        mty = ltype(buf.type, True)
        idx = [fn.op(f"sext i32 {self._get(i)} to i64") if not isinstance(i, Const) else str(int(i.value))
               for i in indices]
        if buf.kind == "global":
            dims = [f"%s{buf.param_index}_{d}" for d in range(buf.ndim)]
            dims = [fn.op(f"zext i32 {d} to i64") for d in dims]
            base = f"%b{buf.param_index}"
        else:
            dims = [str(s) for s in buf.shape]
            base = self._ws(self.buf_off[buf.id])
        lin = idx[0]
        for i, d in zip(idx[1:], dims[1:]):
            lin = fn.op(f"add i64 {fn.op(f'mul i64 {lin}, {d}')}, {i}")
        if buf.kind == "local":
            per = math.prod(buf.shape)
            u64_ = fn.op(f"zext i32 {self.u} to i64")
            lin = fn.op(f"add i64 {fn.op(f'mul i64 {u64_}, {per}')}, {lin}")
        return fn.op(f"getelementptr {mty}, ptr {base}, i64 {lin}"), mty

    def _atomic(self, op: Op) -> None:
        fn = self.fn
        buf, kind = op.args[0], op.attrs["op"]
        nvals = 2 if kind == "cas" else 1
        p, mty = self._address(buf, op.args[1:-nvals])
        d = buf.type.dtype
        t = Type(d)
        vals = [self._to_mem(self._get(a), t) for a in op.args[-nvals:]]
        if kind == "cas":
            ity = f"i{d.bits if not d.is_bool else 8}"
            cmp_, new = vals
            if d.is_float:
                cmp_ = fn.op(f"bitcast {mty} {cmp_} to {ity}")
                new = fn.op(f"bitcast {mty} {new} to {ity}")
            pair = fn.op(f"cmpxchg ptr {p}, {ity} {cmp_}, {ity} {new} monotonic monotonic")
            old = fn.op(f"extractvalue {{ {ity}, i1 }} {pair}, 0")
            if d.is_float:
                old = fn.op(f"bitcast {ity} {old} to {mty}")
        else:
            if d.is_float:
                rmw = {"add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax", "exchange": "xchg"}.get(kind)
            else:
                signed = d.is_signed
                rmw = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor", "exchange": "xchg",
                       "min": "min" if signed else "umin", "max": "max" if signed else "umax"}.get(kind)
            if rmw is None:
                raise CubeTypeError(f"atomic {kind} on {d} is not supported", self.k.name, op.loc)
            old = fn.op(f"atomicrmw {rmw} ptr {p}, {mty} {vals[0]} monotonic, align {d.itemsize}")
        if op.result is not None:
            self._define(op.result, self._from_mem(old, t))

    def _report_oob(self, op: Op) -> None:
        fn = self.fn
        nd = len(op.args) // 2
        site = len(self.oob_sites)
        self.oob_sites.append((op.attrs.get("array", "?"), op.loc, nd))
        pair = fn.op("cmpxchg ptr %err, i64 0, i64 1 monotonic monotonic")
        won = fn.op(f"extractvalue {{ i64, i1 }} {pair}, 1")
        rec, cont = fn.label("oob_rec"), fn.label("oob_cont")
        fn.cbr(won, rec, cont)
        fn.block(rec)

        def put(word: int, val64: str) -> None:
            p = fn.op(f"getelementptr i64, ptr %err, i64 {word}")
            fn.emit(f"store i64 {val64}, ptr {p}, align 8")
        put(1, str(site))
        put(2, fn.op(f"zext i32 {self.u} to i64"))
        put(3, self.cube_lin)
        for j, a in enumerate(op.args):
            v = self._get(a)
            put(4 + j if j < nd else 4 + MAX_OOB_DIMS + (j - nd), fn.op(f"sext i32 {v} to i64"))
        fn.br(cont)
        fn.block(cont)

    # --- pure ops -------------------------------------------------------------------------

    def _flags(self) -> str:
        return "reassoc contract arcp afn " if self.fast else ""

    def _decl(self, name: str, ret: str, args: list[str]) -> str:
        self.decls.setdefault(name, f"declare {ret} @{name}({', '.join(args)})")
        return name

    def _call(self, name: str, ret: str, args: list[tuple[str, str]], fast: bool = False) -> str:
        self._decl(name, ret, [a for a, _ in args])
        fl = self._flags() if fast else ""
        return self.fn.op(f"call {fl}{ret} @{name}({', '.join(f'{a} {b}' for a, b in args)})")

    def _intrinsic(self, base: str, t: Type, args: list[str]) -> str:
        ty = ltype(t)
        return self._call(f"llvm.{base}.{mangle(t)}", ty, [(ty, a) for a in args], fast=t.dtype.is_float)

    def _libm(self, name: str, t: Type, args: list[str], via_f64: bool = False) -> str:
        """A libm function applied per element (f16 computes in f32; via_f64 in f64)."""
        fn = self.fn
        d = t.dtype
        work = f64 if (via_f64 or d == f64) else f32
        cname = name if work == f64 else name + "f"
        wty, sty = scalar_type(work), scalar_type(d)
        conv_in = "fpext" if d.bits < work.bits else None
        conv_out = "fptrunc" if d.bits < work.bits else None

        def one(xs: list[str]) -> str:
            xs = [fn.op(f"{conv_in} {sty} {x} to {wty}") if conv_in else x for x in xs]
            r = self._call(cname, wty, [(wty, x) for x in xs])
            return self._fptrunc(r, Type(work), Type(d)) if conv_out else r
        if t.width == 1:
            return one(args)
        vec = "poison"
        for i in range(t.width):
            parts = [fn.op(f"extractelement {ltype(t)} {a}, i64 {i}") for a in args]
            vec = fn.op(f"insertelement {ltype(t)} {vec}, {sty} {one(parts)}, i64 {i}")
        return vec

    def _pure(self, op: Op, a: list[str]) -> str:
        code = op.opcode
        fn = self.fn
        if code in COMPARE:
            return self._compare(code, a[0], a[1], op.args[0].type)
        t = op.result.type
        ty = ltype(t)
        if code in UNARY:
            return self._unary(code, a[0], t)
        if code in BINARY:
            return self._binary(code, a[0], a[1], t)
        if code == "fma":
            if t.dtype.is_float and t.dtype.bits == 16:  # in f64 (exact product), rounded once to f16
                wt = Type(f64, t.width)
                w = [fn.op(f"fpext {ty} {v} to {ltype(wt)}") for v in a]
                prod = fn.op(f"fmul {ltype(wt)} {w[0]}, {w[1]}")
                return self._fptrunc(fn.op(f"fadd {ltype(wt)} {prod}, {w[2]}"), wt, t)
            if t.dtype.is_float:
                return self._intrinsic("fma", t, a)
            return self._binary("add", self._binary("mul", a[0], a[1], t), a[2], t)
        if code == "select":
            cty = ltype(op.args[0].type)
            return fn.op(f"select {cty} {a[0]}, {ty} {a[1]}, {ty} {a[2]}")
        if code == "cast":
            return self._cast(a[0], op.args[0].type, t)
        if code == "broadcast":
            sty = ltype(op.args[0].type)
            one = fn.op(f"insertelement {ty} poison, {sty} {a[0]}, i64 0")
            return fn.op(f"shufflevector {ty} {one}, {ty} poison, <{t.width} x i32> zeroinitializer")
        if code == "extract":
            return fn.op(f"extractelement {ltype(op.args[0].type)} {a[0]}, i64 {op.attrs['index']}")
        if code == "insert":
            return fn.op(f"insertelement {ty} {a[0]}, {ltype(op.args[1].type)} {a[1]}, i64 {op.attrs['index']}")
        raise CpuCompileError(f"opcode {code!r} is not supported", self.k.name, op.loc)

    def _compare(self, code: str, x: str, y: str, t: Type) -> str:
        ty = ltype(t)
        d = t.dtype
        if d.is_float:
            pred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}[code]
            return self.fn.op(f"fcmp {self._flags()}{pred} {ty} {x}, {y}")
        s = "s" if d.is_signed and not d.is_bool else "u"
        pred = {"eq": "eq", "ne": "ne", "lt": f"{s}lt", "le": f"{s}le", "gt": f"{s}gt", "ge": f"{s}ge"}[code]
        return self.fn.op(f"icmp {pred} {ty} {x}, {y}")

    def _unary(self, code: str, x: str, t: Type) -> str:
        fn, ty, d = self.fn, ltype(t), t.dtype
        if code == "neg":
            return fn.op(f"fneg {self._flags()}{ty} {x}") if d.is_float else fn.op(f"sub {ty} {const(t, 0)}, {x}")
        if code in ("not", "invert"):
            return fn.op(f"xor {ty} {x}, {const(t, -1 if not d.is_bool else True)}")
        if code == "abs":
            if d.is_float:
                return self._intrinsic("fabs", t, [x])
            if d.is_bool or not d.is_signed:
                return x
            name = f"llvm.abs.{mangle(t)}"
            return self._call(name, ty, [(ty, x), ("i1", "false")])
        if not d.is_float:
            raise CpuCompileError(f"{code} needs a float operand, got {t}", self.k.name, None)
        if code in ("sqrt", "floor", "ceil"):
            return self._intrinsic(code, t, [x])
        if code == "rsqrt":
            s = self._intrinsic("sqrt", t, [x])
            return fn.op(f"fdiv {self._flags()}{ty} {const(t, 1.0)}, {s}")
        if code in ("exp", "log", "sin", "cos"):
            if d.bits == 16:
                return self._libm(code, t, [x])
            return self._intrinsic(code, t, [x])
        if code == "tanh":
            return self._libm("tanh", t, [x])
        if code == "erf":
            return self._libm("erf", t, [x], via_f64=True)
        raise CpuCompileError(f"unary {code!r} is not supported", self.k.name, None)

    def _binary(self, code: str, x: str, y: str, t: Type) -> str:
        fn, ty, d = self.fn, ltype(t), t.dtype
        fl = self._flags()
        if d.is_float:
            simple = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
            if code in simple:
                return fn.op(f"{simple[code]} {fl}{ty} {x}, {y}")
            if code in ("min", "max"):
                return self._intrinsic("minimum" if code == "min" else "maximum", t, [x, y])
            if code == "pow":
                return self._intrinsic("pow", t, [x, y]) if d.bits > 16 else self._libm("pow", t, [x, y])
            if code in ("floordiv", "mod"):
                return self._float_divmod(code, x, y, t)
            raise CpuCompileError(f"{code} on {t} is not supported", self.k.name, None)
        if d.is_bool:
            booly = {"add": "or", "mul": "and", "min": "and", "max": "or", "and": "and", "or": "or",
                     "xor": "xor", "sub": "xor"}
            if code in booly:
                return fn.op(f"{booly[code]} {ty} {x}, {y}")
            raise CpuCompileError(f"{code} on bool is not supported", self.k.name, None)
        simple = {"add": "add", "sub": "sub", "mul": "mul", "and": "and", "or": "or", "xor": "xor"}
        if code in simple:
            return fn.op(f"{simple[code]} {ty} {x}, {y}")
        if code in ("min", "max"):
            s = "s" if d.is_signed else "u"
            return self._intrinsic(f"{s}{code}", t, [x, y])
        if code in ("shl", "shr"):
            m = fn.op(f"and {ty} {y}, {const(t, d.bits - 1)}")
            inst = "shl" if code == "shl" else ("ashr" if d.is_signed else "lshr")
            return fn.op(f"{inst} {ty} {x}, {m}")
        if code in ("floordiv", "mod"):
            return self._int_divmod(code, x, y, t)
        if code == "div":
            raise CpuCompileError("integer true division reached the backend", self.k.name, None)
        raise CpuCompileError(f"{code} on {t} is not supported", self.k.name, None)

    def _int_divmod(self, code: str, a: str, b: str, t: Type) -> str:
        fn, ty = self.fn, ltype(t)
        bt = ltype(t.with_dtype(bool_))
        zero, one = const(t, 0), const(t, 1)
        z = fn.op(f"icmp eq {ty} {b}, {zero}")
        if not t.dtype.is_signed:
            bs = fn.op(f"select {bt} {z}, {ty} {one}, {ty} {b}")
            r = fn.op(f"{'udiv' if code == 'floordiv' else 'urem'} {ty} {a}, {bs}")
            return fn.op(f"select {bt} {z}, {ty} {zero}, {ty} {r}")
        m1 = fn.op(f"icmp eq {ty} {b}, {const(t, -1)}")
        bad = fn.op(f"or {bt} {z}, {m1}")
        bs = fn.op(f"select {bt} {bad}, {ty} {one}, {ty} {b}")
        q = fn.op(f"sdiv {ty} {a}, {bs}")
        r = fn.op(f"srem {ty} {a}, {bs}")
        rnz = fn.op(f"icmp ne {ty} {r}, {zero}")
        neg = fn.op(f"icmp slt {ty} {fn.op(f'xor {ty} {r}, {bs}')}, {zero}")
        adj = fn.op(f"and {bt} {rnz}, {neg}")
        if code == "floordiv":
            q2 = fn.op(f"select {bt} {adj}, {ty} {fn.op(f'sub {ty} {q}, {one}')}, {ty} {q}")
            q3 = fn.op(f"select {bt} {m1}, {ty} {fn.op(f'sub {ty} {zero}, {a}')}, {ty} {q2}")
            return fn.op(f"select {bt} {z}, {ty} {zero}, {ty} {q3}")
        r2 = fn.op(f"select {bt} {adj}, {ty} {fn.op(f'add {ty} {r}, {bs}')}, {ty} {r}")
        return fn.op(f"select {bt} {bad}, {ty} {zero}, {ty} {r2}")

    def _float_divmod(self, code: str, a: str, b: str, t: Type) -> str:
        """NumPy's npy_divmod (Python semantics), f16 computed in f32."""
        fn = self.fn
        if t.dtype.bits == 16:
            wt = Type(f32, t.width)
            wa = fn.op(f"fpext {ltype(t)} {a} to {ltype(wt)}")
            wb = fn.op(f"fpext {ltype(t)} {b} to {ltype(wt)}")
            r = self._float_divmod(code, wa, wb, wt)
            return fn.op(f"fptrunc {ltype(wt)} {r} to {ltype(t)}")
        ty, bt = ltype(t), ltype(t.with_dtype(bool_))
        zero = const(t, 0.0)

        def sel(c, x, y):
            return fn.op(f"select {bt} {c}, {ty} {x}, {ty} {y}")
        mod = fn.op(f"frem {ty} {a}, {b}")
        bzero = fn.op(f"fcmp oeq {ty} {b}, {zero}")
        quot = fn.op(f"fdiv {ty} {a}, {b}")
        div = fn.op(f"fdiv {ty} {fn.op(f'fsub {ty} {a}, {mod}')}, {b}")
        modnz = fn.op(f"fcmp une {ty} {mod}, {zero}")
        differ = fn.op(f"xor {bt} {fn.op(f'fcmp olt {ty} {b}, {zero}')}, {fn.op(f'fcmp olt {ty} {mod}, {zero}')}")
        fix = fn.op(f"and {bt} {modnz}, {differ}")
        mod2 = sel(fix, fn.op(f"fadd {ty} {mod}, {b}"), mod)
        div2 = sel(fix, fn.op(f"fsub {ty} {div}, {const(t, 1.0)}"), div)
        if code == "mod":
            signed_zero = self._intrinsic("copysign", t, [zero, b])
            return sel(bzero, mod, sel(modnz, mod2, signed_zero))
        fl = self._intrinsic("floor", t, [div2])
        gt = fn.op(f"fcmp ogt {ty} {fn.op(f'fsub {ty} {div2}, {fl}')}, {const(t, 0.5)}")
        fl2 = sel(gt, fn.op(f"fadd {ty} {fl}, {const(t, 1.0)}"), fl)
        divnz = fn.op(f"fcmp une {ty} {div2}, {zero}")
        res = sel(divnz, fl2, self._intrinsic("copysign", t, [zero, quot]))
        return sel(bzero, quot, res)

    def _fptrunc(self, x: str, src: Type, dst: Type) -> str:
        """fptrunc, with f64 -> f16 done without a libcall: f64 -> f32 rounding to odd, then
        f32 -> f16 (round to odd keeps the final rounding correct)."""
        fn = self.fn
        sty, dty = ltype(src), ltype(dst)
        if not (src.dtype.bits == 64 and dst.dtype.bits == 16):
            return fn.op(f"fptrunc {sty} {x} to {dty}")
        ft, it = Type(f32, src.width), Type(i32, src.width)
        fty, ity = ltype(ft), ltype(it)
        bt = ltype(src.with_dtype(bool_))
        t = fn.op(f"fptrunc {sty} {x} to {fty}")
        back = fn.op(f"fpext {fty} {t} to {sty}")
        inexact = fn.op(f"fcmp une {sty} {back}, {x}")
        ax = self._intrinsic("fabs", src, [x])
        aback = self._intrinsic("fabs", src, [back])
        up = fn.op(f"fcmp ogt {sty} {aback}, {ax}")
        bits = fn.op(f"bitcast {fty} {t} to {ity}")
        dec = fn.op(f"select {bt} {up}, {ity} {fn.op(f'sub {ity} {bits}, {const(it, 1)}')}, {ity} {bits}")
        odd = fn.op(f"or {ity} {dec}, {const(it, 1)}")
        fixed = fn.op(f"select {bt} {inexact}, {ity} {odd}, {ity} {bits}")
        f = fn.op(f"bitcast {ity} {fixed} to {fty}")
        return fn.op(f"fptrunc {fty} {f} to {dty}")

    def _cast(self, x: str, src: Type, dst: Type) -> str:
        fn = self.fn
        s, d = src.dtype, dst.dtype
        sty, dty = ltype(src), ltype(dst)
        if s == d:
            return x
        if d.is_bool:
            if s.is_float:
                return fn.op(f"fcmp une {sty} {x}, {const(src, 0.0)}")
            return fn.op(f"icmp ne {sty} {x}, {const(src, 0)}")
        if s.is_bool:
            return fn.op(f"{'uitofp' if d.is_float else 'zext'} {sty} {x} to {dty}")
        if s.is_float and d.is_float:
            if s.bits == d.bits:
                return x
            if d.bits > s.bits:
                return fn.op(f"fpext {sty} {x} to {dty}")
            return self._fptrunc(x, src, dst)
        if s.is_float:
            sat = "fptosi.sat" if d.is_signed else "fptoui.sat"
            return self._call(f"llvm.{sat}.{mangle(dst)}.{mangle(src)}", dty, [(sty, x)])
        if d.is_float:
            if d.bits == 16 and s.bits > 16:  # via f32: exact below 2**24, and larger is inf in f16
                wt = Type(f32, dst.width)
                w = fn.op(f"{'sitofp' if s.is_signed else 'uitofp'} {sty} {x} to {ltype(wt)}")
                return fn.op(f"fptrunc {ltype(wt)} {w} to {dty}")
            return fn.op(f"{'sitofp' if s.is_signed else 'uitofp'} {sty} {x} to {dty}")
        if s.bits == d.bits:
            return x
        if d.bits < s.bits:
            return fn.op(f"trunc {sty} {x} to {dty}")
        return fn.op(f"{'sext' if s.is_signed else 'zext'} {sty} {x} to {dty}")


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


__all__ = ["Codegen", "CpuCompileError", "Layout", "argument_slots", "ERR_WORDS", "MAX_OOB_DIMS", "i32", "u64"]
