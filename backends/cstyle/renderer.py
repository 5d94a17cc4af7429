"""IR -> readable C-family kernel source, one renderer for every `Dialect`.

Each SSA value becomes a typed local (``const float v12 = ...;``), each `Var` a C local declared at
the top, structured control flow maps to ``if``/``for``/``for (;;)`` with ``break``/``continue``/
``return``. Lines are vector types (native ones where the dialect has them, aligned structs
otherwise) loaded and stored whole; arithmetic on them is written element by element. Semantics
the C operators lack (Python's ``//`` and ``%``, wrapping shifts, plane ops, atomics the target
lacks) are small helper functions emitted into the preamble, once each.

Global arrays arrive as pointers followed by their extents (one ``int`` per dimension); a checked
kernel gets one more argument, the device-side error record written by ``report_oob``:
``[flag, site, unit x, y, z, cube x, y, z, index[0..7], extent[0..7]]`` (int32).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import (
    BINARY,
    COMPARE,
    PLANE_OPS,
    PLANE_REDUCE,
    UNARY,
    Block,
    Buffer,
    Const,
    Kernel,
    Op,
    ScalarParam,
    SourceLoc,
    Value,
    Var,
    walk,
)
from cubepy.ir.types import DTYPES_BY_NAME, DType, Type, f32, u64

from .dialect import Dialect

MAX_DIMS = 8
ERROR_WORDS = 8 + 2 * MAX_DIMS

_C_WORDS = set("""auto bool break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while half kernel global local constant private true false class template new delete this namespace
operator private public using virtual and or not xor bitand bitor compl and_eq or_eq not_eq xor_eq
min max abs""".split())


@dataclass(frozen=True)
class ArgSlot:
    """One kernel argument: ``kind`` is "buffer", "shape" (extent ``dim`` of param ``param``),
    "scalar" (passed as NumPy type ``numpy``) or "error" (the error record)."""

    kind: str
    param: int | None = None
    dim: int = 0
    numpy: str = ""


@dataclass(frozen=True)
class OOBSite:
    """A ``report_oob`` of the kernel: which array, its rank, where in the user's source."""

    array: str
    ndim: int
    loc: SourceLoc | None


@dataclass
class Rendered:
    name: str
    source: str
    args: list[ArgSlot]
    sites: list[OOBSite]
    units: int
    plane_dim: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    alignments: dict[int, int] = field(default_factory=dict)   # param index -> byte alignment needed


def render(kernel: Kernel, dialect: Dialect, name: str | None = None) -> Rendered:
    """Render ``kernel`` (bounds checks already lowered) as ``dialect`` source."""
    return _Renderer(kernel, dialect, name).run()


_HALF = ("f16", "bf16")


