"""Addresses of buffer elements, atomics and out-of-bounds reports."""

from __future__ import annotations

import math

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import (
    Buffer,
    Const,
    Op,
)
from cubepy.ir.types import Type

from .llvmtext import ltype


class MemoryMixin:
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
            u64_ = fn.op(f"zext i32 {self.lanes.first} to i64")
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
        elif d.is_float and kind in ("min", "max"):
            old = self._atomic_float_extreme(kind, p, mty, vals[0], t)
        else:
            if d.is_float:
                rmw = {"add": "fadd", "sub": "fsub", "exchange": "xchg"}.get(kind)
            else:
                signed = d.is_signed
                rmw = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor", "exchange": "xchg",
                       "min": "min" if signed else "umin", "max": "max" if signed else "umax"}.get(kind)
            if rmw is None:
                raise CubeTypeError(f"atomic {kind} on {d} is not supported", self.k.name, op.loc)
            old = fn.op(f"atomicrmw {rmw} ptr {p}, {mty} {vals[0]} monotonic, align {d.itemsize}")
        if op.result is not None:
            self._define(op.result, self._from_mem(old, t))

    def _atomic_float_extreme(self, kind: str, p: str, mty: str, v: str, t: Type) -> str:
        """Float atomic min/max as a compare-and-swap loop on the bit pattern, with the min/max
        of every other float op (NaN wins, -0.0 < +0.0); ``atomicrmw fmin`` would drop NaNs."""
        fn = self.fn
        ity = f"i{t.dtype.bits}"
        cur = fn.alloca(ity, t.dtype.itemsize)
        fn.emit(f"store {ity} {fn.op(f'load atomic {ity}, ptr {p} monotonic, align {t.dtype.itemsize}')}, ptr {cur}")
        head, done = fn.label("atomic_retry"), fn.label("atomic_done")
        fn.block(head)
        seen = fn.op(f"load {ity}, ptr {cur}")
        new = self._binary(kind, fn.op(f"bitcast {ity} {seen} to {mty}"), v, t)
        pair = fn.op(f"cmpxchg ptr {p}, {ity} {seen}, {ity} {fn.op(f'bitcast {mty} {new} to {ity}')} "
                     "monotonic monotonic")
        fn.emit(f"store {ity} {fn.op(f'extractvalue {{ {ity}, i1 }} {pair}, 0')}, ptr {cur}")
        fn.cbr(fn.op(f"extractvalue {{ {ity}, i1 }} {pair}, 1"), done, head)
        fn.block(done)
        return fn.op(f"bitcast {ity} {seen} to {mty}")
