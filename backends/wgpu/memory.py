"""Memory in WGSL: arrays some atomic op touches, atomics and the ``report_oob`` error record (a mixin
of `wgsl.WgslRenderer`, over the C-style renderer's `cstyle.memory`, which renders the parameters,
extents, built-in positions, loads and stores).

WGSL atomics are types: an array some atomic op touches is declared ``array<atomic<i32|u32>>``
and every access of it is atomic (f32 as its bits in u32). What no atomic function does (f32, narrow
integers, compare-and-swap, whose weak form may fail spuriously) is a compare-exchange loop.
"""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import Buffer, Op
from cubepy.ir.types import DType, i32

from ..cstyle.memory import Memory, position_words
from ..cstyle.rendered import EXTENT_WORDS, INDEX_WORDS
from .dialect import ATOMIC_FUNCTIONS, NARROW


class WgslMemory(Memory):
    """Atomic arrays, the error record and atomics; the rest is the C-style renderer's."""

    # --- atomic arrays --------------------------------------------------------------------

    def _from_word(self, word: str, dtype: DType) -> str:
        """A value of ``dtype`` from what an atomic array holds (floats: their bits)."""
        return f"bitcast<{self._c(dtype)}>({word})" if dtype.is_float else word

    def _to_word(self, value: str, dtype: DType) -> str:
        return f"bitcast<u{dtype.bits}>({value})" if dtype.is_float else value

    def _read(self, buf: Buffer, ref: str) -> str:
        return self._from_word(f"atomicLoad(&{ref})", buf.type.dtype) if buf.id in self.atomic_buffers else ref

    def _write(self, buf: Buffer, ref: str, value: str) -> None:
        if buf.id not in self.atomic_buffers:
            return super()._write(buf, ref, value)
        self._line(f"atomicStore(&{ref}, {self._to_word(value, buf.type.dtype)});")

    # --- the out-of-bounds report ---------------------------------------------------------

    def _index_words(self, v: str, dtype: DType) -> tuple[str, str]:
        if dtype.bits == 64:
            return f"bitcast<i32>(u32(u64({v}) & 0xfffffffflu))", f"bitcast<i32>(u32(u64({v}) >> 32u))"
        if dtype.is_signed:
            return f"i32({v})", f"select(0i, -1i, {v} < 0i)"
        return f"bitcast<i32>(u32({v}))", "0i"

    def _report(self, site: int, n: int, index_words: list[str], extents: list[str]) -> None:
        """The record written in place (WGSL has no pointer to a storage buffer to pass to a function)."""
        stores = [(1, self._lit(site, i32)), *position_words(self.d.builtins)]
        stores += [(INDEX_WORDS + j, w) for j, w in enumerate(index_words)]
        stores += [(EXTENT_WORDS + j, e) for j, e in enumerate(extents)]
        self._line("loop {  // the first out-of-bounds access of the launch wins")
        self._line("  let cb_claim = atomicCompareExchangeWeak(&cb_err[0], 0i, 1i);")
        self._line("  if (cb_claim.exchanged) {")
        for j, w in stores:
            self._line(f"    atomicStore(&cb_err[{j}], {w});")
        self._line("    break;")
        self._line("  }")
        self._line("  if (cb_claim.old_value != 0i) { break; }")
        self._line("}")

    # --- atomics --------------------------------------------------------------------------

    def _atomic_word(self, buf: Buffer) -> str:
        """The atomic type of an array's elements, or an error naming what WGSL cannot do."""
        dt = buf.type.dtype
        if buf.type.width != 1:
            raise CubeTypeError(f"atomics work on scalar elements, not Lines (array '{buf.name}')", self.k.name)
        if dt.is_bool or dt.name == "f16" or (dt.bits == 64 and not self.atomics64):
            more = ", and 64-bit ones where the adapter has shader-int64-atomic-all-ops" if not self.atomics64 else ""
            raise CubeTypeError(f"the WebGPU backend has atomics on 32-bit elements and narrower integers{more}, "
                                f"not on {dt} (array '{buf.name}'); use an i32, u32 or f32 array", self.k.name)
        bits = max(32, dt.bits)
        return f"atomic<u{bits}>" if dt.is_float or not dt.is_signed else f"atomic<i{bits}>"

    def _op_atomic(self, op: Op) -> None:
        buf, kind = op.args[0], op.attrs["op"]
        nvals = 2 if kind == "cas" else 1
        dt = buf.type.dtype
        t = self._c(dt)
        ref = self._ref(buf, op.args[1:-nvals])
        vals = [self._arg(a) for a in op.args[-nvals:]]
        result = self._name(op.result) if op.result is not None else self._unique("cb_old")
        native = ATOMIC_FUNCTIONS.get(kind)
        if buf.kind == "local":       # private to the unit: a plain read-modify-write
            self._line(f"let {result}: {t} = {ref};")
            self._line(f"{ref} = {self._atomic_new(kind, dt, result, vals)};")
        elif native is not None and (dt.is_int and dt.name not in NARROW or kind == "exchange"):
            call = f"{native}(&{ref}, {self._to_word(vals[0], dt)})"
            self._line(f"let {result}: {t} = {self._from_word(call, dt)};")
        elif kind == "cas" and dt.is_int and dt.name not in NARROW:
            self._line(f"var {result}: {t};")
            self._line("loop {")
            self._line(f"  let cb_r = atomicCompareExchangeWeak(&{ref}, {vals[0]}, {vals[1]});")
            self._line(f"  if (cb_r.exchanged || cb_r.old_value != {vals[0]}) {{ {result} = cb_r.old_value; break; }}")
            self._line("}")
        else:
            seen = self._unique("cb_seen")
            self._line(f"var {result}: {t};")
            self._line(f"var {seen} = atomicLoad(&{ref});")
            self._line("loop {")
            self._line(f"  let cb_cur: {t} = {self._from_word(seen, dt)};")
            self._line(f"  let cb_new: {t} = {self._atomic_new(kind, dt, 'cb_cur', vals)};")
            self._line(f"  let cb_r = atomicCompareExchangeWeak(&{ref}, {seen}, {self._to_word('cb_new', dt)});")
            self._line(f"  if (cb_r.exchanged) {{ {result} = cb_cur; break; }}")
            self._line(f"  {seen} = cb_r.old_value;")
            self._line("}")

    def _atomic_new(self, kind: str, dtype: DType, cur: str, vals: list[str]) -> str:
        if kind == "cas":
            return f"select({cur}, {vals[1]}, {cur} == {vals[0]})"
        if kind == "exchange":
            return vals[0]
        return self._binary(kind, dtype, cur, vals[0])


__all__ = ["WgslMemory"]