class _Renderer:
    def __init__(self, kernel: Kernel, dialect: Dialect, name: str | None):
        self.k, self.d = kernel, dialect
        self.P = kernel.plane_dim
        self.units = math.prod(kernel.cube_dim)
        self.entry = name or self._ident(kernel.name)
        self.used: set[str] = set(_C_WORDS) | {self.entry}
        self.names: dict[int, str] = {}
        self.helpers: dict[str, str] = {}
        self.structs: dict[str, str] = {}
        self.body: list[str] = []
        self.depth = 1
        self.sites: list[OOBSite] = []
        self.needs: set[str] = set()
        self.mask_t = self._c(u64 if self.P > 32 else DTYPES_BY_NAME["u32"])
        self.full_mask = "0xffffffffffffffffull" if self.P == 64 else f"0x{(1 << self.P) - 1:x}u"
        if self.P > 32:
            self.full_mask = self._lit((1 << 64) - 1, u64)

    # --- names and types ----------------------------------------------------------------

    @staticmethod
    def _ident(s: str) -> str:
        s = re.sub(r"\W", "_", s or "v")
        return s if not s[0].isdigit() else "_" + s

    def _unique(self, base: str) -> str:
        base = self._ident(base)
        if base.startswith("cb_") or re.fullmatch(r"v\d+", base):
            base = "u_" + base
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def _c(self, dtype: DType) -> str:
        ct = self.d.types.get(dtype.name)
        if ct is None:
            raise CubeTypeError(f"{dtype} is not supported by the {self.d.name} backend", self.k.name, self.k.loc)
        if dtype.name in ("f64", "f16", "bf16"):
            self.needs.add(dtype.name)
        return ct

    def _vt(self, t: Type) -> str:
        """The C type of a value of type ``t`` (a vector or struct type for Lines)."""
        if t.width == 1:
            return self._c(t.dtype)
        native = self.d.vector_types.get((t.dtype.name, t.width))
        if native is not None:
            self._c(t.dtype)
            return native
        name = f"cb_{t.dtype.name}x{t.width}"
        if name not in self.structs:
            size = t.dtype.itemsize * t.width
            align = min(16, size & -size)
            self.structs[name] = self.d.struct_decl.format(name=name, ctype=self._c(t.dtype), width=t.width,
                                                           align=align)
        return name

    def _storage(self, t: Type) -> Type:
        s = self.d.storage.get(t.dtype.name)
        return t if s is None else Type(DTYPES_BY_NAME[s], t.width)

    def _is_native(self, t: Type) -> bool:
        return (t.dtype.name, t.width) in self.d.vector_types

    def _el(self, expr: str, t: Type, i: int | None) -> str:
        if i is None or t.width == 1:
            return expr
        return f"{expr}{self.d.vector_elems[i]}" if self._is_native(t) else f"{expr}.v[{i}]"

    def _name(self, v: Value) -> str:
        n = self.names.get(v.id)
        if n is None:
            n = self.names[v.id] = f"v{v.id}"
        return n

    def _arg(self, a, i: int | None = None) -> str:
        """Operand ``a`` (element ``i`` of a Line) as an expression."""
        if isinstance(a, Const):
            return self._lit(a.value, a.type.dtype)
        if isinstance(a, Var):
            return self._el(self.names[a.id], a.type, i)
        return self._el(self._name(a), a.type, i)

    # --- literals -----------------------------------------------------------------------

    def _lit(self, value, dtype: DType) -> str:
        if dtype.is_bool:
            return "true" if value else "false"
        ct = self._c(dtype)
        if dtype.is_int:
            v = int(value) & ((1 << dtype.bits) - 1)
            if dtype.is_signed and v >= 1 << (dtype.bits - 1):
                v -= 1 << dtype.bits
            suffix = self.d.int_suffix.get(dtype.name, "")
            if dtype.bits < 32:
                return f"(({ct}){v})"
            if dtype.is_signed and v == -(1 << (dtype.bits - 1)):
                return f"(-{-v - 1}{suffix} - 1{suffix})"
            return f"{v}{suffix}" if v >= 0 else f"({v}{suffix})"
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            s = self.d.nan if math.isnan(value) else self.d.inf
            s = s if value > 0 or math.isnan(value) else f"(-{s})"
        else:
            s = repr(value)
            if "e" not in s and "." not in s:
                s += ".0"
            if dtype.name != "f64":
                s += "f"
            elif s.startswith("-"):
                s = f"({s})"
            return s if dtype.name in ("f32", "f64") else f"(({ct}){s})"
        return s if dtype.name == "f32" else f"(({ct}){s})"

    # --- emission -----------------------------------------------------------------------

    def _line(self, s: str) -> None:
        self.body.append("  " * self.depth + s)

    def _helper(self, name: str, code: str) -> str:
        if name not in self.helpers:
            self.helpers[name] = code
        return name

    def _fn(self, name: str, dtype: DType) -> str:
        """A math function for the (float) compute type of ``dtype``."""
        cd = f32 if dtype.name in _HALF else dtype
        self._c(cd)
        return self.d.math[name] + self.d.float_suffix.get(cd.name, "")

    def _define(self, op: Op, element) -> None:
        """Define op.result from ``element(i)``: the scalar expression of element ``i`` (None: scalar)."""
        t = op.result.type
        name = self._name(op.result)
        vt = self._vt(t)
        if t.width == 1:
            self._line(f"const {vt} {name} = {element(None)};")
            return
        self._line(f"{vt} {name};")
        for i in range(t.width):
            self._line(f"{self._el(name, t, i)} = {element(i)};")

    # --- scalar semantics ---------------------------------------------------------------

    def _up(self, x: str, dtype: DType) -> str:
        return f"((float){x})" if dtype.name in _HALF else x

    def _down(self, e: str, dtype: DType) -> str:
        return f"(({self._c(dtype)})({e}))" if dtype.name in _HALF else e

    def _unary(self, code: str, dtype: DType, a: str) -> str:
        if code == "not":
            return f"!{a}"
        if code == "invert":
            return f"~{a}" if not dtype.is_bool else f"!{a}"
        if code == "neg":
            return self._down(f"-{self._up(a, dtype)}", dtype)
        if code == "abs":
            if dtype.is_float:
                return self._down(f"{self._fn('abs', dtype)}({self._up(a, dtype)})", dtype)
            return f"({a} < 0 ? -{a} : {a})" if dtype.is_signed else a
        if not dtype.is_float:
            raise CubeTypeError(f"{code} of {dtype} is not supported", self.k.name)
        return self._down(f"{self._fn(code, dtype)}({self._up(a, dtype)})", dtype)

    def _binary(self, code: str, dtype: DType, a: str, b: str) -> str:
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/", "and": "&", "or": "|", "xor": "^",
               **COMPARE_SYM}.get(code)
        if code in COMPARE:
            return f"{self._up(a, dtype)} {sym} {self._up(b, dtype)}"
        if code in ("and", "or", "xor") and dtype.is_bool:
            return {"and": f"{a} && {b}", "or": f"{a} || {b}", "xor": f"{a} != {b}"}[code]
        if sym is not None:
            if dtype.is_bool:
                return f"(bool)((int){a} {sym} (int){b})"
            return self._down(f"{self._up(a, dtype)} {sym} {self._up(b, dtype)}", dtype)
        if code in ("min", "max"):
            if dtype.is_float:
                return self._down(f"{self._fn(code, dtype)}({self._up(a, dtype)}, {self._up(b, dtype)})", dtype)
            return f"({a} {'<' if code == 'min' else '>'} {b} ? {a} : {b})"
        if code in ("floordiv", "mod", "pow"):
            return f"{self._arith_helper(code, dtype)}({a}, {b})"
        if code in ("shl", "shr"):
            n = f"({b} & {dtype.bits - 1})"
            if code == "shr" or not dtype.is_signed:
                return f"{a} {'<<' if code == 'shl' else '>>'} {n}"
            ut = self._c(DTYPES_BY_NAME[f"u{dtype.bits}"])
            return f"({self._c(dtype)})(({ut}){a} << {n})"
        raise CubeTypeError(f"operation {code} on {dtype} is not supported by the {self.d.name} backend",
                            self.k.name)

    def _arith_helper(self, code: str, dtype: DType) -> str:
        """Python's // and % (integer division by zero gives 0), and integer/float pow."""
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        fn = self.d.device_fn
        ct = self._c(dtype)
        if dtype.is_float:
            ft = "float" if dtype.name in _HALF else ct
            fmod, floor, cps = (self._fn(n, dtype) for n in ("fmod", "floor", "copysign"))
            if code == "pow":
                body = f"return {self._down(f'{self._fn(code, dtype)}(({ft})a, ({ft})b)', dtype)};"
            elif code == "mod":
                body = (f"{ft} x = ({ft})a, y = ({ft})b, m = {fmod}(x, y);\n"
                        f"  if (y == 0) return {self._down('m', dtype)};\n"
                        f"  if (m != 0) {{ if ((y < 0) != (m < 0)) m += y; }} else m = {cps}(({ft})0, y);\n"
                        f"  return {self._down('m', dtype)};")
            else:
                body = (f"{ft} x = ({ft})a, y = ({ft})b, m = {fmod}(x, y);\n"
                        f"  if (y == 0) return {self._down('x / y', dtype)};\n"
                        f"  {ft} d = (x - m) / y;\n"
                        f"  if (m != 0 && ((y < 0) != (m < 0))) d -= 1;\n"
                        f"  {ft} q;\n"
                        f"  if (d != 0) {{ q = {floor}(d); if (d - q > ({ft})0.5) q += 1; }}\n"
                        f"  else q = {cps}(({ft})0, x / y);\n"
                        f"  return {self._down('q', dtype)};")
        elif not dtype.is_signed:
            body = {"floordiv": "return b == 0 ? 0 : a / b;", "mod": "return b == 0 ? 0 : a % b;",
                    "pow": f"{ct} r = 1;\n  while (b) {{ if (b & 1) r *= a; a *= a; b >>= 1; }}\n  return r;"}[code]
        else:
            ut = self._c(DTYPES_BY_NAME[f"u{dtype.bits}"])
            body = {
                "floordiv": (f"if (b == 0) return 0;\n  if (b == -1) return ({ct})(({ut})0 - ({ut})a);\n"
                             f"  {ct} q = a / b;\n  if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;\n  return q;"),
                "mod": (f"if (b == 0 || b == -1) return 0;\n  {ct} r = a % b;\n"
                        f"  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n  return r;"),
                "pow": (f"if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
                        f"  {ut} r = 1, x = ({ut})a;\n"
                        f"  while (b) {{ if (b & 1) r = ({ut})(r * x); x = ({ut})(x * x); b >>= 1; }}\n"
                        f"  return ({ct})r;"),
            }[code]
        return self._helper(name, f"{fn} {ct} {name}({ct} a, {ct} b) {{\n  {body}\n}}")

    def _cast(self, a: str, src: DType, dst: DType) -> str:
        if dst.is_bool:
            return f"({self._up(a, src)} != 0)"
        ct = self._c(dst)
        if src.name in _HALF or dst.name in _HALF:
            return f"(({ct})((float)({a})))"
        return f"(({ct}){a})"

    # --- kernel -------------------------------------------------------------------------

    def run(self) -> Rendered:
        k, d = self.k, self.d
        ops = list(walk(k.body))
        if any(op.opcode == "report_oob" for op in ops):
            self.needs.add("error")
        plane_ops = any(op.opcode in PLANE_OPS for op in ops) or any(
            op.opcode == "builtin" and op.attrs["name"] == "unit_pos_plane" for op in ops)

        params, slots, alignments = [], [], {}
        for p in k.params:
            if isinstance(p, Buffer):
                name = self._unique(p.name)
                self.names[p.id] = name
                st = self._storage(p.type)
                const = "" if p.mutable else "const "
                params.append(f"{d.global_q}{const}{self._vt(st)}* {d.restrict} {name}")
                slots.append(ArgSlot("buffer", p.param_index))
                size = st.dtype.itemsize * st.width
                alignments[p.param_index] = min(16, size & -size) if st.width > 1 else st.dtype.itemsize
                for dim in range(p.ndim):
                    params.append(f"int {name}_shape{dim}")
                    slots.append(ArgSlot("shape", p.param_index, dim))
            else:
                assert isinstance(p, ScalarParam)
                name = self._unique(p.name)
                self.names[("param", p.param_index)] = name
                pd = DTYPES_BY_NAME.get(d.param_storage.get(p.type.dtype.name, p.type.dtype.name))
                params.append(f"{self._c(pd)} {name}")
                slots.append(ArgSlot("scalar", p.param_index, numpy=pd.numpy_name))
        if "error" in self.needs:
            params.append(f"{d.global_q}int* {d.restrict} cb_err")
            slots.append(ArgSlot("error"))

        # declarations: shared memory, local arrays, variables, plane state
        static_shared = sum(b.type.dtype.itemsize * b.type.width * math.prod(b.shape)
                            for b in k.buffers if b.kind == "shared")
        dynamic = d.shared_static_limit is not None and static_shared > d.shared_static_limit
        offset = 0
        if dynamic:
            self._line(d.dynamic_shared)
        for b in k.buffers:
            name = self._unique(b.name)
            self.names[b.id] = name
            st = self._storage(b.type)
            size = math.prod(b.shape)
            if b.kind == "shared" and dynamic:
                self._line(f"{self._vt(st)}* {name} = ({self._vt(st)}*)(cb_dynamic_smem + {offset});")
                offset += -(-st.dtype.itemsize * st.width * size // 16) * 16
            elif b.kind == "shared":
                self._line(f"{d.shared_q}{self._vt(st)} {name}[{size}];")
            else:
                self._line(f"{self._vt(st)} {name}[{size}];")
        for v in k.vars:
            name = self._unique(v.name)
            self.names[v.id] = name
            self._line(f"{self._vt(v.type)} {name};")
        if plane_ops:
            dx, dy, _ = k.cube_dim
            b = d.builtins
            self._line(f"const int cb_lin = {b['unit_pos_x']} + {dx} * ({b['unit_pos_y']} + {dy} * "
                       f"{b['unit_pos_z']});")
            self._line(f"const int cb_lane = cb_lin & {self.P - 1};")
            if d.plane_mode == "shuffle":
                if self.units % self.P == 0:
                    self._line(f"const {self.mask_t} cb_pmask = {self.full_mask};")
                else:
                    self._line(f"const int cb_plane_n = {self.units} - (cb_lin - cb_lane);")
                    self._line(f"const {self.mask_t} cb_pmask = cb_plane_n >= {self.P} ? {self.full_mask} : "
                               f"((({self.mask_t})1 << cb_plane_n) - 1);")
            else:
                self._line(f"{d.shared_q}{self._c(u64)} cb_plane_scratch[{self.units}];")
        self._block(k.body)

        dims = ", ".join(str(x) for x in k.cube_dim)
        head = d.kernel_prefix.format(units=self.units, dims=dims)
        sig = f"{head} {self.entry}(\n    " + ",\n    ".join(params) + ")"
        parts = [f"// cubepy kernel '{k.name}': cube_dim={k.cube_dim} plane_dim={self.P} "
                 f"dialect={d.name}"]
        strict = (d.strict_fp_pragma,) if d.strict_fp_pragma and not k.fastmath else ()
        parts.append("\n".join([*(d.type_pragmas[n] for n in sorted(self.needs) if n in d.type_pragmas),
                                *d.extensions, *strict, d.preamble.rstrip()]))
        if self.structs:
            parts.append("\n".join(self.structs.values()))
        parts.extend(self.helpers.values())
        parts.append(sig + " {\n" + "\n".join(self.body) + "\n}")
        source = "\n\n".join(p for p in parts if p) + "\n"
        return Rendered(self.entry, source, slots, self.sites, self.units, self.P, 0 if dynamic else static_shared,
                        offset if dynamic else 0, alignments)

    # --- statements ---------------------------------------------------------------------

    def _block(self, block: Block) -> None:
        for op in block.ops:
            self._op(op)

    def _nested(self, block: Block) -> None:
        self.depth += 1
        self._block(block)
        self.depth -= 1

    def _op(self, op: Op) -> None:
        code = op.opcode
        handler = getattr(self, f"_op_{code}", None)
        if handler is not None:
            handler(op)
        elif code in UNARY:
            dt = op.args[0].type.dtype
            self._define(op, lambda i: self._unary(code, dt, self._arg(op.args[0], i)))
        elif code in BINARY or code in COMPARE:
            dt = op.args[0].type.dtype
            self._define(op, lambda i: self._binary(code, dt, self._arg(op.args[0], i), self._arg(op.args[1], i)))
        elif code in PLANE_OPS:
            self._plane(op)
        else:
            raise CubeTypeError(f"the {self.d.name} backend cannot render opcode {code!r}", self.k.name, op.loc)

    def _op_fma(self, op: Op) -> None:
        dt = op.result.type.dtype
        fn = self._fn("fma", dt)
        self._define(op, lambda i: self._down(f"{fn}({', '.join(self._up(self._arg(a, i), dt) for a in op.args)})",
                                              dt))

    def _op_select(self, op: Op) -> None:
        c, a, b = op.args
        self._define(op, lambda i: f"{self._arg(c, i if c.type.width > 1 else None)} ? {self._arg(a, i)} : "
                                   f"{self._arg(b, i)}")

    def _op_cast(self, op: Op) -> None:
        src, dst = op.args[0].type.dtype, op.result.type.dtype
        self._define(op, lambda i: self._cast(self._arg(op.args[0], i), src, dst))

    def _op_broadcast(self, op: Op) -> None:
        self._define(op, lambda i: self._arg(op.args[0]))

    def _op_extract(self, op: Op) -> None:
        self._define(op, lambda i: self._arg(op.args[0], op.attrs["index"]))

    def _op_insert(self, op: Op) -> None:
        line, x = op.args
        self._define(op, lambda i: self._arg(x) if i == op.attrs["index"] else self._arg(line, i))

    def _op_builtin(self, op: Op) -> None:
        name = op.attrs["name"]
        if name == "plane_dim":
            expr = str(self.P)
        elif name == "unit_pos_plane":
            expr = "cb_lane"
        else:
            expr = self.d.builtins[name]
        self._define(op, lambda i: expr)

    def _op_param(self, op: Op) -> None:
        name = self.names[("param", op.attrs["index"])]
        dt = op.result.type.dtype
        pd = self.d.param_storage.get(dt.name)
        if pd is None:
            expr = name
        elif dt.is_bool:
            expr = f"({name} != 0)"
        else:
            expr = self._cast(name, DTYPES_BY_NAME[pd], dt)
        self._define(op, lambda i: expr)

    def _op_shape(self, op: Op) -> None:
        buf = op.args[0]
        self._define(op, lambda i: f"{self.names[buf.id]}_shape{op.attrs['dim']}")

    def _index(self, buf: Buffer, indices) -> str:
        name = self.names[buf.id]
        idx = [self._arg(a) for a in indices]
        if not idx:
            return "0"
        flat = idx[0]
        for dim, i in enumerate(idx[1:], start=1):
            extent = str(buf.shape[dim]) if buf.shape is not None else f"{name}_shape{dim}"
            flat = f"({flat}) * {extent} + {i}"
        return flat

    def _op_load(self, op: Op) -> None:
        buf = op.args[0]
        ref = f"{self.names[buf.id]}[{self._index(buf, op.args[1:])}]"
        st = self._storage(buf.type)
        if st == buf.type:
            self._line(f"const {self._vt(buf.type)} {self._name(op.result)} = {ref};")
            return
        tmp = self._unique(f"{self._name(op.result)}_raw")
        self._line(f"const {self._vt(st)} {tmp} = {ref};")
        self._define(op, lambda i: self._cast(self._el(tmp, st, i), st.dtype, buf.type.dtype))

    def _op_store(self, op: Op) -> None:
        buf, value = op.args[0], op.args[-1]
        ref = f"{self.names[buf.id]}[{self._index(buf, op.args[1:-1])}]"
        st = self._storage(buf.type)
        if st == buf.type:
            self._line(f"{ref} = {self._arg(value)};")
        elif st.width == 1:
            self._line(f"{ref} = {self._cast(self._arg(value), buf.type.dtype, st.dtype)};")
        else:
            tmp = self._unique("cb_store")
            self._line(f"{self._vt(st)} {tmp};")
            for i in range(st.width):
                self._line(f"{self._el(tmp, st, i)} = {self._cast(self._arg(value, i), buf.type.dtype, st.dtype)};")
            self._line(f"{ref} = {tmp};")

    def _op_load_var(self, op: Op) -> None:
        self._line(f"const {self._vt(op.result.type)} {self._name(op.result)} = {self.names[op.args[0].id]};")

    def _op_store_var(self, op: Op) -> None:
        self._line(f"{self.names[op.args[0].id]} = {self._arg(op.args[1])};")

    def _op_sync_cube(self, op: Op) -> None:
        self._line(self.d.barrier)

    def _op_if(self, op: Op) -> None:
        then, other = op.blocks[0], op.blocks[1] if len(op.blocks) > 1 else Block()
        cond = self._arg(op.args[0])
        if not then.ops and other.ops:
            then, other, cond = other, Block(), f"!{cond}"
        self._line(f"if ({cond}) {{")
        self._nested(then)
        if other.ops:
            self._line("} else {")
            self._nested(other)
        self._line("}")

    def _op_for(self, op: Op) -> None:
        start, stop, step = (self._arg(a) for a in op.args)
        var = self.names[op.attrs["var"].id]
        s = op.args[2]
        if isinstance(s, Const):
            cond = f"{var} {'<' if s.value > 0 else '>'} {stop}"
        else:
            cond = f"({step} > 0 ? {var} < {stop} : {var} > {stop})"
        self._line(f"for ({var} = {start}; {cond}; {var} += {step}) {{")
        self._nested(op.blocks[0])
        self._line("}")

    def _op_loop(self, op: Op) -> None:
        self._line("for (;;) {")
        self._nested(op.blocks[0])
        self._line("}")

    def _op_break(self, op: Op) -> None:
        self._line("break;")

    def _op_continue(self, op: Op) -> None:
        self._line("continue;")

    def _op_return(self, op: Op) -> None:
        self._line("return;")

    def _op_report_oob(self, op: Op) -> None:
        n = len(op.args) // 2
        if n > MAX_DIMS:
            raise CubeTypeError(f"arrays of more than {MAX_DIMS} dimensions are not supported", self.k.name, op.loc)
        site = len(self.sites)
        self.sites.append(OOBSite(op.attrs.get("array", "?"), n, op.loc))
        b = self.d.builtins
        cas = self.d.cas[32].format(p="&cb_err[0]", cmp="0", v="1")
        self._line(f"if ({cas} == 0) {{  // the first out-of-bounds access of the launch wins")
        vals = [str(site)] + [b[f"unit_pos_{a}"] for a in "xyz"] + [b[f"cube_pos_{a}"] for a in "xyz"]
        vals += [self._arg(a) for a in op.args[:n]]
        for j, v in enumerate(vals):
            self._line(f"  cb_err[{j + 1}] = {v};")
        for j, a in enumerate(op.args[n:]):
            self._line(f"  cb_err[{8 + MAX_DIMS + j}] = {self._arg(a)};")
        self._line("}")

    # --- atomics --------------------------------------------------------------------------

    def _op_atomic(self, op: Op) -> None:
        buf, kind = op.args[0], op.attrs["op"]
        nvals = 2 if kind == "cas" else 1
        if buf.type.width != 1:
            raise CubeTypeError("atomics work on scalar elements, not Lines", self.k.name, op.loc)
        ref = f"{self.names[buf.id]}[{self._index(buf, op.args[1:-nvals])}]"
        helper = self._atomic_helper(kind, buf.type.dtype, buf.kind)
        vals = ", ".join(self._arg(a) for a in op.args[-nvals:])
        if op.result is not None:
            self._line(f"const {self._vt(op.result.type)} {self._name(op.result)} = {helper}(&{ref}, {vals});")
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
                         if dtype.is_float else f"({ct})((assumed >> sh) & {(1 << dtype.bits) - 1}u)")
            cas = d.cas[32].format(p="wp", cmp="assumed", v=f"(assumed & ~m) | ((({wt}){bits_of} << sh) & m)")
            body = (f"{q}{wt}* wp = ({q}{wt}*)(({d.size_t})p & ~({d.size_t})3);\n"
                    f"  const int sh = (int)((({d.size_t})p & 3) * 8);\n"
                    f"  const {wt} m = {(1 << dtype.bits) - 1}u << sh;\n"
                    f"  {wt} old = *({q}volatile {wt}*)wp, assumed;\n  {ct} cur;\n"
                    f"  do {{\n    assumed = old;\n    cur = {from_bits};\n    const {ct} nv = {new};\n"
                    f"    old = {cas};\n  }} while (old != assumed);\n  return cur;")
        return self._helper(name, f"{d.device_fn} {ct} {name}({args}) {{\n  {body}\n}}")

    # --- plane ops ------------------------------------------------------------------------

    def _plane(self, op: Op) -> None:
        code = op.opcode
        if code == "plane_elect":
            self._define(op, lambda i: "(cb_lane == 0)")
            return
        x = op.args[0]
        dt = x.type.dtype
        helper = self._plane_helper(code, dt)
        local = self.d.plane_mode != "shuffle"
        tail = "cb_lin, cb_plane_scratch" if local else "cb_lane, cb_pmask"
        extra = f"{self._arg(op.args[1])}, " if len(op.args) > 1 else ""
        self._define(op, lambda i: f"{helper}({self._arg(x, i)}, {extra}{tail})")

    def _shfl(self, x: str, lane: str, dtype: DType) -> str:
        """Read ``x`` (of ``dtype``) from ``lane`` of the plane (shuffle mode); widened where needed."""
        d = self.d
        if dtype.name in d.shfl_dtypes:
            return d.shfl.format(mask="m", x=x, lane=lane, width=self.P)
        if dtype.is_float:
            return f"(({self._c(dtype)}){d.shfl.format(mask='m', x=f'((float){x})', lane=lane, width=self.P)})"
        return f"(({self._c(dtype)}){d.shfl.format(mask='m', x=f'((int){x})', lane=lane, width=self.P)})"

    def _plane_helper(self, code: str, dtype: DType) -> str:
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        d, P, M = self.d, self.P, self.mask_t
        ct = self._c(dtype)
        rt = self._c(u64) if code == "plane_ballot" else "bool" if code in ("plane_all", "plane_any") else ct
        lane_arg = ", int a" if code in ("plane_broadcast", "plane_shuffle", "plane_shuffle_xor",
                                         "plane_shuffle_up", "plane_shuffle_down") else ""
        src = {"plane_broadcast": f"a & {P - 1}", "plane_shuffle": f"a & {P - 1}", "plane_shuffle_xor": "lane ^ a",
               "plane_shuffle_up": "lane - a", "plane_shuffle_down": "lane + a"}.get(code)
        combine = {"plane_sum": "add", "plane_prod": "mul", "plane_min": "min", "plane_max": "max",
                   "plane_inclusive_sum": "add", "plane_exclusive_sum": "add"}.get(code)
        zero = self._lit(0, dtype)
        if d.plane_mode == "shuffle":
            sig = f"{d.device_fn} {rt} {name}({ct} x{lane_arg}, int lane, {M} m)"
            if code in PLANE_REDUCE:
                y = self._shfl("x", "lane ^ d", dtype)
                yl = self._shfl("x", "l", dtype)
                body = (f"if (m == {self.full_mask}) {{\n"
                        f"    for (int d = {P // 2}; d > 0; d >>= 1) {{ const {ct} y = {y}; "
                        f"x = {self._binary(combine, dtype, 'x', 'y')}; }}\n    return x;\n  }}\n"
                        f"  {ct} acc = {self._shfl('x', '0', dtype)};\n"
                        f"  for (int l = 1; l < {P}; ++l) {{\n    const {ct} y = {yl};\n"
                        f"    if ((m >> l) & 1) acc = {self._binary(combine, dtype, 'acc', 'y')};\n  }}\n"
                        f"  return acc;")
            elif code in ("plane_all", "plane_any", "plane_ballot"):
                bal = f"(({M})({d.ballot.format(mask='m', pred='x')}) & m)"
                body = {"plane_all": f"return {bal} == m;", "plane_any": f"return {bal} != 0;",
                        "plane_ballot": f"return ({rt}){bal};"}[code]
            elif src is not None:
                y = self._shfl("x", "ok ? s : lane", dtype)
                body = (f"const int s = {src};\n  const bool ok = s >= 0 && s < {P} && ((m >> s) & 1);\n"
                        f"  const {ct} y = {y};\n  return ok ? y : x;")
            else:
                y = self._shfl("x", "lane >= d ? lane - d : lane", dtype)
                body = (f"for (int d = 1; d < {P}; d <<= 1) {{\n    const {ct} y = {y};\n"
                        f"    if (lane >= d && ((m >> (lane - d)) & 1)) x = {self._binary('add', dtype, 'x', 'y')};\n"
                        f"  }}\n")
                if code == "plane_inclusive_sum":
                    body += "  return x;"
                else:
                    body += f"  const {ct} y = {self._shfl('x', 'lane > 0 ? lane - 1 : 0', dtype)};\n" \
                            f"  return lane > 0 ? y : {zero};"
        else:   # emulated through shared (local) memory: every unit of the cube takes part
            st = self._c(self._storage(Type(dtype)).dtype)
            sig = f"{d.device_fn} {rt} {name}({ct} x{lane_arg}, int lin, {d.local_q}{self._c(u64)}* scratch)"
            ld = (lambda e: f"({e} != 0)") if dtype.is_bool else (lambda e: e)
            head = (f"{d.local_q}{st}* sh = ({d.local_q}{st}*)scratch;\n"
                    f"  const int lane = lin & {P - 1}, base = lin - lane;\n"
                    f"  const int n = {self.units} - base < {P} ? {self.units} - base : {P};\n"
                    f"  {d.local_barrier}\n  sh[lin] = ({st})x;\n  {d.local_barrier}\n  ")
            if code in PLANE_REDUCE:
                body = (f"{ct} acc = {ld('sh[base]')};\n"
                        f"  for (int l = 1; l < n; ++l) acc = "
                        f"{self._binary(combine, dtype, 'acc', ld('sh[base + l]'))};\n  return acc;")
            elif code in ("plane_all", "plane_any", "plane_ballot"):
                body = (f"{self._c(u64)} bits = 0;\n"
                        f"  for (int l = 0; l < n; ++l) if (sh[base + l]) bits |= ({self._c(u64)})1 << l;\n"
                        f"  return " + {"plane_all": f"bits == ((n == 64) ? ~({self._c(u64)})0 : "
                                                    f"((({self._c(u64)})1 << n) - 1));",
                                        "plane_any": "bits != 0;", "plane_ballot": "bits;"}[code])
            elif src is not None:
                body = (f"const int s = {src};\n"
                        f"  return (s >= 0 && s < n) ? {ld('sh[base + s]')} : x;")
            else:
                stop = "lane" if code == "plane_inclusive_sum" else "lane - 1"
                body = (f"{ct} acc = {zero};\n"
                        f"  for (int l = 0; l <= {stop}; ++l) acc = "
                        f"{self._binary('add', dtype, 'acc', ld('sh[base + l]'))};\n  return acc;")
            body = head + body
        return self._helper(name, f"{sig} {{\n  {body}\n}}")


COMPARE_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

__all__ = ["ERROR_WORDS", "MAX_DIMS", "ArgSlot", "OOBSite", "Rendered", "render"]
