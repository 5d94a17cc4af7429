"""Arithmetic: unary, binary and compare operators, casts, fma/select and Line element ops, with the
preamble helpers for Python's ``//``, ``%`` and ``**`` (a mixin of `renderer._Renderer`)."""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import COMPARE, Op
from cubepy.ir.types import DTYPES_BY_NAME, DType

from .naming import HALF

COMPARE_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


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
                return f"(({self._c(dtype)})(-({self._c(self._unsigned(dtype))}){a}))"
            return self._down(f"-{self._up(a, dtype)}", dtype)
        if code == "abs":
            if dtype.is_float:
                return self._down(f"{self._fn('abs', dtype)}({self._up(a, dtype)})", dtype)
            if not dtype.is_signed:
                return a
            return f"({a} < 0 ? ({self._c(dtype)})(-({self._c(self._unsigned(dtype))}){a}) : {a})"
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
            if code in ("add", "sub", "mul") and dtype.is_int and (dtype.is_signed or dtype.bits < 32):
                # Wrap as the IR says: signed overflow is undefined in C (compilers fold on it), and
                # narrow types are promoted to a signed int, so compute in an unsigned type.
                ut = self._c(self._unsigned(dtype))
                return f"(({self._c(dtype)})(({ut}){a} {sym} ({ut}){b}))"
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

    @staticmethod
    def _unsigned(dtype: DType) -> DType:
        """The unsigned type integer arithmetic on ``dtype`` wraps in: same width, at least 32 bits."""
        return DTYPES_BY_NAME[f"u{max(32, dtype.bits)}"]

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
                body = (f"{ft} x = ({ft})a, y = ({ft})b, m = {fmod}(x, y);\n"
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
        if src.name in HALF or dst.name in HALF:
            return f"(({ct})((float)({a})))"
        return f"(({ct}){a})"

    # --- value ops -----------------------------------------------------------------------

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


__all__ = ["COMPARE_SYM", "Arithmetic"]
