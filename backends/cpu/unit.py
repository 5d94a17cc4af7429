"""One unit at a time inside a region: its ops, with real branches for structured control flow."""

from __future__ import annotations

from cubepy.ir.nodes import Op
from cubepy.ir.opcodes import PURE

from .common import RET, CpuCompileError, _code


class UnitMixin:
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
                self._set_status(self.lanes.first, _code(top[1], 0 if code == "break" else 1))
                fn.br(self.unit_end)
        elif code == "return":
            if self.need_status:
                self._set_status(self.lanes.first, RET)
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
            self._get(step)             # before the loop: the head and the latch find it in self.regs
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
            self._for_next(var, step)
        fn.br(head)
        fn.block(done)
        self.regs = regs
