"""Where values come from and go: parameters, extents and built-in positions; array and variable loads
and stores; atomics (native or CAS loops); the ``report_oob`` error record (a mixin of `renderer._Renderer`,
and of the WGSL renderer, which overrides the hooks `_read`, `_write`, `_store_line`, `_index_words`,
`_report` and the atomics)."""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import Buffer, Op
from cubepy.ir.opcodes import UNIT_BUILTINS
from cubepy.ir.types import DTYPES_BY_NAME, DType, Type, i32

from .rendered import EXTENT_WORDS, INDEX_WORDS, add_oob_site


def position_words(builtins: dict[str, str]) -> list[tuple[int, str]]:
    """The error record's words 2-7 (unit x y z, cube x y z) as ``(word, expression)``."""
    return [(2 + k, builtins[f"{s}_{a}"]) for k, (s, a) in enumerate((s, a) for s in ("unit_pos", "cube_pos")
                                                                      for a in "xyz")]


class Memory:
    """Inputs, loads, stores, atomics and the out-of-bounds report; the renderer provides ``names``
    (arrays, variables, ``("param", index)``) and ``extents`` ((array id, axis) -> its extent)."""

    # --- inputs ---------------------------------------------------------------------------

    def _op_builtin(self, op: Op) -> None:
        name = op.attrs["name"]
        if name == "plane_dim":
            expr = self._lit(self.P, i32)
        elif name == "unit_pos_plane":
            expr = "cb_lane"
        elif self.opaque_loops and name in UNIT_BUILTINS:
            expr = f"cb_{name}"             # a volatile read: see renderer._Renderer._declare_unit_state
        elif name[-1] in self.count_axes and name[:-2] in ("cube_pos", "cube_count"):
            expr = f"CB_{name.upper()}"       # 0 or 1 in a build for one cube along the axis
        elif name in self.d.builtins:
            expr = self.d.builtins[name]
        else:       # a cube extent the dialect has no builtin for (WGSL's): the kernel's, a constant
            expr = self._lit(self.k.cube_dim["xyz".index(name[-1])], i32)
        self._define(op, lambda i: expr)

    def _op_param(self, op: Op) -> None:
        name = self.names[("param", op.attrs["index"])]
        dt = op.result.type.dtype
        held = self.d.param_storage.get(dt.name)
        expr = name if held is None else self._cast(name, DTYPES_BY_NAME[held], dt)
        self._define(op, lambda i: expr)

    def _op_launch_in_bounds(self, op: Op) -> None:
        self._define(op, lambda i: "CB_LAUNCH_OK")

    def _op_shape(self, op: Op) -> None:
        extent = self.extents[(op.args[0].id, op.attrs["dim"])]
        self._define(op, lambda i: extent)

    # --- arrays and variables -------------------------------------------------------------

    def _ref(self, buf: Buffer, indices) -> str:
        """The element of ``buf`` at ``indices`` (row-major)."""
        idx = [self._arg(a) for a in indices]
        flat = idx[0] if idx else self._lit(0, i32)
        for dim, i in enumerate(idx[1:], start=1):
            extent = self._lit(buf.shape[dim], i32) if buf.shape is not None else self.extents[(buf.id, dim)]
            flat = f"({flat}) * {extent} + {i}"
        return f"{self.names[buf.id]}[{flat}]"

    def _read(self, buf: Buffer, ref: str) -> str:
        """The value of the element ``ref`` of ``buf``."""
        return ref

    def _write(self, buf: Buffer, ref: str, value: str) -> None:
        self._line(f"{ref} = {value};")

    def _op_load(self, op: Op) -> None:
        buf = op.args[0]
        ref = self._ref(buf, op.args[1:])
        st = self._storage(buf.type)
        if st == buf.type:
            self._let(self._name(op.result), self._vt(buf.type), self._read(buf, ref))
            return
        raw = self._unique(f"{self._name(op.result)}_raw")
        self._let(raw, self._vt(st), ref)
        self._define(op, lambda i: self._cast(self._el(raw, st, i), st.dtype, buf.type.dtype))

    def _op_store(self, op: Op) -> None:
        buf, value = op.args[0], op.args[-1]
        ref = self._ref(buf, op.args[1:-1])
        st = self._storage(buf.type)
        if st == buf.type:
            self._write(buf, ref, self._arg(value))
        elif st.width == 1:
            self._line(f"{ref} = {self._cast(self._arg(value), buf.type.dtype, st.dtype)};")
        else:
            self._store_line(ref, st, lambda i: self._cast(self._arg(value, i), buf.type.dtype, st.dtype))

    def _store_line(self, ref: str, t: Type, element) -> None:
        """Store at ``ref`` the Line of type ``t`` whose elements are ``element(i)``."""
        held = self._unique("cb_store")
        self._define_line(held, t, element)
        self._line(f"{ref} = {held};")

    def _op_load_var(self, op: Op) -> None:
        self._let(self._name(op.result), self._vt(op.result.type), self.names[op.args[0].id])

    def _op_store_var(self, op: Op) -> None:
        self._line(f"{self.names[op.args[0].id]} = {self._arg(op.args[1])};")

    # --- the out-of-bounds report ---------------------------------------------------------

    def _op_report_oob(self, op: Op) -> None:
        site, n, indices = add_oob_site(op, self.sites, self.k.name)
        words = [self._index_words(self._arg(a), a.type.dtype) for a in indices]
        self._report(site, n, [w for pair in words for w in pair], [self._arg(a) for a in op.args[n:]])

    def _report(self, site: int, n: int, index_words: list[str], extents: list[str]) -> None:
        """Record the out-of-bounds access ``site`` (its index words, low and high per axis, and its
        extents): a call of one function per rank, one line at each site instead of a
        compare-and-swap and a dozen stores (the fuzzer's kernels hold hundreds of sites)."""
        name = self._helper(f"cb_oob{n}", self._report_fn(n))
        self._line(f"{name}(cb_err, {', '.join([self._lit(site, i32), *index_words, *extents])});")

    def _report_fn(self, n: int) -> str:
        d = self.d
        b = d.builtins
        axes = range(n)
        params = ", ".join(["int site", *(f"int lo{j}, int hi{j}" for j in axes), *(f"int n{j}" for j in axes)])
        stores = [(1, "site"), *position_words(b)]
        for j in axes:
            stores += [(INDEX_WORDS + 2 * j, f"lo{j}"), (INDEX_WORDS + 2 * j + 1, f"hi{j}"),
                       (EXTENT_WORDS + j, f"n{j}")]
        cas = d.cas[32].format(p="&cb_err[0]", cmp="0", v="1")
        body = "".join(f"    cb_err[{w}] = {v};\n" for w, v in stores)
        return (f"{d.report_fn} void cb_oob{n}({d.global_q}int* cb_err, {params}) {{\n"
                f"  if ({cas} == 0) {{  // the first out-of-bounds access of the launch wins\n{body}  }}\n}}")

    def _index_words(self, v: str, dtype: DType) -> tuple[str, str]:
        """The index ``v`` as two int32 words: low, high (a narrower index sign-extended)."""
        u32, u64 = self._c(DTYPES_BY_NAME["u32"]), self._c(DTYPES_BY_NAME["u64"])
        high = f"(int)({u32})(({u64})({v}) >> 32)" if dtype.bits == 64 else f"({v} < 0 ? -1 : 0)"
        return f"(int)({u32})({v})", high

    # --- atomics --------------------------------------------------------------------------

    def _op_atomic(self, op: Op) -> None:
        buf, kind = op.args[0], op.attrs["op"]
        nvals = 2 if kind == "cas" else 1
        if buf.type.width != 1:
            raise CubeTypeError("atomics work on scalar elements, not Lines", self.k.name, op.loc)
        ref = self._ref(buf, op.args[1:-nvals])
        helper = self._atomic_helper(kind, buf.type.dtype, buf.kind)
        vals = ", ".join(self._arg(a) for a in op.args[-nvals:])
        if op.result is not None:
            self._let(self._name(op.result), self._vt(op.result.type), f"{helper}(&{ref}, {vals})")
        else:
            self._line(f"{helper}(&{ref}, {vals});")

    def _atomic_helper(self, kind: str, dtype: DType, space: str) -> str:
        d = self.d
        if dtype.is_bool:
            raise CubeTypeError("atomics on bool arrays are not supported", self.k.name)
        name = f"cb_atomic_{kind}_{dtype.name}_{space}"
        if name in self.helpers:
            return name
        q = {"global": d.global_q, "shared": d.local_q}.get(space, "")
        ct = self._c(dtype)
        args = f"{q}{ct}* p, {ct} c, {ct} v" if kind == "cas" else f"{q}{ct}* p, {ct} v"
        new = ("(cur == c ? v : cur)" if kind == "cas" else "v" if kind == "exchange"
               else self._binary({"and": "and", "or": "or", "xor": "xor"}.get(kind, kind), dtype, "cur", "v"))
        native = d.atomics.get((kind, dtype.name))
        if space == "local":        # private to the unit: a plain read-modify-write
            body = f"{ct} cur = *p;\n  *p = {new};\n  return cur;"
        elif native is not None:
            body = f"return {native.format(p='p', v='v', cmp='c')};"
        elif dtype.bits >= 32:
            w = DTYPES_BY_NAME[f"u{dtype.bits}"]
            wt = self._c(w)
            cas = d.cas[dtype.bits].format(p=f"({q}{wt}*)p", cmp="assumed", v=d.bitcast.format(to=wt, x="nv"))
            body = (f"{wt} old = *({q}volatile {wt}*)p, assumed;\n  {ct} cur;\n"
                    f"  do {{\n    assumed = old;\n    cur = {d.bitcast.format(to=ct, x='assumed')};\n"
                    f"    const {ct} nv = {new};\n    old = {cas};\n  }} while (old != assumed);\n  return cur;")
        else:
            u = DTYPES_BY_NAME[f"u{dtype.bits}"]
            ut, wt = self._c(u), self._c(DTYPES_BY_NAME["u32"])
            bits_of = d.bitcast.format(to=ut, x="nv") if dtype.is_float else f"({ut})nv"
            from_bits = (d.bitcast.format(to=ct, x=f"({ut})((assumed >> sh) & {(1 << dtype.bits) - 1}u)")
                         if dtype.is_float else self._wrap(f"(assumed >> sh) & {(1 << dtype.bits) - 1}u", dtype))
            cas = d.cas[32].format(p="wp", cmp="assumed", v=f"(assumed & ~m) | ((({wt}){bits_of} << sh) & m)")
            body = (f"{q}{wt}* wp = ({q}{wt}*)(({d.size_t})p & ~({d.size_t})3);\n"
                    f"  const int sh = (int)((({d.size_t})p & 3) * 8);\n"
                    f"  const {wt} m = {(1 << dtype.bits) - 1}u << sh;\n"
                    f"  {wt} old = *({q}volatile {wt}*)wp, assumed;\n  {ct} cur;\n"
                    f"  do {{\n    assumed = old;\n    cur = {from_bits};\n    const {ct} nv = {new};\n"
                    f"    old = {cas};\n  }} while (old != assumed);\n  return cur;")
        return self._helper(name, f"{d.device_fn} {ct} {name}({args}) {{\n  {body}\n}}")


__all__ = ["Memory"]
