"""Where values come from and go in WGSL: scalar parameters and extents (fields of one argument
struct), built-in positions, array and variable loads and stores, atomics and the ``report_oob``
error record (a mixin of `wgsl.WgslRenderer`).

WGSL atomics are types: an array some atomic op touches is declared ``array<atomic<i32|u32>>``
and every access of it is atomic (f32 as its bits in u32). What no atomic function does (f32, narrow
integers, compare-and-swap, whose weak form may fail spuriously) is a compare-exchange loop.
"""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import Buffer, Op
from cubepy.ir.types import DTYPES_BY_NAME, DType

from ..cstyle.rendered import EXTENT_WORDS, INDEX_WORDS, add_oob_site
from .dialect import ATOMIC_FUNCTIONS, NARROW


class WgslMemory:
    """Inputs, loads, stores, atomics and the out-of-bounds report."""

    # --- inputs ---------------------------------------------------------------------------

    def _op_builtin(self, op: Op) -> None:
        name = op.attrs["name"]
        if name == "plane_dim":
            expr = self._lit(self.P, DTYPES_BY_NAME["i32"])
        elif name == "unit_pos_plane":
            expr = "cb_lane"
        elif name.startswith("cube_dim_"):
            expr = self._lit(self.k.cube_dim["xyz".index(name[-1])], DTYPES_BY_NAME["i32"])
        else:
            expr = self.d.builtins[name]
        self._define(op, lambda i: expr)

    def _op_param(self, op: Op) -> None:
        field = f"cb_args.{self.names[('param', op.attrs['index'])]}"
        dt = op.result.type.dtype
        expr = f"({field} != 0u)" if dt.is_bool else f"f16({field})" if dt.name == "f16" else field
        self._define(op, lambda i: expr)

    def _op_shape(self, op: Op) -> None:
        field = self.extents[(op.args[0].id, op.attrs["dim"])]
        self._define(op, lambda i: f"cb_args.{field}")

    # --- arrays and variables -------------------------------------------------------------

    def _index(self, buf: Buffer, indices) -> str:
        idx = [self._arg(a) for a in indices]
        if not idx:
            return "0i"
        flat = idx[0]
        for dim, i in enumerate(idx[1:], start=1):
            extent = str(buf.shape[dim]) + "i" if buf.shape is not None else f"cb_args.{self.extents[(buf.id, dim)]}"
            flat = f"({flat}) * {extent} + {i}"
        return flat

    def _ref(self, buf: Buffer, indices) -> str:
        return f"{self.names[buf.id]}[{self._index(buf, indices)}]"

    def _from_word(self, word: str, dtype: DType) -> str:
        """A value of ``dtype`` from what an atomic array holds (floats: their bits)."""
        return f"bitcast<{self._c(dtype)}>({word})" if dtype.is_float else word

    def _to_word(self, value: str, dtype: DType) -> str:
        return f"bitcast<u{dtype.bits}>({value})" if dtype.is_float else value

    def _op_load(self, op: Op) -> None:
        buf = op.args[0]
        ref = self._ref(buf, op.args[1:])
        name, t = self._name(op.result), buf.type
        if buf.id in self.atomic_buffers:
            self._line(f"let {name}: {self._vt(t)} = {self._from_word(f'atomicLoad(&{ref})', t.dtype)};")
            return
        st = self._storage(t)
        if st == t:
            self._line(f"let {name}: {self._vt(t)} = {ref};")
            return
        raw = self._unique(f"{name}_raw")
        self._line(f"let {raw}: {self._vt(st)} = {ref};")
        self._define(op, lambda i: f"({self._el(raw, st, i)} != 0u)")

    def _op_store(self, op: Op) -> None:
        buf, value = op.args[0], op.args[-1]
        ref = self._ref(buf, op.args[1:-1])
        t = buf.type
        if buf.id in self.atomic_buffers:
            self._line(f"atomicStore(&{ref}, {self._to_word(self._arg(value), t.dtype)});")
            return
        st = self._storage(t)
        if st == t:
            self._line(f"{ref} = {self._arg(value)};")
        elif st.width == 1:
            self._line(f"{ref} = select(0u, 1u, {self._arg(value)});")
        else:
            items = ", ".join(f"select(0u, 1u, {self._arg(value, i)})" for i in range(st.width))
            self._line(f"{ref} = {self._vt(st)}({items});")

    def _op_load_var(self, op: Op) -> None:
        self._line(f"let {self._name(op.result)}: {self._vt(op.result.type)} = {self.names[op.args[0].id]};")

    def _op_store_var(self, op: Op) -> None:
        self._line(f"{self.names[op.args[0].id]} = {self._arg(op.args[1])};")

    # --- the out-of-bounds report ---------------------------------------------------------

    def _op_report_oob(self, op: Op) -> None:
        site, n, indices = add_oob_site(op, self.sites, self.k.name)
        words = [f"{site}i"] + [self.d.builtins[f"{k}_{a}"] for k in ("unit_pos", "cube_pos") for a in "xyz"]
        for a in indices:
            v, dt = self._arg(a), a.type.dtype
            if dt.bits == 64:
                words += [f"bitcast<i32>(u32(u64({v}) & 0xfffffffflu))", f"bitcast<i32>(u32(u64({v}) >> 32u))"]
            elif dt.is_signed:
                words += [f"i32({v})", f"select(0i, -1i, {v} < 0i)"]
            else:
                words += [f"bitcast<i32>(u32({v}))", "0i"]
        stores = [(j + 1, w) for j, w in enumerate(words[:7])]
        stores += [(INDEX_WORDS + j, w) for j, w in enumerate(words[7:])]
        stores += [(EXTENT_WORDS + j, self._arg(a)) for j, a in enumerate(op.args[n:])]
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
