"""Unit-level lowering inside a region: values, slots, variables and structured control flow."""

from __future__ import annotations

from cubepy.ir.nodes import (
    Const,
    Op,
    Value,
    Var,
)
from cubepy.ir.opcodes import PURE
from cubepy.ir.types import Type

from .common import RET, CpuCompileError, _code
from .llvmtext import const, ltype


class UnitMixin:
    gang = False                # emitting a gang (gang.py) rather than one unit

    def _get_cube(self, v) -> str:
        if isinstance(v, Const):
            return const(v.type, v.value)
        return self.inv[v.id]

    def _get(self, v) -> str:
        if self.gang:
            return self._gget(v)
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
        if self.gang:
            return self._gdefine(v, r)
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
