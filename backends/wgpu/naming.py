"""How the IR is spelled in WGSL: identifiers, types (Lines are ``array<T, W>``) and literals
(a mixin of `wgsl.WgslRenderer`, over the C-style renderer's naming)."""

from __future__ import annotations

import math

from cubepy.errors import CubeTypeError
from cubepy.ir.semantics import wrap
from cubepy.ir.types import DType, Type

from ..cstyle.naming import Naming
from .dialect import FLOAT_BITS, FLOAT_SUFFIX, INT_SUFFIX


class WgslNaming(Naming):
    """Names, WGSL types and literals."""

    def _ident(self, s: str) -> str:
        s = super()._ident(s)
        return "u" + s if s.startswith("_") else s      # `_` and `__x` are reserved in WGSL

    def _c(self, dtype: DType) -> str:
        if dtype.name not in self.d.types:
            raise CubeTypeError(f"{dtype} has no WGSL type", self.k.name, self.k.loc)
        return super()._c(dtype)

    def _vt(self, t: Type) -> str:
        return self._c(t.dtype) if t.width == 1 else f"array<{self._c(t.dtype)}, {t.width}>"

    def _el(self, expr: str, t: Type, i: int | None) -> str:
        return expr if i is None or t.width == 1 else f"{expr}[{i}]"

    def _arg(self, a, i: int | None = None) -> str:
        bound = self.bound_consts.get(a.id)
        return super()._arg(a, i) if bound is None else bound

    def _lit(self, value, dtype: DType) -> str:
        if dtype.is_bool:
            return "true" if value else "false"
        if dtype.is_int:
            v = wrap(int(value), dtype)
            wide = self._c(dtype)
            suffix = INT_SUFFIX[wide]
            if v == -(1 << 31) and wide == "i32":
                return "i32(-2147483648)"
            text = f"(-{2**63 - 1}{suffix} - 1{suffix})" if v == -(1 << 63) else f"{v}{suffix}" if v >= 0 else \
                f"({v}{suffix})"
            if wide == "i64" and self.quirks.ext_compare_wrong:
                # lavapipe (Mesa 22.3, LLVM 15) orders an extended 32-bit value against an i64
                # constant wrongly (v < 2 false for v = 0): an i64 literal is a value it cannot see
                # through, which also covers the helpers' own compares (fuzz seed 652800114:
                # `b < 0li` in `cb_mod_i64` once `b` was a constant); `_compare` covers the
                # constants it folds itself
                self.needs.add("zero_i64")
                return f"({text} + cb_zero_i64)"
            return text
        value = float(value)
        self._c(dtype)
        if math.isnan(value) or math.isinf(value):
            base = "f64" if dtype.name == "f64" else "f32"
            word, inf, nan = FLOAT_BITS[base]
            sign = 1 << (63 if base == "f64" else 31)
            bits = nan if math.isnan(value) else inf | (sign if value < 0 else 0)
            s = f"bitcast<{base}>({bits:#x}{INT_SUFFIX[word]})"
            return s if base == dtype.name or dtype.name != "f16" else f"f16({s})"
        # Mesa's NIR (lavapipe) takes float ops without SPIR-V's NoContraction, which naga does not
        # write, as inexact, and rewrites those with constants: x * 0.0 -> 0.0 loses the sign of
        # zero, (x * x) * c -> x * (x * c) rounds otherwise. A constant it cannot see through (a
        # zero, or the literal times a one, from a value only known at run time) keeps IEEE's rules.
        if value == 0.0:
            self.needs.add(f"zero_{dtype.name}")
            return f"(-cb_zero_{dtype.name})" if math.copysign(1.0, value) < 0 else f"cb_zero_{dtype.name}"
        s = repr(value)
        if "e" not in s and "." not in s:
            s += ".0"
        s += FLOAT_SUFFIX[dtype.name]
        self.needs.add(f"one_{dtype.name}")
        return f"({s} * cb_one_{dtype.name})"


__all__ = ["WgslNaming"]
