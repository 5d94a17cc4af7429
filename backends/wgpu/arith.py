"""Arithmetic in WGSL: operators, casts and the helpers for what WGSL's operators leave open or lack
(Python's ``//``, ``%`` and ``**``, shifts by any count, saturating float to integer, IEEE
minimum/maximum, erf), each with the meaning of `cubepy.ir.semantics` (a mixin of `wgsl.WgslRenderer`).

Narrow integers (i8, i16, u8, u16) are computed in i32/u32 and wrapped back after every operation
that can leave their range (`_fix`); f16 is computed in f32 and rounded back, as on the C backends.
"""

from __future__ import annotations

import numpy as np

from cubepy.errors import CubeTypeError
from cubepy.ir.types import DTYPES_BY_NAME, DType

from ..cstyle.arith import COMPARE_SYM, LOGICAL, OPERATORS, Arithmetic
from .dialect import F32_ONLY, NARROW
from .f64math import F64Math

_F32 = DTYPES_BY_NAME["f32"]
_F64 = DTYPES_BY_NAME["f64"]


class WgslArithmetic(F64Math, Arithmetic):
    """Scalar semantics of the operators in WGSL, element by element over Lines."""

    def _up(self, x: str, dtype: DType) -> str:
        return f"f32({x})" if dtype.name == "f16" else x

    def _down(self, e: str, dtype: DType) -> str:
        if dtype.name != "f16":
            return e
        if self.quirks.folds_f16_rounding:
            # rounded to f16 through its bits (naga cannot bitcast f16), so the compiler cannot
            # take the later f32(f16(e)) as e
            self.needs.add("zero_u32")
            return f"f16(unpack2x16float(pack2x16float(vec2<f32>({e}, 0.0f)) | cb_zero_u32).x)"
        return f"f16({e})"

    def _fix(self, e: str, dtype: DType) -> str:
        """The i32/u32 expression ``e`` wrapped to the narrow integer ``dtype`` (other types: ``e``)."""
        if dtype.name not in NARROW:
            return e
        if dtype.is_signed:
            shift = 32 - dtype.bits
            return f"((({e}) << {shift}u) >> {shift}u)"
        return f"(({e}) & {(1 << dtype.bits) - 1}u)"

    def _isnan(self, x: str, dtype: DType) -> str:
        """A NaN test on the bits: a compiler may fold ``x != x`` away."""
        if dtype.name == "f64":
            return f"((bitcast<u64>({x}) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu)"
        return f"((bitcast<u32>({x}) & 0x7fffffffu) > 0x7f800000u)"

    @staticmethod
    def _fne(a: str, b: str) -> str:
        """Float ``a != b``, true when either is NaN: lavapipe compiles WGSL's ``!=`` on floats as an
        ordered compare (``nan != 1.0`` was false), and ``==`` right."""
        return f"(!({a} == {b}))"

    def _isfinite(self, x: str, dtype: DType) -> str:
        if dtype.name == "f64":
            return f"((bitcast<u64>({x}) & 0x7ffffffffffffffflu) < 0x7ff0000000000000lu)"
        return f"((bitcast<u32>({x}) & 0x7fffffffu) < 0x7f800000u)"

    # --- operators ------------------------------------------------------------------------

    def _unary(self, code: str, dtype: DType, a: str) -> str:
        if code == "not" or (code == "invert" and dtype.is_bool):
            return f"!{a}"
        if code == "invert":
            return self._fix(f"~{a}", dtype)
        if code == "neg":
            if dtype.is_int:
                return self._fix(f"-{a}" if dtype.is_signed else f"({self._lit(0, dtype)} - {a})", dtype)
            return self._down(f"-{self._up(a, dtype)}", dtype)
        if code == "abs":
            if dtype.is_int and not dtype.is_signed:
                return a
            if dtype.is_float:
                # the sign bit cleared: lavapipe took abs(sqrt(x)) as sqrt(x), -0.0 for x = -0.0
                ft = _F32 if dtype.name == "f16" else dtype
                word, sign = ("u64", f"0x{(1 << 63) - 1:x}lu") if ft.bits == 64 else ("u32", f"0x{(1 << 31) - 1:x}u")
                return self._down(f"bitcast<{ft.name}>(bitcast<{word}>({self._up(a, dtype)}) & {sign})", dtype)
            return self._fix(f"abs({a})", dtype)
        if not dtype.is_float:
            raise CubeTypeError(f"{code} of {dtype} is not supported", self.k.name)
        return self._math(code, dtype, a)

    def _math(self, code: str, dtype: DType, *args: str) -> str:
        """A math function of floats: f16 through f32; f64 where GLSL.std.450 has only f32 by `f64math`."""
        if dtype.name == "f64" and code in F32_ONLY:
            return self.f64_math(code, *args)
        fn = self._erf_helper() if code == "erf" else self.d.math[code]
        if code == "sqrt" and self._f32_through_f64(dtype):
            return f"{self._c(dtype)}(sqrt(f64({args[0]})))"
        if dtype.name == "f16":
            inner = ", ".join(f"f32({a})" for a in args)
            return f"{self._c(dtype)}({fn}({inner}))"
        return f"{fn}({', '.join(args)})"

    def _compare(self, code: str, dtype: DType, a: str, b: str) -> str:
        if dtype.is_float and code == "ne":
            return self._fne(a, b)
        if dtype.is_bool and code not in ("eq", "ne"):
            a, b = f"i32({a})", f"i32({b})"
        if dtype.name == "i64" and code not in ("eq", "ne") and self.quirks.ext_compare_wrong:
            # the adapter orders an extended 32-bit value against an i64 constant wrongly, and a
            # constant may come from its own folding (fuzz seed 562420114): the left side plus a
            # run-time zero is neither an extension nor a constant (the right side, where it is a
            # literal, is one plus that zero too: `_lit`)
            self.needs.add("zero_i64")
            a = f"({a} + cb_zero_i64)"
        return f"({a} {COMPARE_SYM[code]} {b})"

    def _operator(self, code: str, dtype: DType, a: str, b: str, nowrap: bool) -> str:
        sym = OPERATORS[code]
        if dtype.is_bool:
            return f"({a} {LOGICAL[code]} {b})" if code in LOGICAL else f"((i32({a}) {sym} i32({b})) != 0i)"
        if dtype.is_int:
            return self._fix(f"({a} {sym} {b})", dtype)
        x, y = self._up(a, dtype), self._up(b, dtype)
        if code == "mul":
            return self._down(self._product(x, y, dtype), dtype)
        if code in ("add", "sub"):
            return self._down(self._sum(x, sym, y, dtype), dtype)
        if code == "div" and self._f32_through_f64(dtype):
            return self._down(f"f32({self._quotient(f'f64({x})', f'f64({y})', _F64)})", dtype)
        if code == "div":
            return self._down(self._quotient(x, y, dtype), dtype)
        return self._down(f"({x} {sym} {y})", dtype)

    def _quotient(self, a: str, b: str, dtype: DType) -> str:
        """Float ``a / b`` that the compiler cannot rewrite as if exact: NVIDIA's Vulkan driver gave
        1, not NaN, for ``x / x`` with ``x`` a zero. Where the adapter folds inexactly, the divisor
        goes through bits with a zero of its own (`_hidden`), so the two operands are never one
        value to it, even where ``a`` went through bits already (hiding it again with the same
        zero would give ``a`` back: ``x | z | z == x | z``)."""
        return f"({a} / {self._hidden(b, dtype, 'divisor_zero')})" if self.quirks.folds_inexact else f"({a} / {b})"

    def _f32_through_f64(self, dtype: DType) -> bool:
        """Whether f32 (and f16) division and square root go through f64: where the adapter's own
        are not correctly rounded (Vulkan allows 2.5 ulp for f32 division) and its f64 ones,
        rounded to f32, are (the probe checks; a quotient or root of f32 values is never close
        enough to an f32 tie for the second rounding to matter)."""
        return dtype.name in ("f32", "f16") and self.quirks.f32_div_sqrt_inexact and self.quirks.f32_through_f64_exact

    def _product(self, a: str, b: str, dtype: DType) -> str:
        """Float ``a * b``, never fused with an add that takes it: where the adapter contracts
        ``a * b + c`` into one rounding (Vulkan allows it, and naga writes no NoContraction), the
        product goes through bits (`_hidden`). A product times an opaque one was not enough:
        NVIDIA's driver still fused it."""
        if not self.quirks.contracts:
            return f"({a} * {b})"
        return self._hidden(f"({a} * {b})", dtype)

    def _sum(self, a: str, sym: str, b: str, dtype: DType) -> str:
        """Float ``a + b`` or ``a - b`` that the compiler cannot rewrite as if exact: where the
        adapter folds ``x - x`` to 0 or ``(a + b) - a`` to ``b``, the sum and its second operand
        go through bits it cannot see through (`_hidden`)."""
        if not self.quirks.folds_inexact:
            return f"({a} {sym} {b})"
        return self._hidden(f"({a} {sym} {self._hidden(b, dtype)})", dtype)

    def _hidden(self, x: str, dtype: DType, zero: str = "zero") -> str:
        """Float ``x`` as itself, by an OR of its bits with a zero known only at run time (``zero``:
        which one, `wgsl._OPAQUE`)."""
        ft = _F32 if dtype.name == "f16" else dtype
        word = f"u{ft.bits}"
        self.needs.add(f"{zero}_{word}")
        return f"bitcast<{ft.name}>(bitcast<{word}>({x}) | cb_{zero}_{word})"

    def _int_min_max(self, code: str, dtype: DType, a: str, b: str, of_negation: bool = False) -> str:
        return f"{code}({a}, {b})"

    def _shift(self, code: str, dtype: DType, a: str, b: str, b_value) -> str:
        """A count outside [0, bits) shifts every bit out (cubepy.ir.semantics); WGSL takes the
        count modulo the width, and a constant count past it is a compile error."""
        bits = dtype.bits
        if code == "shr" and dtype.is_signed:
            gone = f"select({self._lit(0, dtype)}, {self._lit(-1, dtype)}, {a} < {self._lit(0, dtype)})"
        else:
            gone = self._lit(0, dtype)
        if b_value is not None:
            if not 0 <= b_value < bits:
                return gone
            count = f"{b_value}u"
        else:
            count = f"u32({b})"
        shifted = self._fix(f"({a} << {count})", dtype) if code == "shl" else f"({a} >> {count})"
        if b_value is not None:
            return shifted
        limit = self._lit(bits, dtype)
        out = f"({b} < {self._lit(0, dtype)} || {b} >= {limit})" if dtype.is_signed else f"({b} >= {limit})"
        return f"select({shifted}, {gone}, {out})"

    # --- helpers --------------------------------------------------------------------------

    def _fn_helper(self, name: str, params: str, result: str, body: str) -> str:
        return self._helper(name, f"fn {name}({params}) -> {result} {{\n  {body}\n}}")

    def _minmax_helper(self, code: str, dtype: DType) -> str:
        """IEEE 754-2019 minimum/maximum: NaN wins, and -0.0 < +0.0 (the OR / AND of the bits of
        equal operands); WGSL's min/max leave both open."""
        ft = _F32 if dtype.name == "f16" else dtype
        t, ut = self._c(ft), self._c(DTYPES_BY_NAME[f"u{ft.bits}"])
        join = "|" if code == "min" else "&"
        nan = f"if {self._isnan('a', ft)} {{ return a; }}\n  if {self._isnan('b', ft)} {{ return b; }}\n"
        if ft.name == "f32" and self.quirks.flushes_f32_subnormals:
            # a float compare would take subnormals as zeros: compare the bits as ordered integers
            # (negatives with their magnitude bits flipped), where -0.0 < +0.0 too
            key = "(bitcast<i32>({0}) ^ ((bitcast<i32>({0}) >> 31u) & 0x7fffffffi))"
            body = nan + f"  return select(b, a, {key.format('a')} {'<' if code == 'min' else '>'} {key.format('b')});"
        else:
            body = nan + (f"  if (a == b) {{ return bitcast<{t}>(bitcast<{ut}>(a) {join} bitcast<{ut}>(b)); }}\n"
                          f"  return select(b, a, a {'<' if code == 'min' else '>'} b);")
        return self._fn_helper(f"cb_{code}_{ft.name}", f"a: {t}, b: {t}", t, body)

    def _arith_helper(self, code: str, dtype: DType) -> str:
        """Python's ``//`` and ``%`` (integer division by zero gives 0) and ``**``."""
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        t = self._c(dtype)
        zero, one = self._lit(0, dtype), self._lit(1, dtype)
        if dtype.is_float:
            return self._float_arith_helper(code, dtype, name)
        if code == "pow":
            neg = ""
            if dtype.is_signed:
                m1 = self._lit(-1, dtype)
                neg = (f"if (b < {zero}) {{\n    if (a == {one}) {{ return {one}; }}\n"
                       f"    if (a == {m1}) {{ return select({one}, {m1}, (b & {one}) != {zero}); }}\n"
                       f"    return {zero};\n  }}\n  ")
            body = (f"{neg}var r: {t} = {one};\n  var x: {t} = a;\n  var e: {t} = b;\n"
                    f"  loop {{\n    if (e == {zero}) {{ break; }}\n"
                    f"    if ((e & {one}) != {zero}) {{ r = r * x; }}\n    x = x * x;\n    e = e >> 1u;\n  }}\n"
                    f"  return {self._fix('r', dtype)};")
        elif not dtype.is_signed:
            op = "/" if code == "floordiv" else "%"
            body = f"if (b == {zero}) {{ return {zero}; }}\n  return a {op} b;"
        elif code == "floordiv":
            m1 = self._lit(-1, dtype)
            body = (f"if (b == {zero}) {{ return {zero}; }}\n"
                    f"  if (b == {m1}) {{ return {self._fix(f'{zero} - a', dtype)}; }}\n"
                    f"  var q: {t} = a / b;\n"
                    f"  let r = {self._srem('a', 'b', 'q')};\n"
                    f"  if (r != {zero} && ((a < {zero}) != (b < {zero}))) {{ q = q - {one}; }}\n  return q;")
        else:
            m1 = self._lit(-1, dtype)
            body = (f"if (b == {zero} || b == {m1}) {{ return {zero}; }}\n"
                    f"  var r: {t} = {self._srem('a', 'b', '(a / b)')};\n"
                    f"  if (r != {zero} && ((r < {zero}) != (b < {zero}))) {{ r = r + b; }}\n  return r;")
        return self._fn_helper(name, f"a: {t}, b: {t}", t, body)

    def _srem(self, a: str, b: str, quotient: str) -> str:
        """The truncated remainder of signed ``a`` and ``b`` (``b`` not 0 or -1), ``quotient`` being
        ``a / b``: from the quotient where the adapter's ``%`` is wrong for negative operands."""
        return f"({a} - {quotient} * {b})" if self.quirks.srem_wrong else f"({a} % {b})"

    def _float_arith_helper(self, code: str, dtype: DType, name: str) -> str:
        ft = _F32 if dtype.name == "f16" else dtype
        t, ct = self._c(ft), self._c(dtype)
        ut = self._c(DTYPES_BY_NAME[f"u{ft.bits}"])
        sign = f"0x{1 << (ft.bits - 1):x}{'lu' if ft.bits == 64 else 'u'}"
        zero, half, one = self._lit(0.0, ft), self._lit(0.5, ft), self._lit(1.0, ft)

        def copysign_zero(y: str) -> str:
            return f"bitcast<{t}>(bitcast<{ut}>({y}) & {sign})"
        head = f"let x = {self._up('a', dtype)};\n  let y = {self._up('b', dtype)};\n  "
        fmod = self._fmod_helper(ft)
        if code == "pow":
            p, nan = self._math("pow", ft, "abs(x)", "y"), self._lit(float("nan"), ft)
            # C's special cases first: the adapter's pow is exp2(y * log2(x)) (lavapipe gave 0 for a
            # NaN x, NaN for pow(-1, inf) and for pow(-inf, 0.5)); only finite negative x with a
            # non-integer y is NaN
            body = (head + f"if (y == {zero} || x == {one}) {{ return {self._down(one, dtype)}; }}\n"
                    f"  if ({self._isnan('x', ft)} || {self._isnan('y', ft)}) {{ return {self._down(nan, dtype)}; }}\n"
                    f"  if (x == -{one} && !{self._isfinite('y', ft)}) {{ return {self._down(one, dtype)}; }}\n"
                    f"  let odd = floor(y) == y && {self._fne(f'floor(y * {half})', f'y * {half}')};\n"
                    f"  if (x == {zero}) {{\n    let r = select({zero}, {self._lit(float('inf'), ft)}, y < {zero});\n"
                    f"    return {self._down(f'select(r, -r, odd && bitcast<{ut}>(x) != 0)', dtype)};\n  }}\n"
                    f"  if (x < {zero} && {self._isfinite('x', ft)} && {self._fne('floor(y)', 'y')}) {{\n"
                    f"    return {self._down(nan, dtype)};\n  }}\n"
                    f"  let r = {p};\n"
                    f"  return {self._down(f'select(r, -r, x < {zero} && odd)', dtype)};")
        elif code == "mod":
            body = (head + f"var m = {fmod}(x, y);\n"
                    f"  if (y == {zero}) {{ return {self._down('m', dtype)}; }}\n"
                    f"  if {self._fne('m', zero)} {{ if ((y < {zero}) != (m < {zero})) {{ m = m + y; }} }}"
                    f" else {{ m = {copysign_zero('y')}; }}\n"
                    f"  return {self._down('m', dtype)};")
        else:
            body = (head + f"let m = {fmod}(x, y);\n"
                    f"  if (y == {zero}) {{ return {self._down(self._quotient('x', 'y', ft), dtype)}; }}\n"
                    f"  var d = {self._quotient('(x - m)', 'y', ft)};\n"
                    f"  if ({self._fne('m', zero)} && ((y < {zero}) != (m < {zero}))) {{ d = d - {one}; }}\n"
                    f"  var q: {t};\n"
                    f"  if {self._fne('d', zero)} {{ q = floor(d); if (d - q > {half}) {{ q = q + {one}; }} }}"
                    f" else {{ q = {copysign_zero(self._quotient('x', 'y', ft))}; }}\n"
                    f"  return {self._down('q', dtype)};")
        return self._fn_helper(name, f"a: {ct}, b: {ct}", ct, body)

    def _fmod_helper(self, ft: DType) -> str:
        """C's fmod, exact: WGSL's float ``%`` is ``x - y * trunc(x / y)`` on lavapipe, off by an ulp or
        more. |x| is reduced by |y| * 2**k, largest first; each step is exact (Sterbenz), and k
        falls every step. Exponents from the bits (lavapipe's frexp is wrong for subnormals)."""
        t = self._c(ft)
        wide = ft.bits == 64
        ut, bias, mant = ("u64", 1023, 52) if wide else ("u32", 127, 23)
        sfx = "lu" if wide else "u"
        mask = 2 * bias + 1            # the exponent field
        sign = f"0x{1 << (ft.bits - 1):x}{sfx}"
        body = (f"if ({self._isnan('x', ft)} || {self._isnan('y', ft)} || !{self._isfinite('x', ft)} "
                f"|| y == {self._lit(0.0, ft)}) {{ return x - x + (y - y) + {self._lit(float('nan'), ft)}; }}\n"
                f"  let d = abs(y);\n  var r = abs(x);\n"
                f"  if (!{self._isfinite('y', ft)} || r < d) {{ return x; }}\n"
                f"  let ed = max(i32((bitcast<{ut}>(d) >> {mant}u) & {mask}{sfx}), 1i);\n"
                f"  loop {{\n    if (r < d) {{ break; }}\n"
                f"    let k = max(i32((bitcast<{ut}>(r) >> {mant}u) & {mask}{sfx}), 1i) - ed;\n"
                f"    var s = d;\n    var left = k - 1i;\n"
                f"    loop {{\n      if (left <= 0i) {{ break; }}\n      let j = min(left, {bias - 1}i);\n"
                f"      s = s * bitcast<{t}>({ut}(j + {bias}i) << {mant}u);\n      left = left - j;\n    }}\n"
                f"    loop {{\n      let s2 = s * {self._lit(2.0, ft)};\n      if (s2 > r) {{ break; }}\n"
                f"      s = s2;\n    }}\n"
                f"    r = r - s;\n  }}\n"
                f"  return bitcast<{t}>(bitcast<{ut}>(r) | (bitcast<{ut}>(x) & {sign}));")
        return self._fn_helper(f"cb_fmod_{ft.name}", f"x: {t}, y: {t}", t, body)

    def _erf_helper(self) -> str:
        """erf in f32, which WGSL lacks: a Taylor series near 0, else 1 - erfc by the Chebyshev fit
        of Numerical Recipes (relative error below 1.2e-7)."""
        body = ("let z = abs(x);\n"
                "  if (z < 0.5f) {\n    let s = x * x;\n"
                "    return x * (1.1283791671f + s * (-0.3761263890f + s * (0.1128379167f + s * (-0.0268661706f"
                " + s * (0.0052239776f + s * (-0.0008548327f))))));\n  }\n"
                "  let t = 1.0f / (1.0f + 0.5f * z);\n"
                "  let e = t * exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f"
                " + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f"
                " + t * (-0.82215223f + t * 0.17087277f)))))))));\n"
                "  return select(e - 1.0f, 1.0f - e, x >= 0.0f);")
        return self._fn_helper("cb_erf", "x: f32", "f32", body)

    # --- casts ----------------------------------------------------------------------------

    def _cast(self, a: str, src: DType, dst: DType) -> str:
        if dst.is_bool:
            return self._fne(a, self._lit(0, src)) if src.is_float else f"({a} != {self._lit(0, src)})"
        if src.is_bool:
            return f"select({self._lit(0, dst)}, {self._lit(1, dst)}, {a})"
        if src.is_float and dst.is_int:
            return f"{self._float_to_int_helper(src, dst)}({self._up(a, src)})"
        if dst.name == "f16" and src.name != "f16":      # rounded once, from f32 (f64 rounded to odd first)
            wide = (f"{self._float_rounded_to_odd()}({a})" if src.name == "f64" else
                    a if src.name == "f32" else self._from_int(f"f32({a})", _F32))
            return self._down(wide, dst)
        if self._c(src) == self._c(dst):
            return self._fix(a, dst) if src.bits > dst.bits or src.is_signed != dst.is_signed else a
        if src.is_int and dst.bits == 64 and src.bits < 64:
            # widen within the source's signedness first: naga's i64(u32) sign-extends, u64(i32) does not
            a = f"{'i64' if src.is_signed else 'u64'}({a})"
        converted = self._fix(f"{self._c(dst)}({a})", dst)
        return self._from_int(converted, dst) if src.is_int and dst.is_float else converted

    def _from_int(self, x: str, dtype: DType) -> str:
        """A float converted from an integer, where the adapter rewrites float ops as if exact: an
        integer it folds to a constant would enter float math as a constant it can see, and Mesa's
        NIR (lavapipe) then makes ``0.0 / y`` 0 and drops the store of ``x / 0.0`` (fuzz seed
        812060299); through bits (`_hidden`) it is a value like any other."""
        return self._hidden(x, dtype) if self.quirks.folds_inexact else x

    def _float_rounded_to_odd(self) -> str:
        """f64 -> f32 rounded to odd (toward zero, last bit set when inexact): that rounds to f16
        correctly, as on the CPU backend."""
        body = (f"var f = f32(x);\n  if (f64(f) != x && !{self._isnan('x', DTYPES_BY_NAME['f64'])}) {{\n"
                "    var b = bitcast<u32>(f);\n    if (abs(f64(f)) > abs(x)) { b = b - 1u; }\n"
                "    f = bitcast<f32>(b | 1u);\n  }\n  return f;")
        return self._fn_helper("cb_f64_to_f32_odd", "x: f64", "f32", body)

    def _float_to_int_helper(self, src: DType, dst: DType) -> str:
        """Toward zero, saturating at the type's bounds, NaN gives 0 (cubepy.ir.semantics)."""
        ft = _F32 if src.name == "f16" else src
        t = self._c(dst)
        low, high = (-(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1) if dst.is_signed else (0, (1 << dst.bits) - 1)
        body = (f"if {self._isnan('x', ft)} {{ return {self._lit(0, dst)}; }}\n"
                f"  if (x >= {self._lit(float(high + 1), ft)}) {{ return {self._lit(high, dst)}; }}\n"
                f"  if (x <= {self._lit(float(low), ft)}) {{ return {self._lit(low, dst)}; }}\n"
                f"  return {t}(x);")
        return self._fn_helper(f"cb_cast_{ft.name}_{dst.name}", f"x: {self._c(ft)}", t, body)

    # --- value ops --------------------------------------------------------------------------

    def _fma(self, dtype: DType) -> str:
        """a * b + c rounded once. WGSL's fma may round twice (Vulkan lets GLSL.std.450 Fma be a
        multiply and an add; lavapipe does so), so: Dekker's exact product, an exact sum, and the
        low parts added rounded to odd (Boldo and Melquiond, "Emulation of FMA and correctly rounded
        sums", 2008), in a range where no step overflows (`_fma_core`). Infinities and NaNs take the
        plain expression, which is exact there, but for an infinite ``c`` after a finite product
        (``c``: ``a * b`` may overflow); a zero ``c`` gives the product (whose sign a sum with
        ``+0.0`` could lose). Where the probe found the adapter's fma rounds once (NVIDIA's
        driver), that fma."""
        dtype = _F32 if dtype.name == "f16" else dtype
        if self.quirks.fma_f64_exact if dtype.name == "f64" else self.quirks.fma_f32_exact:
            return "fma"
        if dtype.name == "f32" and self.quirks.f64_to_f32_exact:
            return self._fma_f32_through_f64()
        t = self._c(dtype)
        zero, half, two = self._lit(0.0, dtype), self._lit(0.5, dtype), self._lit(2.0, dtype)
        emax = 1023 if dtype.bits == 64 else 127
        big, tiny = self._lit(2.0 ** (emax - 1), dtype), self._lit(2.0 ** -100, dtype)
        # a product under 2**tiny_exp: Dekker's low part could underflow (below 2**-970, 2**-103)
        tiny_exp, scale = (-900, 600) if dtype.bits == 64 else (-90, 64)
        core = self._fma_core(dtype)

        def finite(x: str) -> str:
            return self._isfinite(x, dtype)
        plain = self._sum("p", "+", "c", dtype)
        # a product or c from 2**(emax - 1) up (the product overflowed, perhaps): the larger factor
        # and c halved (exact: neither is subnormal there, and a tiny c only breaks a tie, by its
        # sign), the result doubled; a halved product still infinite is the exact one's overflow
        body = (f"let p = {self._mul_exact('a', 'b', dtype)};\n"
                f"  {self._fma_non_finite(dtype, plain)}\n"
                f"  if (a == {zero} || b == {zero}) {{ return {plain}; }}\n"
                f"  if (c == {zero}) {{ return p; }}\n"
                f"  if (abs(p) < {self._lit(2.0 ** tiny_exp, dtype)}"
                f" && abs(c) < {self._lit(2.0 ** (emax - 1 - scale), dtype)}) {{\n"
                f"    return {self._fma_tiny(dtype, tiny_exp, scale)}(a, b, c);\n  }}\n"
                f"  if (p == {zero}) {{ return c; }}\n"
                f"  if (abs(p) < {big} && abs(c) < {big}) {{ return {core}(a, b, c); }}\n"
                f"  let ch = select(c * {half}, c, abs(c) < {tiny});\n"
                f"  let ah = select(a, a * {half}, abs(a) >= abs(b));\n"
                f"  let bh = select(b * {half}, b, abs(a) >= abs(b));\n"
                f"  let ph = ah * bh;\n"
                f"  if (!{finite('ph')}) {{ return ph; }}\n"
                f"  return {core}(ah, bh, ch) * {two};")
        return self._fn_helper(f"cb_fma_{dtype.name}", f"a: {t}, b: {t}, c: {t}", t, body)

    def _fma_f32_through_f64(self) -> str:
        """f32 a * b + c rounded once, through f64 where the adapter's f64 to f32 conversion rounds
        correctly (lavapipe): the product is exact in f64 and the f64 sum ``s`` rounded once, so
        rounding ``s`` to f32 is wrong only where ``s`` is an f32 midpoint (the threshold of
        rounding to infinity, the largest float plus half an ulp, included), and there the sum's
        exact error (TwoSum) says on which side the exact value lies. Every step is in range, f32's
        subnormals included, which the f32 emulation's Dekker product is not."""
        f64 = DTYPES_BY_NAME["f64"]
        zero, half = self._lit(0.0, f64), self._lit(0.5, f64)
        big = self._lit(float(np.finfo(np.float32).max), _F32)
        threshold = self._lit(float(np.finfo(np.float32).max) + 2.0 ** 103, f64)

        def add(x: str, y: str) -> str:
            return self._sum(x, "+", y, f64)

        def sub(x: str, y: str) -> str:
            return self._sum(x, "-", y, f64)
        plain = self._sum(self._mul_exact('a', 'b', _F32), '+', 'c', _F32)
        body = (f"{self._fma_non_finite(_F32, plain)}\n"
                f"  let p = {self._mul_exact('f64(a)', 'f64(b)', f64)};\n  let cw = f64(c);\n"
                f"  let s = {add('p', 'cw')};\n  let bv = {sub('s', 'p')};\n"
                f"  let t = {add(sub('p', sub('s', 'bv')), sub('cw', 'bv'))};\n"
                f"  let away = t == {zero} || (t > {zero}) == (s > {zero});\n"
                f"  if (abs(s) >= {threshold}) {{\n"
                f"    let top = select({big}, bitcast<f32>(0x7f800000u), abs(s) > {threshold} || away);\n"
                f"    return select(-top, top, s > {zero});\n  }}\n"
                f"  let r = f32(s);\n  let back = f64(r);\n"
                f"  {self._midpoint_corrected('r', 'back', 's', 't', _F32, lambda n: f'f64({n})', half, zero)}")
        return self._fn_helper("cb_fma_f32", "a: f32, b: f32, c: f32", "f32", body)

    def _fma_tiny(self, dtype: DType, tiny_exp: int, scale: int) -> str:
        """The emulated fma where the product is under ``2**tiny_exp`` and ``c`` small enough to
        scale: the smaller factor and ``c`` times ``2**scale`` (exact), the core's result and the
        sign of its error (`_fma_core` with ``residual``), scaled back by one rounding, which is
        wrong only at a midpoint of the result's spacing (subnormal results): there the sign
        decides. A product still tiny when scaled is under a quarter of c's ulp: ``c``."""
        t = self._c(dtype)
        zero, half = self._lit(0.0, dtype), self._lit(0.5, dtype)
        up, down = self._lit(2.0 ** scale, dtype), self._lit(2.0 ** -scale, dtype)
        core = self._fma_core(dtype, residual=True)
        corrected = self._midpoint_corrected('q', 'back', 'rd.x', 'rd.y', dtype, lambda n: f"{n} * {up}", half, zero)
        body = (f"let small_a = abs(a) <= abs(b);\n"
                f"  let sa = select(a, a * {up}, small_a);\n  let sb = select(b * {up}, b, small_a);\n"
                f"  if (abs({self._mul_exact('sa', 'sb', dtype)}) < {self._lit(2.0 ** tiny_exp, dtype)}) {{\n"
                f"    return c;\n  }}\n"
                f"  let rd = {core}(sa, sb, c * {up});\n"
                f"  let q = {self._hidden(f'(rd.x * {down})', dtype)};\n"
                f"  let back = {self._hidden(f'(q * {up})', dtype)};\n"
                f"  {corrected}")
        return self._fn_helper(f"cb_fma_tiny_{dtype.name}", f"a: {t}, b: {t}, c: {t}", t, body)

    def _fma_non_finite(self, dtype: DType, plain: str) -> str:
        """An fma's statement for infinite or NaN operands: ``plain`` (``a * b + c``, exact there),
        but ``c`` for an infinite ``c`` after a finite product (``a * b`` may overflow)."""
        def finite(x: str) -> str:
            return self._isfinite(x, dtype)
        return (f"if (!{finite('a')} || !{finite('b')} || !{finite('c')}) {{\n"
                f"    if ({finite('a')} && {finite('b')} && !{self._isnan('c', dtype)}) {{ return c; }}\n"
                f"    return {plain};\n  }}")

    def _midpoint_corrected(self, r: str, back: str, wide: str, error: str, dtype: DType, widen,
                            half: str, zero: str) -> str:
        """The return of ``r``, ``wide`` rounded once more to ``dtype`` (``back``: ``r`` widened),
        or of its neighbour toward ``wide`` where ``wide`` lies exactly halfway between them and
        ``error`` (of the sign of the exact value less ``wide``) points that way: the exact value
        was past the midpoint. ``widen(n)`` takes a ``dtype`` value to ``wide``'s terms; ``half``
        and ``zero`` are literals of ``wide``'s type."""
        word = self._c(DTYPES_BY_NAME[f"u{dtype.bits}"])
        one = self._lit(1, DTYPES_BY_NAME[f"u{dtype.bits}"])
        toward = f"abs({wide}) > abs({back})"
        return (f"let bits = bitcast<{word}>({r});\n"
                f"  let n = bitcast<{self._c(dtype)}>(select(bits - {one}, bits + {one}, {toward}));\n"
                f"  let tie = {self._fne(back, wide)} && {wide} == ({back} + {widen('n')}) * {half};\n"
                f"  return select({r}, n, tie && {self._fne(error, zero)} && ({error} > {zero}) == ({wide} > {back}));")

    def _mul_exact(self, x: str, y: str, dtype: DType) -> str:
        """A product never fused, folded or simplified."""
        product = f"({x} * {y})"
        return self._hidden(product, dtype) if self.quirks.folds_inexact or self.quirks.contracts else product

    def _fma_core(self, dtype: DType, residual: bool = False) -> str:
        """The emulated fma of finite non-zero a, b, c whose product and c are below 2**(emax - 1)
        (no sum overflows): a factor from 2**100 (f32; 2**900 for f64) up is scaled down and the
        other up by the same power of two, so that Veltkamp's split (times 2**12 + 1, 2**27 + 1)
        cannot overflow. With ``residual``: ``vec2(r, d)``, ``d`` of the sign of the exact
        ``a * b + c - r`` (0 where ``r`` is exact): the final sum's own error where it has one (a
        non-zero multiple of the smaller operand's ulp, larger than what the rounding to odd left),
        else the sign of that leftover."""
        t = self._c(dtype)
        word = DTYPES_BY_NAME[f"u{dtype.bits}"]
        zero, one = self._lit(0.0, dtype), self._lit(1, word)
        split = self._lit(float(2 ** (27 if dtype.bits == 64 else 12) + 1), dtype)
        large = self._lit(2.0 ** (900 if dtype.bits == 64 else 100), dtype)
        down, up = (self._lit(2.0 ** k, dtype) for k in ((-450, 450) if dtype.bits == 64 else (-64, 64)))

        def mul(x: str, y: str) -> str:
            return self._mul_exact(x, y, dtype)

        def add(x: str, y: str) -> str:
            return self._sum(x, "+", y, dtype)

        def sub(x: str, y: str) -> str:
            return self._sum(x, "-", y, dtype)
        low_product = add(add(add(sub(mul("ah", "bh"), "p"), mul("ah", "bl")), mul("al", "bh")), mul("al", "bl"))
        body = (f"var a = a_in;\n  var b = b_in;\n"
                f"  if (abs(a) >= {large}) {{ a = a * {down}; b = b * {up}; }}\n"
                f"  if (abs(b) >= {large}) {{ b = b * {down}; a = a * {up}; }}\n"
                f"  let p = {mul('a', 'b')};\n"
                f"  let ga = {mul('a', split)};\n  let ah = {sub('ga', sub('ga', 'a'))};\n"
                f"  let al = {sub('a', 'ah')};\n"
                f"  let gb = {mul('b', split)};\n  let bh = {sub('gb', sub('gb', 'b'))};\n"
                f"  let bl = {sub('b', 'bh')};\n"
                f"  let pl = {low_product};\n"
                f"  let sh = {add('p', 'c')};\n  let bv = {sub('sh', 'p')};\n"
                f"  let sl = {add(sub('p', sub('sh', 'bv')), sub('c', 'bv'))};\n"
                f"  let v = {add('pl', 'sl')};\n  let w = {sub('v', 'pl')};\n"
                f"  let e = {add(sub('pl', sub('v', 'w')), sub('sl', 'w'))};\n"
                f"  var odd = bitcast<{self._c(word)}>(v);\n"
                f"  if (e != {zero} && (odd & {one}) == {self._lit(0, word)}) {{\n"
                f"    odd = select(odd - {one}, odd + {one}, (e > {zero}) == (v > {zero}));\n  }}\n"
                f"  let u = bitcast<{t}>(odd);\n")
        if not residual:
            body += f"  return {add('sh', 'u')};"
            return self._fn_helper(f"cb_fma_core_{dtype.name}", f"a_in: {t}, b_in: {t}, c: {t}", t, body)
        # v + e - u: 0 where e is, e where v was odd already (u = v), else e less an ulp of v
        # toward it: the opposite sign
        body += (f"  let r = {add('sh', 'u')};\n  let rb = {sub('r', 'sh')};\n"
                 f"  let err = {add(sub('sh', sub('r', 'rb')), sub('u', 'rb'))};\n"
                 f"  let left = select(select(-e, e, bitcast<{self._c(word)}>(v) == odd), {zero}, e == {zero});\n"
                 f"  return vec2<{t}>(r, select(left, err, {self._fne('err', zero)}));")
        return self._fn_helper(f"cb_fma_core_residual_{dtype.name}", f"a_in: {t}, b_in: {t}, c: {t}",
                               f"vec2<{t}>", body)


__all__ = ["WgslArithmetic"]
