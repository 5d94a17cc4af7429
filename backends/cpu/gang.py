"""Gangs: a region's units emitted VF at a time as LLVM vectors under masks (see DESIGN.md).

LLVM's loop vectorizer only vectorizes innermost loops, so a unit loop whose body holds a loop
(a per-unit ``for``) would run one unit at a time. Such regions (gang_choice.py) are emitted here
instead, SPMD style: every IR value is a ``<VF x T>`` vector holding VF consecutive units (the
width-independent emitter of region.py does most ops), control flow runs under an active-lane
mask (an ``if`` runs each side whose mask is not empty; a loop runs while any lane is active;
break/continue/return clear lanes), and buffer accesses are masked loads and stores when the
lanes' addresses turn out consecutive at run time, else gathers and scatters (gang_access.py).
Lanes execute each op in lockstep, which is a valid order for the units of a region (they run
concurrently between barriers; the interpreter runs them in lockstep too).
"""

from __future__ import annotations

from cubepy.ir.nodes import Op, Var

from .common import RET
from .lanes import Lanes
from .llvmtext import ltype


class GangMixin:
    # --- masks ----------------------------------------------------------------------------

    def _any(self, m: str) -> str:
        fn = self.fn
        bits = fn.op(f"bitcast {self.lanes.vector('i1')} {m} to i{self.VF}")
        return fn.op(f"icmp ne i{self.VF} {bits}, 0")

    def _mand(self, a: str, b: str) -> str:
        return self.fn.op(f"and {self.lanes.vector('i1')} {a}, {b}")

    def _mnot(self, a: str) -> str:
        return self.fn.op(f"xor {self.lanes.vector('i1')} {a}, {const_mask(self.VF, True)}")

    def _mor_into(self, p: str, m: str) -> None:
        fn, mt = self.fn, self.lanes.vector("i1")
        cur = fn.op(f"load {mt}, ptr {p}")
        fn.emit(f"store {mt} {fn.op(f'or {mt} {cur}, {m}')}, ptr {p}")

    # --- the gang loop --------------------------------------------------------------------

    def _gang_region(self, ops: list[Op]) -> None:
        fn, VF = self.fn, self.VF
        self._oob_region_begin(ops, VF)
        gvar, g, (head, _, latch, done) = fn.loop_begin(("g_head", "g_work", "g_latch", "g_done"), self.U)
        saved = self.lanes, self.regs
        lanes = self.lanes = Lanes.gang(fn, g, VF)
        self.regs = {}
        vt, mt = lanes.vector("i32"), lanes.vector("i1")
        m = const_mask(VF, True)
        if self.U % VF:
            m = fn.op(f"icmp slt {vt} {lanes.units}, {lanes.splat(fn, str(self.U), 'i32')}")
        if self.need_status:
            s = fn.op(f"load {vt}, ptr {self._status_ptr(g)}, align 4")
            m = self._mand(m, fn.op(f"icmp eq {vt} {s}, zeroinitializer"))
        self._oob_unit_begin()
        # variables kept in slots live in registers for the gang's duration (copied in and out)
        copied = []
        for var in self._gang_slot_vars(ops):
            mty = ltype(lanes.of(var.type), True)
            p = self._slot_ptr(var.id, g)
            local = fn.alloca(mty, lanes.align)
            fn.emit(f"store {mty} {fn.op(f'load {mty}, ptr {p}, align {var.type.dtype.itemsize}')}, ptr {local}")
            copied.append((p, local, mty, var.type.dtype.itemsize))
            self.slot_local[var.id] = local
        self.gone = fn.alloca(mt, lanes.align)
        fn.emit(f"store {mt} zeroinitializer, ptr {self.gone}")
        self.gloops: list = []
        self.gsteps: list = []
        self._gdefs = self._def_ops(ops)
        self.mask = m
        go = fn.label("g_go")
        fn.cbr(self._any(m), go, latch)
        fn.block(go)
        self._gblock(ops, m)
        fn.br(latch)
        fn.block(latch)
        for p, local, mty, al in copied:
            fn.emit(f"store {mty} {fn.op(f'load {mty}, ptr {local}')}, ptr {p}, align {al}")
        self.slot_local = {}
        self._oob_unit_end(g)
        fn.loop_end(gvar, g, head, done, VF)
        self.lanes, self.regs = saved
        self.mask = None
        self._oob_region_end()

    def _gang_slot_vars(self, ops: list[Op]) -> list[Var]:
        seen: dict[int, Var] = {}

        def visit(op: Op) -> None:
            for a in list(op.args) + ([op.attrs["var"]] if op.opcode == "for" else []):
                if isinstance(a, Var) and a.id in self.slot_off:
                    seen[a.id] = a
            for b in op.blocks:
                for o in b.ops:
                    visit(o)
        for op in ops:
            visit(op)
        return list(seen.values())

    def _gblock(self, ops, entry_mask: str) -> None:
        """Emit ops under ``entry_mask``; after each control construct the mask loses the lanes
        that left (return, break, continue)."""
        self.mask = entry_mask
        for op in ops:
            self._region_op(op)
            if op.blocks or op.opcode in ("break", "continue", "return"):
                self.mask = self._mand(entry_mask, self._mnot(self._left()))

    def _left(self) -> str:
        fn, mt = self.fn, self.lanes.vector("i1")
        out = fn.op(f"load {mt}, ptr {self.gone}")
        if self.gloops:
            brk, cont = self.gloops[-1]
            out = fn.op(f"or {mt} {out}, {fn.op(f'load {mt}, ptr {brk}')}")
            out = fn.op(f"or {mt} {out}, {fn.op(f'load {mt}, ptr {cont}')}")
        return out

    def _gang_flow(self, op: Op) -> None:
        """A buffer access or control-flow op of a gang, under the active-lane mask."""
        code, fn, lanes = op.opcode, self.fn, self.lanes
        if code == "load":
            self._define(op.result, self._gaccess(op.args[0], op.args[1:], None))
        elif code == "store":
            self._gaccess(op.args[0], op.args[1:-1], self._get(op.args[-1]))
        elif code == "if":
            self._gif(op)
        elif code in ("for", "loop"):
            self._gloop(op)
        elif code in ("break", "continue"):
            brk, cont = self.gloops[-1]
            p = brk if code == "break" else cont
            self._mor_into(p, self.mask)
            self.mask = "zeroinitializer"
        elif code == "return":
            if self.need_status:
                st, vt, mt = self._status_ptr(lanes.first), lanes.vector("i32"), lanes.vector("i1")
                old = fn.op(f"load {vt}, ptr {st}, align 4")
                new = fn.op(f"select {mt} {self.mask}, {vt} {lanes.splat(fn, str(RET), 'i32')}, {vt} {old}")
                fn.emit(f"store {vt} {new}, ptr {st}, align 4")
            self._mor_into(self.gone, self.mask)
            self.mask = "zeroinitializer"
        else:  # pragma: no cover - excluded by _gang_ok
            raise self._internal(op)

    def _gif(self, op: Op) -> None:
        if "run_checks" in op.attrs:
            self._gversioned(op)
            return
        fn = self.fn
        c = self._get(op.args[0])
        m = self.mask
        sides = [(op.blocks[0], self._mand(m, c))]
        if len(op.blocks) > 1 and op.blocks[1].ops:
            sides.append((op.blocks[1], self._mand(m, self._mnot(c))))
        regs = self.regs
        for block, sm in sides:
            yes, end = fn.label("gif_run"), fn.label("gif_end")
            fn.cbr(self._any(sm), yes, end)
            fn.block(yes)
            self.regs = dict(regs)
            self._gblock(block.ops, sm)
            fn.br(end)
            fn.block(end)
        self.regs = regs
        self.mask = m

    def _gversioned(self, op: Op) -> None:
        """A versioned run (cubepy/ir/run_checks.py): both sides compute the same values, the
        second with each access checked, so the gang takes one side for all its active lanes: the
        unchecked one unless a lane's test fails. Under the gang's own mask, often all lanes, the
        fast side's accesses stay whole-vector loads; split by lane, each would be masked."""
        fn, m = self.fn, self.mask
        failed = self._mand(m, self._mnot(self._get(op.args[0])))
        fast, checked, end = fn.label("gv_fast"), fn.label("gv_checked"), fn.label("gv_end")
        # the checked side runs only where an index is out of range (the per-cube version switch
        # never reaches a gang: cube.py runs it at cube level)
        fn.cbr(self._any(failed), checked, fast, prof=self._unlikely_md())
        regs = self.regs
        for label, block in ((fast, op.blocks[0]), (checked, op.blocks[1])):
            fn.block(label)
            self.regs = dict(regs)
            self._gblock(block.ops, m)
            fn.br(end)
        fn.block(end)
        self.regs = regs
        self.mask = m

    def _gloop(self, op: Op) -> None:
        fn, mt = self.fn, self.lanes.vector("i1")
        entry = self.mask
        var, stop = self._for_start(op)
        act = fn.alloca(mt, 64)
        brk, cont = fn.alloca(mt, 64), fn.alloca(mt, 64)
        for p in (brk, cont):
            fn.emit(f"store {mt} zeroinitializer, ptr {p}")
        fn.emit(f"store {mt} {entry}, ptr {act}")
        head, body, done = fn.label("gl_head"), fn.label("gl_body"), fn.label("gl_done")
        fn.block(head)
        regs = self.regs
        self.regs = dict(regs)
        a = fn.op(f"load {mt}, ptr {act}")
        if var is not None:
            a = self._mand(a, self._for_cond(self._load_var(var), stop, op.args[2]))
            fn.emit(f"store {mt} {a}, ptr {act}")
        fn.cbr(self._any(a), body, done)
        fn.block(body)
        self.gloops.append((brk, cont))
        self.gsteps.append(self._gstep(op))
        self._gblock(op.blocks[0].ops, a)
        self.gsteps.pop()
        self.gloops.pop()
        self.regs = dict(regs)
        a2 = self._mand(fn.op(f"load {mt}, ptr {act}"), self._mnot(fn.op(f"load {mt}, ptr {brk}")))
        a2 = self._mand(a2, self._mnot(fn.op(f"load {mt}, ptr {self.gone}")))
        fn.emit(f"store {mt} {a2}, ptr {act}")
        fn.emit(f"store {mt} zeroinitializer, ptr {cont}")
        if var is not None:
            self.mask = a2
            self._for_next(var, op.args[2])
        fn.br(head)
        fn.block(done)
        self.regs = regs
        self.mask = entry


def const_mask(n: int, value: bool) -> str:
    return "<" + ", ".join([f"i1 {'true' if value else 'false'}"] * n) + ">"

