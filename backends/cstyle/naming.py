"""How the IR is spelled in C: identifiers, C types of values and Lines, literals, operand expressions
(a mixin of `renderer._Renderer`)."""

from __future__ import annotations

import math
import re

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import Const, Value, Var
from cubepy.ir.semantics import wrap
from cubepy.ir.types import DTYPES_BY_NAME, DType, Type, f32

C_WORDS = set("""auto bool break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while half kernel global local constant private true false class template new delete this namespace
operator private public using virtual and or not xor bitand bitor compl and_eq or_eq not_eq xor_eq
min max abs""".split())

HALF = ("f16", "bf16")   # computed in float, stored as themselves


class Naming:
    """Names, C types and literals; the renderer provides k, d, used, names, structs, needs."""

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
        # numbered in the order of first use, not by the process-wide Value.id: a kernel traced in
        # another process (an autotune worker, a fresh run) must render the same source, since the
        # disk cache is keyed by it
        n = self.names.get(v.id)
        if n is None:
            n = self.names[v.id] = f"v{self.values_named}"
            self.values_named += 1
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
            v = wrap(int(value), dtype)
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
        elif value == 0 and math.copysign(1.0, value) < 0 and dtype.name == "f32" and self.d.negative_zero_f32:
            name = "cb_negative_zero_f32"
            self._helper(name, f"{self.d.device_fn} float {name}() {{\n{self.d.negative_zero_f32}\n}}")
            return f"{name}()"
        else:
            s = repr(value)
            if "e" not in s and "." not in s:
                s += ".0"
            if dtype.name != "f64":
                s += "f"
            if s.startswith("-"):       # so that a negation in front never reads as `--`
                s = f"({s})"
            return s if dtype.name in ("f32", "f64") else f"(({ct}){s})"
        return s if dtype.name == "f32" else f"(({ct}){s})"

    def _fn(self, name: str, dtype: DType) -> str:
        """A math function for the (float) compute type of ``dtype``."""
        cd = f32 if dtype.name in HALF else dtype
        self._c(cd)
        return self.d.math[name] + self.d.float_suffix.get(cd.name, "")


__all__ = ["C_WORDS", "HALF", "Naming"]
