"""One unit at a time inside a region: buffer accesses, atomics and real branches for control flow.

Everything else a unit does goes through the width-independent emitter (region.py) at width 1.
"""

from __future__ import annotations

from cubepy.ir.nodes import Op

from .common import RET, CpuCompileError, _code


class UnitMixin:
    def _unit_flow(self, op: Op) -> None:
        """A buffer access, atomic or control-flow op of one unit."""
        code = op.opcode
        fn = self.fn
        if code == "load":
            buf = op.args[0]
            p, _ = self._address(buf, op.args[1:])
            self._define(op.result, self._load_lanes(p, buf.type))
        elif code == "store":
            buf = op.args[0]
            p, _ = self._address(buf, op.args[1:-1])
            self._store_lanes(p, buf.type, self._get(op.args[-1]))
        elif code == "atomic":
            self._atomic(op)
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
            self._region_op(o)
        fn.br(m)
        fn.block(e)
        self.regs = dict(regs)
        if len(op.blocks) > 1:
            for o in op.blocks[1].ops:
                self._region_op(o)
        fn.br(m)
        fn.block(m)
        self.regs = regs

    def _unit_loop_op(self, op: Op) -> None:
        fn = self.fn
        head, body, latch, done = (fn.label(x) for x in ("l_head", "l_body", "l_latch", "l_done"))
        var, stop = self._for_start(op)
        fn.block(head)
        regs = self.regs
        self.regs = dict(regs)
        if var is not None:
            fn.cbr(self._for_cond(self._load_var(var), stop, op.args[2]), body, done)
        fn.block(body)
        self.loops.append(("unit", done, latch))
        for o in op.blocks[0].ops:
            self._region_op(o)
        self.loops.pop()
        fn.block(latch)
        self.regs = dict(regs)
        if var is not None:
            self._for_next(var, op.args[2])
        fn.br(head)
        fn.block(done)
        self.regs = regs
