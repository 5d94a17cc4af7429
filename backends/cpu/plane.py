"""Plane operations: a cube-level loop over planes and lanes."""

from __future__ import annotations

from cubepy.ir.nodes import Op
from cubepy.ir.opcodes import PLANE_COMBINE, PLANE_REDUCE, PLANE_SCANS, PLANE_SOURCE_LANE, PLANE_VOTES, plane_identity
from cubepy.ir.types import Type

from .lanes import Lanes
from .llvmtext import const, ltype


class PlaneMixin:
    def _plane(self, op: Op) -> None:
        """A loop over the cube's planes; in each, a pass over the lanes to combine, and one to
        write every lane's result."""
        fn = self.fn
        code, P, U = op.opcode, self.P, self.U
        t = op.result.type
        x = op.args[0] if op.args else None
        pvar, base, (head, _, done) = fn.loop_begin(("p_head", "p_body", "p_done"), U)
        if U % P:
            end = fn.op(f"add i32 {base}, {P}")
            short = fn.op(f"icmp slt i32 {U}, {end}")
            n = fn.op(f"select i1 {short}, i32 {fn.op(f'sub i32 {U}, {base}')}, i32 {P}")
        else:
            n = str(P)

        def lanes(fn_lane):
            """for l in range(n): u = base + l; fn_lane(l, u, valid)"""
            lv, lane, (h, _, e) = fn.loop_begin(("l_head", "l_work", "l_done"), n)
            u = fn.op(f"add i32 {base}, {lane}")
            valid = fn.op(f"icmp eq i32 {self._status(u)}, 0") if self.need_status else "true"
            self.lanes, self.regs = Lanes.unit(u), {}
            fn_lane(lane, u, valid)
            self.lanes = Lanes.unit(None)
            fn.loop_end(lv, lane, h, e)

        def write_all(value_fn):
            def each(lane, u, valid):
                self._store_slot(op.result, u, value_fn(lane, u, valid))
            lanes(each)

        rty = ltype(t)
        if code in PLANE_REDUCE or code in PLANE_VOTES:
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
                    new = self._binary(PLANE_COMBINE[code], cur, xv, t)
                fn.emit(f"store {rty} {fn.op(f'select i1 {valid}, {rty} {new}, {rty} {cur}')}, ptr {acc}")
            lanes(combine)
            total = fn.op(f"load {rty}, ptr {acc}")
            write_all(lambda lane, u, valid: total)
        elif code in PLANE_SCANS:
            acc = fn.alloca(rty)
            fn.emit(f"store {rty} {const(t, 0)}, ptr {acc}")

            def scan(lane, u, valid):
                xv = fn.op(f"select i1 {valid}, {rty} {self._get(x)}, {rty} {const(t, 0)}")
                cur = fn.op(f"load {rty}, ptr {acc}")
                new = self._binary(PLANE_COMBINE[code], cur, xv, t)
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
                inst, left, right = PLANE_SOURCE_LANE[code]
                operand = {"a": a, "lane": l64, "last": P - 1}
                src = fn.op(f"{inst} i64 {operand[left]}, {operand[right]}")
                n64 = n if n == str(P) else fn.op(f"zext i32 {n} to i64")
                ge0 = fn.op(f"icmp sge i64 {src}, 0")
                inside = fn.op(f"and i1 {ge0}, {fn.op(f'icmp slt i64 {src}, {n64}')}")
                src_c = fn.op(f"select i1 {inside}, i64 {src}, i64 {l64}")
                su = fn.op(f"add i32 {base}, {fn.op(f'trunc i64 {src_c} to i32')}")
                ok = inside
                if self.need_status:
                    ok = fn.op(f"and i1 {inside}, {fn.op(f'icmp eq i32 {self._status(su)}, 0')}")
                mine = self._get(x)
                self.lanes, self.regs = Lanes.unit(su), {}
                other = self._get(x)
                self.lanes, self.regs = Lanes.unit(u), {}
                self._store_slot(op.result, u, fn.op(f"select i1 {ok}, {rty} {other}, {rty} {mine}"))
            lanes(shuffle)
        fn.loop_end(pvar, base, head, done, P)

    def _identity(self, code: str, t: Type) -> str:
        return const(t, plane_identity(code, t.dtype))
