"""A gang's buffer accesses: masked loads and stores, gathers and scatters, and prefetches."""

from __future__ import annotations

import math

from cubepy.ir.nodes import Block, Const, Op, walk

from .llvmtext import ltype, mangle, masked_pointer

# how many loop iterations ahead a gang prefetches a grid-stride load (see _gprefetch)
PREFETCH_AHEAD = 16


class GangAccessMixin:
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
        load/store when their element offsets are consecutive; a load of one element on every
        lane when they are all the same (a table read in a loop every lane runs in step, FIR's
        ``coeff[j]``); else a gather/scatter."""
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
        if not self.masks_memory:
            # without native masking a masked access is a slow instruction of its own: every lane
            # active (a loop's usual step) takes a plain vector load or store instead
            full_l, part_l = fn.label("ga_full"), fn.label("ga_part")
            fn.cbr(fn.op(f"icmp eq i{VF} {bits}, -1"), full_l, part_l)
            fn.block(full_l)
            if value is None:
                fn.emit(f"store {vty} {fn.op(f'load {vty}, ptr {p}, align {al}')}, ptr {res}")
            else:
                fn.emit(f"store {vty} {mem_v}, ptr {p}, align {al}")
            fn.br(end)
            fn.block(part_l)
        if value is None:
            r = self._call(f"llvm.masked.load.{vm}.p0", vty,
                           [*masked_pointer("ptr", p, al), (mt, m), (vty, "zeroinitializer")])
            fn.emit(f"store {vty} {r}, ptr {res}")
        else:
            self._vcall(f"llvm.masked.store.{vm}.p0", [(vty, mem_v), *masked_pointer("ptr", p, al), (mt, m)])
        fn.br(end)
        fn.block(gat_l)
        if flat:
            lin = self._glin(buf, indices)
        if value is None:
            uni_l, gat_l = fn.label("ga_uniform"), fn.label("ga_gather")
            one = fn.op(f"extractelement {v64} {lin}, i{VF} {lane}")
            same = fn.op(f"icmp eq {v64} {lin}, {lanes.splat(fn, one, 'i64')}")
            ok = fn.op(f"or {mt} {same}, {self._mnot(m)}")
            fn.cbr(fn.op(f"icmp eq i{VF} {fn.op(f'bitcast {mt} {ok} to i{VF}')}, -1"), uni_l, gat_l)
            fn.block(uni_l)
            x = fn.op(f"load {sty}, ptr {fn.op(f'getelementptr {sty}, ptr {base}, i64 {one}')}, align {al}")
            fn.emit(f"store {vty} {lanes.splat(fn, x, sty)}, ptr {res}")
            fn.br(end)
            fn.block(gat_l)
        ps = fn.op(f"getelementptr {sty}, ptr {base}, {v64} {lin}")
        pv = lanes.vector("ptr")
        if value is None:
            r = self._call(f"llvm.masked.gather.{vm}.v{VF}p0", vty,
                           [*masked_pointer(pv, ps, al), (mt, m), (vty, "zeroinitializer")])
            fn.emit(f"store {vty} {r}, ptr {res}")
        else:
            self._vcall(f"llvm.masked.scatter.{vm}.v{VF}p0", [(vty, mem_v), *masked_pointer(pv, ps, al), (mt, m)])
        fn.br(end)
        fn.block(end)
        if value is None:
            return self._from_mem(fn.op(f"load {vty}, ptr {res}"), et)
        return None


    def _vcall(self, name: str, args: list[tuple[str, str]]) -> None:
        self._decl(name, "void", [a for a, _ in args])
        self.fn.emit(f"call void @{name}({', '.join(f'{a} {b}' for a, b in args)})")

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
