"""Cube-level lowering: regions as unit loops, status words, masked and uniform control flow around barriers."""

from __future__ import annotations

from cubepy.ir.nodes import (
    PLANE_OPS,
    Block,
    Const,
    Op,
)

from .common import CpuCompileError, _code
from .lanes import Lanes

# A unit loop whose body is at most this many lines of LLVM IR gets the unroll count of
# `_unit_loop_md`. Measured on the RAJAPerf plain ports (docs/benchmarks.md, the sixteenth
# session): saxpy's 22 lines were unrolled whole without it (1.13x numba), LTIMES' 101 to 199 ran
# 15% faster with it, and MATVEC_3D_STENCIL's 531 ran 9% slower (an unroll LLVM did not choose).
SMALL_BODY_LINES = 256


class CubeMixin:
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
        if self._gang_ok(ops):
            self._gang_region(ops)
            return

        def body():
            for op in ops:
                self._region_op(op)
        self._oob_region_begin(ops)
        self._unit_loop(body, records=True)
        self._oob_region_end()

    def _unit_loop(self, body, all_units: bool = False, records: bool = False) -> None:
        """for u in range(U): (if status[u] == 0:) body() -- body may branch to self.unit_end.

        A cube of more than one row is a nest, rows outside, a row's units inside (u = row *
        dim_x + x): the inner loop walks unit_pos_x, so an index built from ABSOLUTE_POS_X is
        contiguous there and LLVM vectorizes it (one flat loop took the position apart with a
        division and remainder per unit and stayed scalar)."""
        fn = self.fn
        dx, dy, dz = self.dims
        rows = None
        if dy * dz > 1 and dx > 1:
            rvar, row, (rhead, _, rdone) = fn.loop_begin(("row_head", "row_work", "row_done"), dy * dz)
            uvar, x, (head, _, latch, done) = fn.loop_begin(("u_head", "u_work", "u_latch", "u_done"), dx)
            u = fn.op(f"add nsw i32 {fn.op(f'mul nsw i32 {row}, {dx}')}, {x}")
            rows = (rvar, row, rhead, rdone)
            pos = {"unit_pos_x": x, "unit_pos_y": fn.op(f"urem i32 {row}, {dy}"),
                   "unit_pos_z": fn.op(f"udiv i32 {row}, {dy}")}
        else:
            uvar, u, (head, _, latch, done) = fn.loop_begin(("u_head", "u_work", "u_latch", "u_done"), self.U)
            x, pos = u, None
        saved = self.lanes, self.regs, getattr(self, "unit_end", None), self.unit_pos
        self.lanes, self.regs, self.unit_end, self.unit_pos = Lanes.unit(u), {}, latch, pos
        if records:
            self._oob_unit_begin()
        if self.need_status and not all_units:
            go = fn.label("u_go")
            fn.cbr(fn.op(f"icmp eq i32 {self._status(u)}, 0"), go, latch)
            fn.block(go)
        emitted = len(fn.lines)
        body()
        small = len(fn.lines) - emitted <= SMALL_BODY_LINES
        fn.block(latch)
        if records:
            self._oob_unit_end(u)
        fn.loop_end(uvar, x, head, done, loop_md=self._unit_loop_md() if small else None)
        if rows is not None:
            rvar, row, rhead, rdone = rows
            fn.loop_end(rvar, row, rhead, rdone)
        self.lanes, self.regs, self.unit_end, self.unit_pos = saved

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
            s = self._status(self.lanes.first)
            new = s
            for old, to in mapping.items():
                new = self.fn.op(f"select i1 {self.fn.op(f'icmp eq i32 {s}, {old}')}, i32 {to}, i32 {new}")
            self._set_status(self.lanes.first, new)
        self._unit_loop(body, all_units=True)

    def _any_running(self) -> str:
        """An i1: does any unit have status 0?"""
        fn = self.fn
        acc = fn.alloca("i1", 1)
        fn.emit(f"store i1 false, ptr {acc}")

        def body():
            z = fn.op(f"icmp eq i32 {self._status(self.lanes.first)}, 0")
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
            self.lanes, self.regs = Lanes.unit("0"), {}
            r = self._get(v)
            self.lanes = Lanes.unit(None)
            return r, None
        idx = fn.alloca("i32", 4)
        fn.emit(f"store i32 {self.U}, ptr {idx}")
        uvar, u, (head, _, found, latch, done) = fn.loop_begin(("f_head", "f_work", "f_found", "f_latch", "f_done"),
                                                                self.U)
        fn.cbr(fn.op(f"icmp eq i32 {self._status(u)}, 0"), found, latch)
        fn.block(found)
        fn.emit(f"store i32 {u}, ptr {idx}")
        fn.br(done)
        fn.block(latch)
        fn.loop_end(uvar, u, head, done)
        first = fn.op(f"load i32, ptr {idx}")
        has = fn.op(f"icmp slt i32 {first}, {self.U}")
        safe = fn.op(f"select i1 {has}, i32 {first}, i32 0")
        self.lanes, self.regs = Lanes.unit(safe), {}
        r = self._get(v)
        self.lanes = Lanes.unit(None)
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
            # the cube's checks, decided at its top: the per-unit checked copy is the cold way
            fn.cbr(c, lt_, le_, prof=self._likely_md() if op.attrs.get("cube_checks") else None)
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
            self._set_status(self.lanes.first, skip)
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
                self._set_status(self.lanes.first, brk)
                fn.block(go)
            self._unit_loop(check)
        fn.cbr(self._any_running(), body, done)
        fn.block(body)
        self.loops.append(("cube", d))
        self._cube_block(op.blocks[0])
        self.loops.pop()

        def latch():
            s = self._status(self.lanes.first)
            s2 = fn.op(f"select i1 {fn.op(f'icmp eq i32 {s}, {cont}')}, i32 0, i32 {s}")
            self._set_status(self.lanes.first, s2)
            if var is not None:
                inc, skip = fn.label("cl_inc"), fn.label("cl_skip")
                fn.cbr(fn.op(f"icmp eq i32 {s2}, 0"), inc, skip)
                fn.block(inc)
                self._for_next(var, step)
                fn.block(skip)
        self._unit_loop(latch, all_units=True)
        fn.br(head)
        fn.block(done)
        self._remap_status({brk: 0, cont: 0})
        self.depth -= 1
