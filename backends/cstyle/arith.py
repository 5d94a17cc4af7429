"""Arithmetic: unary, binary and compare operators, casts, fma/select and Line element ops, with the
preamble helpers for Python's ``//``, ``%`` and ``**`` (a mixin of `renderer._Renderer`; the WGSL
renderer's arithmetic overrides the operators, casts and helpers and keeps the dispatch)."""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import COMPARE, Op
from cubepy.ir.types import DTYPES_BY_NAME, DType

from .naming import HALF

COMPARE_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "and": "&", "or": "|", "xor": "^"}
LOGICAL = {"and": "&&", "or": "||", "xor": "!="}       # the bitwise operators on bools


class Arithmetic:
    """Scalar semantics of the operators, element by element over Lines."""

    # --- scalar semantics ---------------------------------------------------------------

    def _up(self, x: str, dtype: DType) -> str:
        return f"((float){x})" if dtype.name in HALF else x

    def _down(self, e: str, dtype: DType) -> str:
        return f"(({self._c(dtype)})({e}))" if dtype.name in HALF else e

    def _unary(self, code: str, dtype: DType, a: str) -> str:
        if code == "not":
            return f"!{a}"
        if code == "invert":
            return f"~{a}" if not dtype.is_bool else f"!{a}"
        if code == "neg":
            if dtype.is_int:           # -INT_MIN wraps to itself, as in the IR; C leaves it undefined
                return self._wrap(f"-({self._c(self._unsigned(dtype))}){a}", dtype)
            return self._down(f"-{self._up(a, dtype)}", dtype)
        if code == "abs":
            if dtype.is_float:
                return self._down(f"{self._fn('abs', dtype)}({self._up(a, dtype)})", dtype)
            if not dtype.is_signed:
                return a
            negated = self._wrap(f'-({self._c(self._unsigned(dtype))}){a}', dtype)
            if dtype.bits < 32:         # an 8- or 16-bit value is never the 32-bit MIN
                return f"({a} < 0 ? {negated} : {a})"
            # abs(MIN) is MIN (it wraps), but ptxas took NVVM's abs.s32 for non-negative and
            # computed a following % as if it were (seed 12001900): MIN is passed by a select
            low = self._lit(-(1 << (dtype.bits - 1)), dtype)
            return f"({a} == {low} ? {a} : {a} < 0 ? {negated} : {a})"
        if not dtype.is_float:
            raise CubeTypeError(f"{code} of {dtype} is not supported", self.k.name)
        return self._down(f"{self._fn(code, dtype)}({self._up(a, dtype)})", dtype)

    def _binary(self, code: str, dtype: DType, a: str, b: str, b_value=None, nowrap: bool = False,
                of_negation: bool = False) -> str:
        """``a <code> b``; ``b_value`` is b's value when it is a constant (shift counts);
        ``of_negation``: a min or max with a signed negation for an operand.

        ``nowrap`` (ops a per-cube test showed never overflow, `cubepy.ir.cube_checks`) keeps
        32- and 64-bit signed arithmetic signed, so the compiler may fold it into addresses, where
        the dialect says so (`Dialect.signed_nowrap`)."""
        if code in COMPARE:
            return self._compare(code, dtype, a, b)
        if code == "div" and dtype.is_float and (b_value is None or b_value == 0):
            b = self._opaque_divisor(b, dtype)
        if code in OPERATORS:
            return self._operator(code, dtype, a, b, nowrap)
        if code in ("min", "max"):
            if dtype.is_float:
                return self._down(f"{self._minmax_helper(code, dtype)}({self._up(a, dtype)}, {self._up(b, dtype)})",
                                  dtype)
            return self._int_min_max(code, dtype, a, b, of_negation)
        if code in ("floordiv", "mod", "pow"):
            return f"{self._arith_helper(code, dtype)}({a}, {b})"
        if code in ("shl", "shr"):
            return self._shift(code, dtype, a, b, b_value)
        raise CubeTypeError(f"operation {code} on {dtype} is not supported by the {self.d.name} backend",
                            self.k.name)

    def _compare(self, code: str, dtype: DType, a: str, b: str) -> str:
        return f"{self._up(a, dtype)} {COMPARE_SYM[code]} {self._up(b, dtype)}"

    def _operator(self, code: str, dtype: DType, a: str, b: str, nowrap: bool) -> str:
        """``a <op> b`` for the operators of `OPERATORS`."""
        sym = OPERATORS[code]
        if dtype.is_bool:
            return f"{a} {LOGICAL[code]} {b}" if code in LOGICAL else f"(bool)((int){a} {sym} (int){b})"
        if code in ("add", "sub", "mul") and dtype.is_int and (dtype.is_signed or dtype.bits < 32) \
                and not (nowrap and dtype.bits >= 32 and self.d.signed_nowrap):
            # Wrap as the IR says: signed overflow is undefined in C (compilers fold on it), and
            # narrow types are promoted to a signed int, so compute in an unsigned type.
            ut = self._c(self._unsigned(dtype))
            return self._wrap(f"({ut}){a} {sym} ({ut}){b}", dtype)
        return self._down(f"{self._up(a, dtype)} {sym} {self._up(b, dtype)}", dtype)

    def _int_min_max(self, code: str, dtype: DType, a: str, b: str, of_negation: bool = False) -> str:
        if of_negation and dtype.bits >= 32 and self.d.min_max_of_negation:
            cmp = "<" if code == "min" else ">"
            return self.d.min_max_of_negation.format(t=self._c(dtype), a=a, b=b, cmp=cmp)
        if dtype.bits < 32 and self.d.narrow_min_max:
            wide = self._c(DTYPES_BY_NAME["i32" if dtype.is_signed else "u32"])
            return self.d.narrow_min_max.format(t=self._c(dtype), op=code, w=wide, a=a, b=b)
        return f"({a} {'<' if code == 'min' else '>'} {b} ? {a} : {b})"

    def _shift(self, code: str, dtype: DType, a: str, b: str, b_value) -> str:
        """A count outside [0, bits) shifts every bit out (cubepy.ir.semantics); C leaves it undefined."""
        if b_value is not None:
            out = "true" if not 0 <= b_value < dtype.bits else None
        else:
            out = f"({b} >= {dtype.bits})" if not dtype.is_signed else f"({b} < 0 || {b} >= {dtype.bits})"
        ut = self._c(self._unsigned(dtype))
        shifted = self._wrap(f"({ut}){a} << {b}", dtype) if code == "shl" else f"({self._c(dtype)})({a} >> {b})"
        if out is None:
            return shifted
        if code == "shr":
            gone = f"({a} < 0 ? {self._lit(-1, dtype)} : {self._lit(0, dtype)})" if dtype.is_signed else \
                self._lit(0, dtype)
        else:
            gone = self._lit(0, dtype)
        return gone if out == "true" else f"({out} ? {gone} : {shifted})"

    @staticmethod
    def _unsigned(dtype: DType) -> DType:
        """The unsigned type integer arithmetic on ``dtype`` wraps in: same width, at least 32 bits."""
        return DTYPES_BY_NAME[f"u{max(32, dtype.bits)}"]

    def _wrap(self, e: str, dtype: DType, exact: bool = False) -> str:
        """The unsigned value ``e`` (of `_unsigned` type or narrower) wrapped to the integer ``dtype``.

        Converting an out-of-range value to a signed type is implementation-defined before C++20,
        and NVIDIA's compilers drop such a narrowing when a widening follows
        (``(int)(short)(-(unsigned)v)`` became ``-v``). So a narrow signed result (8 or 16 bits,
        computed in 32), and with ``exact`` (casts) any signed narrowing, is sign-extended by
        arithmetic that is exact in every dialect, ``((e & mask) ^ sign) - sign`` in a wider type;
        the final conversion then preserves the value. 32-bit arithmetic keeps the plain
        conversion, which every compiler treats as modulo."""
        ct = self._c(dtype)
        if not dtype.is_signed or dtype.bits == 64 or (dtype.bits == 32 and not exact):
            return f"(({ct})({e}))"
        wide = DTYPES_BY_NAME["i64"] if dtype.bits == 32 else DTYPES_BY_NAME["i32"]
        u32 = DTYPES_BY_NAME["u32"]
        if dtype.bits < 32 and self.d.sign_extend:
            return f"(({ct}){self._sign_extend_helper(dtype.bits)}(({self._c(u32)})({e})))"
        low = f"(({self._c(u32)})({e}) & {self._lit((1 << dtype.bits) - 1, u32)})"
        sign = self._lit(1 << (dtype.bits - 1), wide)
        return f"(({ct})(((({self._c(wide)}){low}) ^ {sign}) - {sign}))"

    def _sign_extend_helper(self, bits: int) -> str:
        """The dialect's opaque sign extension of the low ``bits`` bits of a 32-bit word."""
        name = f"cb_sext{bits}"
        body = self.d.sign_extend.format(bits=bits, mask=(1 << bits) - 1, sign=1 << (bits - 1))
        return self._helper(name, f"{self.d.device_fn} int {name}(unsigned int x) {{\n{body}\n}}")

    def _opaque_divisor(self, b: str, dtype: DType) -> str:
        """The divisor ``b`` through the dialect's opaque identity, where it has one."""
        ft = DTYPES_BY_NAME["f32"] if dtype.name in HALF else dtype
        body = self.d.opaque_divisor.get(ft.name)
        if body is None:
            return b
        ct, name = self._c(ft), f"cb_opaque_{ft.name}"
        self._helper(name, f"{self.d.device_fn} {ct} {name}({ct} x) {{\n{body}\n}}")
        return f"{name}({self._up(b, dtype)})"

    def _minmax_helper(self, code: str, dtype: DType) -> str:
        """Float min/max with one rule on every device (cubepy.ir.semantics): NaN wins, and of
        -0.0 and +0.0 min is -0.0, max +0.0 (the OR / AND of the bit patterns of equal operands).
        C's fmin/fmax return the other operand of a NaN, and leave the sign of zero open."""
        ft = DTYPES_BY_NAME["f32"] if dtype.name in HALF else dtype
        ct, ut = self._c(ft), self._c(DTYPES_BY_NAME[f"u{ft.bits}"])
        name = f"cb_{code}_{ft.name}"
        if name in self.helpers:
            return name
        bits = self.d.bitcast
        join = "|" if code == "min" else "&"
        same = bits.format(to=ct, x=f"({ut})({bits.format(to=ut, x='a')} {join} {bits.format(to=ut, x='b')})")
        body = (f"if (a != a) return a;\n  if (b != b) return b;\n  if (a == b) return {same};\n"
                f"  return a {'<' if code == 'min' else '>'} b ? a : b;")
        return self._helper(name, f"{self.d.device_fn} {ct} {name}({ct} a, {ct} b) {{\n  {body}\n}}")

    def _arith_helper(self, code: str, dtype: DType) -> str:
        """Python's // and % (integer division by zero gives 0), and integer/float pow."""
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        fn = self.d.device_fn
        ct = self._c(dtype)
        if dtype.is_float:
            ft = "float" if dtype.name in HALF else ct
            fmod, floor, cps = (self._fn(n, dtype) for n in ("fmod", "floor", "copysign"))
            if code == "pow":
                body = f"return {self._down(f'{self._fn(code, dtype)}(({ft})a, ({ft})b)', dtype)};"
            elif code == "mod":
                body = (f"{ft} x = ({ft})a, y = ({ft})b, m = {fmod}(x, y);\n"
                        f"  if (y == 0) return {self._down('m', dtype)};\n"
                        f"  if (m != 0) {{ if ((y < 0) != (m < 0)) m += y; }} else m = {cps}(({ft})0, y);\n"
                        f"  return {self._down('m', dtype)};")
            else:
                computed = DTYPES_BY_NAME["f32"] if dtype.name in HALF else dtype
                body = (f"{ft} x = ({ft})a, y = {self._opaque_divisor(f'({ft})b', computed)}, m = {fmod}(x, y);\n"
                        f"  if (y == 0) return {self._down('x / y', dtype)};\n"
                        f"  {ft} d = (x - m) / y;\n"
                        f"  if (m != 0 && ((y < 0) != (m < 0))) d -= 1;\n"
                        f"  {ft} q;\n"
                        f"  if (d != 0) {{ q = {floor}(d); if (d - q > ({ft})0.5) q += 1; }}\n"
                        f"  else q = {cps}(({ft})0, x / y);\n"
                        f"  return {self._down('q', dtype)};")
        elif not dtype.is_signed:
            wt = self._c(self._unsigned(dtype))
            body = {"floordiv": "return b == 0 ? 0 : a / b;", "mod": "return b == 0 ? 0 : a % b;",
                    "pow": (f"{wt} r = 1, x = a;\n  while (b) {{ if (b & 1) r = r * x; x = x * x; b >>= 1; }}\n"
                            f"  return ({ct})r;")}[code]
        else:
            ut = self._c(self._unsigned(dtype))
            body = {
                "floordiv": (f"if (b == 0) return 0;\n"
                             f"  if (b == -1) return {self._wrap(f'({ut})0 - ({ut})a', dtype)};\n"
                             f"  {ct} q = a / b;\n  if (a % b != 0 && ((a < 0) != (b < 0))) q -= 1;\n  return q;"),
                "mod": (f"if (b == 0 || b == -1) return 0;\n  {ct} r = a % b;\n"
                        f"  if (r != 0 && ((r < 0) != (b < 0))) r += b;\n  return r;"),
                "pow": (f"if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
                        f"  {ut} r = 1, x = ({ut})a;\n"
                        f"  while (b) {{ if (b & 1) r = ({ut})(r * x); x = ({ut})(x * x); b >>= 1; }}\n"
                        f"  return {self._wrap('r', dtype)};"),
            }[code]
        return self._helper(name, f"{fn} {ct} {name}({ct} a, {ct} b) {{\n  {body}\n}}")

    def _cast(self, a: str, src: DType, dst: DType) -> str:
        if dst.is_bool:
            return f"({self._up(a, src)} != 0)"
        ct = self._c(dst)
        if src.is_float and dst.is_int:
            return f"{self._float_to_int_helper(src, dst)}({self._up(a, src)})"
        if src.name == "f64" and dst.name in self.d.from_double:     # one rounding, not two via float
            return self.d.from_double[dst.name].format(x=a)
        if src.name == "f64" and dst.name == "f16":
            return f"(({ct})({self._float_rounded_to_odd()}({a})))"
        if src.name in HALF or dst.name in HALF:
            return f"(({ct})((float)({a})))"
        if src.is_int and dst.is_int and dst.is_signed and (
                src.bits > dst.bits or (src.bits == dst.bits and not src.is_signed)):
            if dst.bits == 64:    # u64 -> i64: values past INT64_MAX by exact arithmetic on ~x
                u = self._c(DTYPES_BY_NAME["u64"])
                return (f"(({u})({a}) <= {self._lit(2**63 - 1, DTYPES_BY_NAME['u64'])} ? ({ct})({a}) : "
                        f"-({ct})(~({u})({a})) - 1)")
            return self._wrap(a, dst, exact=True)      # a narrowing to a signed type: never dropped
        return f"(({ct}){a})"

    def _float_rounded_to_odd(self) -> str:
        """f64 -> f32 rounded to odd (toward zero, last bit set when inexact): converting that to f16
        rounds correctly, as the CPU backend does too."""
        name = "cb_f64_to_f32_odd"
        if name in self.helpers:
            return name
        bits = self.d.bitcast
        u32 = self._c(DTYPES_BY_NAME["u32"])
        fabs = self._fn("abs", DTYPES_BY_NAME["f64"])
        body = (f"float f = (float)x;\n  if ((double)f != x && x == x) {{\n"
                f"    {u32} b = {bits.format(to=u32, x='f')};\n"
                f"    if ({fabs}((double)f) > {fabs}(x)) b -= 1;\n"
                f"    f = {bits.format(to='float', x='(b | 1u)')};\n  }}\n  return f;")
        return self._helper(name, f"{self.d.device_fn} float {name}(double x) {{\n  {body}\n}}")

    def _float_to_int_helper(self, src: DType, dst: DType) -> str:
        """Float to integer: toward zero, saturating at the type's bounds, NaN gives 0 (the rule of
        cubepy.ir.semantics; a plain C conversion of an out-of-range value is undefined)."""
        ft = DTYPES_BY_NAME["f32"] if src.name in HALF else src
        name = f"cb_cast_{ft.name}_{dst.name}"
        if name in self.helpers:
            return name
        ct, fct = self._c(dst), self._c(ft)
        low, high = (-(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1) if dst.is_signed else (0, (1 << dst.bits) - 1)
        limit = self._lit(float(high + 1), ft)        # 2**(bits-1) or 2**bits: exact in every float type
        floor = self._lit(float(low), ft)
        body = (f"return x != x ? {self._lit(0, dst)} : x >= {limit} ? {self._lit(high, dst)} : "
                f"x <= {floor} ? {self._lit(low, dst)} : ({ct})x;")
        return self._helper(name, f"{self.d.device_fn} {ct} {name}({fct} x) {{\n  {body}\n}}")

    # --- value ops -----------------------------------------------------------------------

    def _fma(self, dtype: DType) -> str:
        """The function ``fma`` of ``dtype``'s compute type."""
        return self._fn("fma", dtype)

    def _op_fma(self, op: Op) -> None:
        dt = op.result.type.dtype
        fn = self._fma(dt)
        self._define(op, lambda i: self._down(f"{fn}({', '.join(self._up(self._arg(a, i), dt) for a in op.args)})",
                                              dt))

    def _op_select(self, op: Op) -> None:
        c, a, b = op.args
        self._define(op, lambda i: self.d.select.format(cond=self._arg(c, i if c.type.width > 1 else None),
                                                        a=self._arg(a, i), b=self._arg(b, i)))

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


__all__ = ["COMPARE_SYM", "LOGICAL", "OPERATORS", "Arithmetic"]
