"""Gangs: a region's units emitted VF at a time as LLVM vectors under masks (see DESIGN.md).

LLVM's loop vectorizer only vectorizes innermost loops, so a unit loop whose body holds a loop
(a per-unit ``for``) would run one unit at a time. Such regions are emitted here instead, SPMD
style: every IR value is a ``<VF x T>`` vector holding VF consecutive units, control flow runs
under an active-lane mask (an ``if`` runs each side whose mask is not empty; a loop runs while
any lane is active; break/continue/return clear lanes), and memory accesses are masked loads and
stores when the lanes' addresses turn out consecutive at run time, else gathers and scatters.
Lanes execute each op in lockstep, which is a valid order for the units of a region (they run
concurrently between barriers; the interpreter runs them in lockstep too).
"""

from __future__ import annotations

import math

from cubepy.ir.nodes import Block, Const, Op, Var, walk
from cubepy.ir.opcodes import LINE_OPS, PURE

from .common import RET
from .lanes import Lanes
from .llvmtext import ltype, mangle

# how many loop iterations ahead a gang prefetches a grid-stride load (see _gprefetch)
PREFETCH_AHEAD = 16


class GangMixin:
    # --- eligibility ----------------------------------------------------------------------

    def _gang_ok(self, ops: list[Op]) -> bool:
        """Regions holding a loop whose ops all have a gang lowering (no atomics, no Lines,
        no break/continue of a cube-level loop)."""
        if self.VF <= 1:
            return False
        has_loop = False

        def scalar(x) -> bool:
            return not hasattr(x, "type") or x.type is None or getattr(x.type, "width", 1) == 1

        def ok(op: Op, depth: int) -> bool:
            nonlocal has_loop
            if op.opcode == "atomic" or op.opcode in LINE_OPS:
                return False
            if op.opcode in ("break", "continue") and depth == 0:
                return False
            if op.result is not None and op.result.type.width > 1:
                return False
            if not all(scalar(a) for a in op.args):
                return False
            if op.opcode in ("for", "loop"):
                has_loop = True
                depth += 1
                if op.opcode == "for" and op.attrs["var"].type.width > 1:
                    return False
            return all(ok(o, depth) for b in op.blocks for o in b.ops)
        return all(ok(op, 0) for op in ops) and has_loop and self._gang_accesses_contiguous(ops)

    def _gang_accesses_contiguous(self, ops: list[Op]) -> bool:
        """A heuristic (correctness never depends on it): inside the region's loops, does every
        load/store index look uniform or consecutive across units? Otherwise (e.g. each unit
        walking its own chunk) a gang would gather from VF distant places per step, and one unit
        at a time streams better."""
        UNI, CONS, VARY = 0, 1, 2
        shape: dict[int, int] = {}
        var_shape: dict[int, int] = {}

        def sh(a) -> int:
            if isinstance(a, Const) or a.id in self.invariant:
                return UNI
            if isinstance(a, Var):
                return var_shape.get(a.id, UNI)
            return shape.get(a.id, VARY)

        def visit(op: Op) -> None:
            code = op.opcode
            if op.result is not None:
                args = [sh(a) for a in op.args]
                if op.result.id in self.remat:
                    r = CONS if self.remat[op.result.id] == "unit_pos_x" or self.dims[0] == self.U else VARY
                elif code == "load_var":
                    r = sh(op.args[0])
                elif code in ("add", "sub") and max(args, default=UNI) <= CONS and args.count(CONS) <= 1 \
                        and (code == "add" or args[-1] == UNI):
                    r = max(args)
                elif code == "cast" and args[0] <= CONS and op.args[0].type.dtype.bits <= op.result.type.dtype.bits:
                    r = args[0]
                elif code in PURE and all(x == UNI for x in args):
                    r = UNI
                else:
                    r = VARY
                shape[op.result.id] = r
            if code == "store_var":
                var_shape[op.args[0].id] = max(var_shape.get(op.args[0].id, UNI), sh(op.args[1]))
            if code == "for":
                v = op.attrs["var"].id
                var_shape[v] = max(var_shape.get(v, UNI), sh(op.args[0]), CONS * 2 * (sh(op.args[2]) != UNI))
            for b in op.blocks:
                for o in b.ops:
                    visit(o)

        for _ in range(3):              # variables: a few rounds to a fixed point
            for op in ops:
                visit(op)

        def accesses(op: Op, in_loop: bool) -> bool:
            if in_loop and op.opcode in ("load", "store"):
                n = op.args[0].ndim if op.args[0].shape is None else len(op.args[0].shape)
                idx = [sh(a) for a in op.args[1:1 + n]]
                if idx[-1] == VARY or any(x != UNI for x in idx[:-1]):
                    return False
            inner = in_loop or op.opcode in ("for", "loop")
            return all(accesses(o, inner) for b in op.blocks for o in b.ops)
        return all(accesses(op, False) for op in ops)

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

    def _vcall(self, name: str, args: list[tuple[str, str]]) -> None:
        self._decl(name, "void", [a for a, _ in args])
        self.fn.emit(f"call void @{name}({', '.join(f'{a} {b}' for a, b in args)})")

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

    # --- software prefetch ----------------------------------------------------------------

    def _def_ops(self, ops: list[Op]) -> dict:
        """value id -> defining op; var id -> the ops storing to it, in the region ``ops`` (a
        versioned kernel stores each variable once per version)."""
        out: dict = {}
        for o in (inner for op in ops for inner in walk(Block([op]))):
            if o.result is not None:
                out[o.result.id] = o
            if o.opcode == "store_var":
                out.setdefault(("var", o.args[0].id), []).append(o)
        return out

    def _gstep(self, op: Op):
        """(counter var, scalar step) of a gang ``for`` with a cube-invariant step, else None."""
        if op.opcode != "for":
            return None
        step = op.args[2]
        if not (isinstance(step, Const) or step.id in self.invariant):
            return None
        return op.attrs["var"], self._get_cube(step)

    def _moves_with(self, v, var, depth: int = 0) -> bool:
        """Heuristic: does ``v`` equal the counter ``var`` plus something invariant (through copies
        into other variables, adds of invariants and widening casts)? Only used for prefetching."""
        if depth > 8 or isinstance(v, Const) or v.id in self.invariant:
            return False
        o = self._gdefs.get(v.id)
        if o is None:
            return False
        if o.opcode == "load_var":
            w = o.args[0]
            if w.id == var.id:
                return True
            stores = self._gdefs.get(("var", w.id), [])
            return len(stores) == 1 and self._moves_with(stores[0].args[1], var, depth + 1)
        if o.opcode == "cast":
            return self._moves_with(o.args[0], var, depth + 1)
        if o.opcode in ("add", "sub"):
            inv = [isinstance(a, Const) or a.id in self.invariant for a in o.args]
            if inv[1]:
                return self._moves_with(o.args[0], var, depth + 1)
            return o.opcode == "add" and inv[0] and self._moves_with(o.args[1], var, depth + 1)
        return False

    def _gprefetch(self, base: str, sty: str, d0: str, indices, al: int) -> None:
        """A gang load inside a ``for`` whose last index moves with the loop's counter by an
        invariant step (a grid-stride loop): prefetch the lines this gang reads PREFETCH_AHEAD
        iterations later. A strided walk (one gang's few lines, then a jump of a whole grid) is
        invisible to the hardware prefetchers, so without this every step waits for DRAM."""
        if not self.gsteps or self.gsteps[-1] is None or len(indices) != 1:
            return
        var, step = self.gsteps[-1]
        if not self._moves_with(indices[-1], var):
            return
        fn = self.fn
        s64 = fn.op(f"sext i32 {step} to i64")
        ahead = fn.op(f"add i64 {d0}, {fn.op(f'mul i64 {s64}, {PREFETCH_AHEAD}')}")
        q = fn.op(f"getelementptr {sty}, ptr {base}, i64 {ahead}")
        self._decl("llvm.prefetch.p0", "void", ["ptr", "i32", "i32", "i32"])
        for off in range(0, self.VF * al, 64):
            qq = fn.op(f"getelementptr i8, ptr {q}, i64 {off}")
            fn.emit(f"call void @llvm.prefetch.p0(ptr {qq}, i32 0, i32 3, i32 1)")

    # --- memory ---------------------------------------------------------------------------

    def _glin(self, buf, indices) -> str:
        """The <VF x i64> linear element offsets of buf[indices] (local memory: this unit's copy)."""
        fn, lanes = self.fn, self.lanes
        v64 = lanes.vector("i64")
        idx = [fn.op(f"sext {lanes.vector('i32')} {self._get(i)} to {v64}") for i in indices]
        if buf.kind == "global":
            dims = [lanes.splat(fn, fn.op(f"zext i32 %s{buf.param_index}_{d} to i64"), "i64") for d in range(buf.ndim)]
        else:
            dims = [lanes.splat(fn, str(s), "i64") for s in buf.shape]
        lin = idx[0]
        for i, d in zip(idx[1:], dims[1:]):
            lin = fn.op(f"add {v64} {fn.op(f'mul {v64} {lin}, {d}')}, {i}")
        if buf.kind == "local":
            per = lanes.splat(fn, str(math.prod(buf.shape)), "i64")
            u64 = fn.op(f"zext {lanes.vector('i32')} {lanes.units} to {v64}")
            lin = fn.op(f"add {v64} {fn.op(f'mul {v64} {u64}, {per}')}, {lin}")
        return lin

    def _gaccess(self, buf, indices, value):
        """A masked load (value None) or store of buf[indices] for the active lanes: a vector
        load/store when their element offsets are consecutive, else a gather/scatter."""
        fn, VF, lanes = self.fn, self.VF, self.lanes
        mt, et = lanes.vector("i1"), lanes.of(buf.type)
        vty, sty = ltype(et, True), ltype(buf.type, True)
        v64 = lanes.vector("i64")
        base = f"%b{buf.param_index}" if buf.kind == "global" else self._ws(self.buf_off[buf.id])
        m = self.mask
        al = buf.type.dtype.itemsize
        bits = fn.op(f"bitcast {mt} {m} to i{VF}")
        lane = self._call(f"llvm.cttz.i{VF}", f"i{VF}", [(f"i{VF}", bits), ("i1", "false")])
        lane = fn.op(f"and i{VF} {lane}, {VF - 1}")
        flat = len(indices) == 1 and buf.kind != "local"
        if flat:
            # one index: check in i32 (a quarter of the work of i64 on 64 lanes); the lanes are
            # consecutive iff idx - lane is one d0 for all active lanes and d0 + VF - 1 does not wrap
            v32 = lanes.vector("i32")
            i32v = self._get(indices[0])
            d = fn.op(f"sub {v32} {i32v}, {lanes.iota('i32')}")
            d32 = fn.op(f"extractelement {v32} {d}, i{VF} {lane}")
            same = fn.op(f"icmp eq {v32} {d}, {lanes.splat(fn, d32, 'i32')}")
            nowrap = fn.op(f"icmp sle i32 {d32}, {2**31 - VF}")
            d0 = fn.op(f"sext i32 {d32} to i64")
        else:
            lin = self._glin(buf, indices)
            # consecutive? d = lin - lane is the same for every active lane
            d = fn.op(f"sub {v64} {lin}, {lanes.iota('i64')}")
            d0 = fn.op(f"extractelement {v64} {d}, i{VF} {lane}")
            same = fn.op(f"icmp eq {v64} {d}, {lanes.splat(fn, d0, 'i64')}")
            nowrap = None
        ok = fn.op(f"or {mt} {same}, {self._mnot(m)}")
        allsame = fn.op(f"icmp eq i{VF} {fn.op(f'bitcast {mt} {ok} to i{VF}')}, -1")
        if nowrap is not None:
            allsame = fn.op(f"and i1 {allsame}, {nowrap}")
        vec_l, gat_l, end = fn.label("ga_vec"), fn.label("ga_gather"), fn.label("ga_end")
        res = fn.alloca(vty, 64) if value is None else None
        mem_v = self._to_mem(value, et) if value is not None else None
        vm = mangle(et, True)
        fn.cbr(allsame, vec_l, gat_l)
        fn.block(vec_l)
        p = fn.op(f"getelementptr {sty}, ptr {base}, i64 {d0}")
        if value is None:
            self._gprefetch(base, sty, d0, indices, al)
            r = self._call(f"llvm.masked.load.{vm}.p0", vty,
                           [(f"ptr align {al}", p), (mt, m), (vty, "zeroinitializer")])
            fn.emit(f"store {vty} {r}, ptr {res}")
        else:
            self._vcall(f"llvm.masked.store.{vm}.p0", [(vty, mem_v), (f"ptr align {al}", p), (mt, m)])
        fn.br(end)
        fn.block(gat_l)
        if flat:
            lin = self._glin(buf, indices)
        ps = fn.op(f"getelementptr {sty}, ptr {base}, {v64} {lin}")
        pv = lanes.vector("ptr")
        if value is None:
            r = self._call(f"llvm.masked.gather.{vm}.v{VF}p0", vty,
                           [(f"{pv} align {al}", ps), (mt, m), (vty, "zeroinitializer")])
            fn.emit(f"store {vty} {r}, ptr {res}")
        else:
            self._vcall(f"llvm.masked.scatter.{vm}.v{VF}p0", [(vty, mem_v), (f"{pv} align {al}", ps), (mt, m)])
        fn.br(end)
        fn.block(end)
        if value is None:
            return self._from_mem(fn.op(f"load {vty}, ptr {res}"), et)
        return None


def const_mask(n: int, value: bool) -> str:
    return "<" + ", ".join([f"i1 {'true' if value else 'false'}"] * n) + ">"

