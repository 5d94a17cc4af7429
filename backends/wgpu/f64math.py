"""f64 exp, log, sin, cos, tanh, erf and pow in WGSL: GLSL.std.450 (what naga's SPIR-V calls) has
these for 16- and 32-bit floats only. Classic argument reductions (Cody-Waite with split constants)
and series to a few ulp, so f64 results agree with NumPy to 1e-12 (a mixin of `wgsl.WgslRenderer`).
Trigonometric reduction is exact for |x| up to about 1e5; beyond it the error grows, and past 1e9
the result is only some value in [-1, 1] (no Payne-Hanek reduction)."""

from __future__ import annotations

_NAN = "bitcast<f64>(0x7ff8000000000000lu)"
_INF = "bitcast<f64>(0x7ff0000000000000lu)"
_SIGN = "0x8000000000000000lu"


def _horner(var: str, coefficients: list[str]) -> str:
    """``c0 + var * (c1 + var * (...))``."""
    out = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = f"({c} + {var} * {out})"
    return out


def _lf(x: float) -> str:
    s = repr(x)
    return f"({s}lf)" if s.startswith("-") else f"{s}lf"


class F64Math:
    """Helpers named cb_<fn>_f64; `f64_math` gives the call of one."""

    def f64_math(self, code: str, *args: str) -> str:
        if code == "pow":
            return f"{self._f64_helper('exp')}({args[1]} * {self._f64_helper('log')}({args[0]}))"
        return f"{self._f64_helper(code)}({args[0]})"

    def _f64_helper(self, code: str) -> str:
        name = f"cb_{code}_f64"
        if name not in self.helpers:
            self._helper(name, getattr(self, f"_f64_{code}")(name))
        return name

    @staticmethod
    def _is_nan(x: str) -> str:
        return f"((bitcast<u64>({x}) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu)"

    def _f64_exp(self, name: str) -> str:
        import math
        taylor = _horner("r", [_lf(1 / math.factorial(n)) for n in range(14)])
        return (f"fn cb_pow2_f64(k: i32) -> f64 {{ return bitcast<f64>(u64(k + 1023i) << 52u); }}\n\n"
                f"fn {name}(x: f64) -> f64 {{\n"
                f"  if {self._is_nan('x')} {{ return x; }}\n"
                f"  if (x > 709.782712893384lf) {{ return {_INF}; }}\n"
                f"  if (x < -745.1332191019412lf) {{ return 0.0lf; }}\n"
                f"  let k = floor(x * 1.4426950408889634lf + 0.5lf);\n"
                f"  let r = (x - k * 6.93147180369123816490e-01lf) - k * 1.90821492927058770002e-10lf;\n"
                f"  let p = {taylor};\n"
                f"  let n = i32(k);\n"
                f"  let h = n / 2i;\n"
                f"  return p * cb_pow2_f64(h) * cb_pow2_f64(n - h);\n}}")

    def _f64_log(self, name: str) -> str:
        series = _horner("z", [_lf(1 / (2 * n + 1)) for n in range(11)])
        return (f"fn {name}(x_in: f64) -> f64 {{\n"
                f"  if ({self._is_nan('x_in')} || x_in < 0.0lf) {{ return {_NAN}; }}\n"
                f"  if (x_in == 0.0lf) {{ return -{_INF}; }}\n"
                f"  if (x_in == {_INF}) {{ return x_in; }}\n"
                f"  var x = x_in;\n  var e = 0i;\n"
                f"  if (x < 2.2250738585072014e-308lf) {{ x = x * 18014398509481984.0lf; e = -54i; }}\n"
                f"  let bits = bitcast<u64>(x);\n"
                f"  e = e + i32((bits >> 52u) & 0x7fflu) - 1023i;\n"
                f"  var m = bitcast<f64>((bits & 0x000fffffffffffffflu) | 0x3ff0000000000000lu);\n"
                f"  if (m > 1.4142135623730951lf) {{ m = m * 0.5lf; e = e + 1i; }}\n"
                f"  let f = m - 1.0lf;\n  let s = f / (2.0lf + f);\n  let z = s * s;\n"
                f"  let k = f64(e);\n"
                f"  return k * 6.93147180369123816490e-01lf"
                f" + (2.0lf * s * {series} + k * 1.90821492927058770002e-10lf);\n}}")

    def _f64_sincos(self) -> str:
        """cb_sincos_f64(x, which): sin (which 0) or cos (which 1) of x, by the quadrant of x."""
        import math
        sin_poly = _horner("z", [_lf((-1) ** n / math.factorial(2 * n + 1)) for n in range(9)])
        cos_poly = _horner("z", [_lf((-1) ** n / math.factorial(2 * n)) for n in range(10)])
        name = "cb_sincos_f64"
        if name not in self.helpers:
            self._helper(name, (
                f"fn {name}(x_in: f64, which: i32) -> f64 {{\n"
                f"  if ({self._is_nan('x_in')} || abs(x_in) == {_INF}) {{ return {_NAN}; }}\n"
                f"  var x = x_in;\n"
                f"  if (abs(x) > 1e9lf) {{ x = 6.283185307179586lf * fract(x * 0.15915494309189535lf); }}\n"
                f"  let k = floor(x * 0.6366197723675814lf + 0.5lf);\n"
                f"  let r = ((x - k * 1.57079632673412561417e+00lf) - k * 6.07710050630396597660e-11lf)"
                f" - k * 2.02226624871116645580e-21lf;\n"
                f"  let z = r * r;\n  let s = r * {sin_poly};\n  let c = {cos_poly};\n"
                f"  let q = (i32(k) + which) & 3i;\n"
                f"  if (q == 0i) {{ return s; }}\n  if (q == 1i) {{ return c; }}\n"
                f"  if (q == 2i) {{ return -s; }}\n  return -c;\n}}"))
        return name

    def _f64_sin(self, name: str) -> str:
        return f"fn {name}(x: f64) -> f64 {{ return {self._f64_sincos()}(x, 0i); }}"

    def _f64_cos(self, name: str) -> str:
        return f"fn {name}(x: f64) -> f64 {{ return {self._f64_sincos()}(x, 1i); }}"

    def _f64_tanh(self, name: str) -> str:
        import math
        expm1 = "y * " + _horner("y", [_lf(1 / math.factorial(n + 1)) for n in range(19)])
        return (f"fn {name}(x: f64) -> f64 {{\n  let a = abs(x);\n  var t: f64;\n"
                f"  if (a > 22.0lf) {{ t = 1.0lf; }}\n"
                f"  else if (a < 0.5lf) {{ let y = 2.0lf * a; let e = {expm1}; t = e / (e + 2.0lf); }}\n"
                f"  else {{ t = 1.0lf - 2.0lf / ({self._f64_helper('exp')}(2.0lf * a) + 1.0lf); }}\n"
                f"  return bitcast<f64>(bitcast<u64>(t) | (bitcast<u64>(x) & {_SIGN}));\n}}")

    def _f64_erf(self, name: str) -> str:
        # erf(a) = 2/sqrt(pi) exp(-a^2) sum 2^n a^(2n+1) / (1*3*...*(2n+1)): positive terms, no cancellation
        return (f"fn {name}(x: f64) -> f64 {{\n  let a = abs(x);\n  var r = 1.0lf;\n"
                f"  if {self._is_nan('x')} {{ return x; }}\n"
                f"  if (a < 6.0lf) {{\n    let a2 = 2.0lf * a * a;\n    var term = a;\n    var s = a;\n"
                f"    for (var n = 1i; n < 400i; n = n + 1i) {{\n"
                f"      term = term * a2 / f64(2i * n + 1i);\n      s = s + term;\n"
                f"      if (term < s * 1e-17lf) {{ break; }}\n    }}\n"
                f"    r = 1.1283791670955126lf * {self._f64_helper('exp')}(-a * a) * s;\n  }}\n"
                f"  return bitcast<f64>(bitcast<u64>(r) | (bitcast<u64>(x) & {_SIGN}));\n}}")


__all__ = ["F64Math"]
