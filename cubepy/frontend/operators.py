"""Typing and arithmetic on traced values: promotion, casts, Line broadcast, folding.

Python numbers are trace-time constants and *weakly typed*: ``x * 2`` keeps ``x``'s type, as in
Python with NumPy scalars, and a literal that does not fit that type is an error (NumPy 2 raises
too), never a silent wrap. Two traced operands promote by `cubepy.ir.types.promote`. Folding
(`folding.py`) gives what the operation gives at run time.
"""

from __future__ import annotations

from ..errors import CubeTypeError, CubeValueError
from ..ir.nodes import BINARY, Const, Value
from ..ir.types import (
    INDEX,
    DType,
    PromotionError,
    Type,
    bool_,
    default_literal_dtype,
    f32,
    f64,
    promote,
)
from .folding import (
    I32,
    FoldError,
    cast_constant,
    fold_python_binary,
    fold_python_minmax,
    fold_python_unary,
    fold_typed_binary,
    fold_typed_compare,
    fold_typed_unary,
    literal_value,
)
from .scope import ShapeSpecific
from .values import FormatString

NUMBER = (bool, int, float)


def is_traced(x) -> bool:
    return isinstance(x, Value)


def is_number(x) -> bool:
    return isinstance(x, NUMBER)


class Ops:
    """Arithmetic helpers bound to one tracing context (``ctx.builder``, ``ctx.error``)."""

    def __init__(self, ctx):
        self.ctx = ctx

    @property
    def b(self):
        return self.ctx.builder

    # --- values and casts -------------------------------------------------------------------
    def const(self, value, dtype: DType, width: int = 1) -> Const:
        """A constant of ``dtype`` converted as a run-time cast converts (`folding.cast_constant`)."""
        c = Const(cast_constant(value, dtype), Type(dtype))
        return self.broadcast(c, width) if width > 1 else c

    def literal(self, x, dtype: DType, what: str | None = None) -> Const:
        """The Python literal ``x`` as a constant of ``dtype``; it must fit (`folding.literal_value`)."""
        try:
            return Const(literal_value(x, dtype), Type(dtype))
        except FoldError as e:
            fix = (f"; write {dtype}({x!r}) to convert it as a cast does" if not isinstance(x, float) or dtype.is_float
                   else "")
            self.ctx.error(CubeValueError, f"{e}{f', the type of {what}' if what else ''}{fix}")

    def lift(self, x, like: Type | None = None, what: str | None = None) -> Value:
        """A traced value for ``x``: a Python number takes ``like``'s dtype when its kind fits
        (and must then fit its range); an `I32` is always an i32."""
        if is_traced(x):
            return x
        if isinstance(x, I32):
            return Const(int(x), Type(INDEX))
        if is_number(x):
            if like is not None and _literal_fits(x, like.dtype):
                return self.literal(x, like.dtype, what or "the other operand")
            dtype = default_literal_dtype(x)
            if not isinstance(x, (bool, float)) and not -(2**63) <= x < 2**63:
                self.ctx.error(CubeValueError, f"the integer {x} does not fit i64, the widest integer type")
            return self.literal(x, dtype)
        self.ctx.error(CubeTypeError, f"expected a number or a traced value, got {_describe(x)}")

    def cast(self, x, dtype: DType) -> Value:
        """An explicit conversion: integers wrap, floats round, float to integer saturates."""
        if is_number(x):
            return self.const(x, dtype)
        v = self.lift(x)
        if v.type.dtype == dtype:
            return v
        if isinstance(v, Const) and v.type.width == 1:
            return self.const(v.value, dtype)
        return self.b.op("cast", (v,), Type(dtype, v.type.width))

    def broadcast(self, v: Value, width: int) -> Value:
        if v.type.width == width:
            return v
        if v.type.width != 1:
            self.ctx.error(CubeTypeError, f"cannot combine a Line of width {v.type.width} with one of width {width}")
        return self.b.op("broadcast", (v,), Type(v.type.dtype, width))

    def coerce(self, v, target: Type, what: str) -> Value:
        """Fit ``v`` to ``target`` for a store: implicit casts except float -> int/bool."""
        if is_number(v) and not isinstance(v, I32):
            if isinstance(v, float) and not target.dtype.is_float:
                self.ctx.error(CubeTypeError, f"{what} has type {target.dtype} but the value is the float {v!r}; "
                               f"convert explicitly, e.g. {target.dtype}(value)")
            v = self.literal(v, target.dtype, what)
        v = self.lift(v, target)
        if v.type.dtype != target.dtype:
            if v.type.dtype.is_float and not target.dtype.is_float:
                self.ctx.error(CubeTypeError, f"{what} has type {target.dtype} but the value is {v.type.dtype}; "
                               f"convert explicitly, e.g. {target.dtype}(value)")
            v = self.cast(v, target.dtype)
        if v.type.width != target.width:
            if v.type.width != 1:
                self.ctx.error(CubeTypeError, f"{what} holds {target} but the value is {v.type}")
            v = self.broadcast(v, target.width)
        return v

    def common(self, a, b, widen_literals: bool = False) -> tuple[Value, Value]:
        """Both operands traced, of one type (promotion, literal fitting, Line broadcast).

        ``widen_literals`` (comparisons): a literal that does not fit the other operand's type
        takes its own type instead and the two promote, so ``x_u8 < 300`` is exact."""
        if not is_traced(a) and not is_traced(b):
            a = self.lift(a, self.lift(b).type if isinstance(b, float) else None)
            b = self.lift(b, a.type)
        elif not is_traced(a):
            a = self._operand_literal(a, b.type, widen_literals)
        elif not is_traced(b):
            b = self._operand_literal(b, a.type, widen_literals)
        try:
            dtype = promote(a.type.dtype, b.type.dtype)
        except PromotionError as e:
            self.ctx.error(CubeTypeError, str(e))
        width = max(a.type.width, b.type.width)
        if a.type.width not in (1, width) or b.type.width not in (1, width):
            self.ctx.error(CubeTypeError, f"cannot combine {a.type} with {b.type}: Line widths differ")
        return self.broadcast(self.cast(a, dtype), width), self.broadcast(self.cast(b, dtype), width)

    def _operand_literal(self, x, like: Type, widen: bool) -> Value:
        if widen and is_number(x) and not isinstance(x, I32) and _literal_fits(x, like.dtype):
            try:
                literal_value(x, like.dtype)
            except FoldError:
                return self.lift(x)
        return self.lift(x, like, f"the {like} operand")

    # --- shape-generic traces ------------------------------------------------------------------
    def _from_extents(self, *xs) -> bool:
        """In a shape-generic trace: whether the operands are cube extents (`Tracer.dim_values`)
        and Python numbers only, so that static code would fold the op as `I32` arithmetic."""
        marked = self.ctx.dim_values
        return bool(marked) and any(is_traced(x) and x.id in marked for x in xs) and \
            all(is_number(x) or (is_traced(x) and x.id in marked) for x in xs)

    def _as_static(self, opname: str, *xs) -> None:
        """Refuse an op on cube extents whose `I32` fold (static code) means something else than
        the run-time i32 op: with a Python float, a true division, a power or float math give a
        weakly typed f64 when folded. The runtime then specializes on CubeDim."""
        if opname in ("truediv", "pow") or opname in _FLOAT_MATH or any(isinstance(x, float) for x in xs):
            raise ShapeSpecific(f"'{opname}' of a cube extent folds to a Python number in static code")

    # --- operators --------------------------------------------------------------------------
    def binary(self, opname: str, a, b):
        if self._from_extents(a, b):
            self._as_static(opname, a, b)
            return self.ctx.dim_value(self._binary(opname, a, b))
        return self._binary(opname, a, b)

    def _binary(self, opname: str, a, b):
        if is_number(a) and is_number(b):
            try:
                return fold_python_binary(opname, a, b)
            except FoldError as e:
                self.ctx.error(CubeTypeError, str(e))
        if opname == "truediv":
            a, b = self.common(a, b)
            if not a.type.dtype.is_float:
                target = f64 if a.type.dtype.bits == 64 else f32
                a, b = self.cast(a, target), self.cast(b, target)
            return self.b.op("div", (a, b), a.type)
        if opname == "pow":
            return self.power(a, b)
        a, b = self.common(a, b)
        dt = a.type.dtype
        if opname in ("and", "or", "xor", "shl", "shr") and dt.is_float:
            self.ctx.error(CubeTypeError, f"bitwise '{_SYMBOL[opname]}' needs integer or bool operands, got {dt}")
        if opname in ("shl", "shr") and dt.is_bool:
            a, b = self.cast(a, INDEX), self.cast(b, INDEX)
        if opname in ("add", "sub", "mul", "floordiv", "mod") and dt.is_bool:
            a, b = self.cast(a, INDEX), self.cast(b, INDEX)
        if opname not in BINARY:
            self.ctx.error(CubeTypeError, f"unsupported operator {opname}")
        simplified = _simplify(opname, a, b)
        if simplified is not None:
            return simplified
        return self.b.op(opname, (a, b), a.type)

    def power(self, a, b):
        """``a ** b``. An integer to a non-negative integer power stays an integer (exact,
        wrapped); a float to a literal power 0..8 is that many multiplications, left to right, so
        every backend rounds alike; anything else is the ``pow`` op."""
        base = self.lift(a) if is_number(a) else a
        if is_number(b) and not isinstance(b, bool) and float(b).is_integer() and (
                isinstance(b, int) or not base.type.dtype.is_int):
            n = int(b)
            if base.type.dtype.is_int or base.type.dtype.is_bool:
                if n < 0:
                    self.ctx.error(CubeValueError, f"an integer to the negative power {n} is a fraction, which "
                                   f"Python computes as a float: convert the base first, e.g. f32(x) ** {n}")
                if base.type.dtype.is_bool:
                    base = self.cast(base, INDEX)
                return self._int_power(base, n)
            if 0 <= n <= 8:
                if n == 0:
                    return self.const(1, base.type.dtype, base.type.width)
                result = base
                for _ in range(n - 1):
                    result = self.b.op("mul", (result, base), base.type)
                return result
        a, b = self.common(a, b)
        if a.type.dtype.is_bool:
            a, b = self.cast(a, INDEX), self.cast(b, INDEX)
        return self.b.op("pow", (a, b), a.type)

    def _int_power(self, base: Value, n: int) -> Value:
        """``base ** n`` for a compile-time n >= 0 by squaring (wrapping, exact)."""
        result = None
        square = base
        while n:
            if n & 1:
                result = square if result is None else self.binary("mul", result, square)
            n >>= 1
            if n:
                square = self.binary("mul", square, square)
        return result if result is not None else self.const(1, base.type.dtype, base.type.width)

    def compare(self, opname: str, a, b):
        if self._from_extents(a, b):
            # static code gets a Python bool: an `if` on it traces one side, an `x if c else y`
            # keeps a weakly typed number; a run-time bool would join both sides' types
            raise ShapeSpecific(f"'{opname}' of a cube extent is a compile-time bool in static code")
        if is_number(a) and is_number(b):
            return _FOLD_COMPARE[opname](a, b)
        a, b = self.common(a, b, widen_literals=True)
        if isinstance(a, Const) and isinstance(b, Const):
            folded = fold_typed_compare(opname, a, b)
            if folded is not None:
                return folded
        return self.b.op(opname, (a, b), Type(bool_, a.type.width))

    def unary(self, opname: str, a):
        if self._from_extents(a):
            self._as_static(opname, a)
            if opname in ("neg", "invert", "abs"):
                return self.ctx.dim_value(self._unary(opname, a))
        return self._unary(opname, a)

    def _unary(self, opname: str, a):
        if is_number(a):
            try:
                return fold_python_unary(opname, a)
            except FoldError as e:
                self.ctx.error(CubeTypeError, str(e))
        dt = a.type.dtype
        if opname == "not":
            return self.b.op("not", (self.truth(a, allow_lines=True),), Type(bool_, a.type.width))
        if opname == "invert":
            if dt.is_float:
                self.ctx.error(CubeTypeError, f"'~' needs an integer or bool operand, got {dt}")
            if dt.is_bool:
                return self.b.op("not", (a,), a.type)
        if opname == "neg" and dt.is_bool:
            a = self.cast(a, INDEX)
        if opname in _FLOAT_MATH and not a.type.dtype.is_float:
            a = self.cast(a, f64 if dt.bits == 64 else f32)
        if opname in ("floor", "ceil") and dt.is_int:
            return a
        if isinstance(a, Const):
            folded = fold_typed_unary(opname, a)
            if folded is not None:
                return folded
        return self.b.op(opname, (a,), a.type)

    def truth(self, a, allow_lines: bool = False):
        """A bool value for ``a`` (Python truthiness: non-zero). A condition (``if``, ``while``,
        ``and``/``or``) must be one value; ``allow_lines`` (``not``) takes a Line elementwise."""
        if is_number(a):
            return bool(a)
        if not is_traced(a):
            self.ctx.error(CubeTypeError, f"{_describe(a)} has no truth value inside a kernel")
        if a.type.width != 1 and not allow_lines:
            self.ctx.error(CubeTypeError, f"a condition must be a single value, but this is a {a.type}; "
                           "combine the elements (e.g. cb.select(v > 0, a, b) picks per element, or index "
                           "one element, v[0])")
        if a.type.dtype.is_bool:
            return a
        return self.compare("ne", a, 0)

    def minmax(self, opname: str, a, b):
        if self._from_extents(a, b):
            self._as_static(opname, a, b)
            return self.ctx.dim_value(self._minmax(opname, a, b))
        return self._minmax(opname, a, b)

    def _minmax(self, opname: str, a, b):
        if is_number(a) and is_number(b):
            return fold_python_minmax(opname, a, b)
        a, b = self.common(a, b)
        simplified = _simplify(opname, a, b)
        if simplified is not None:
            return simplified
        return self.b.op(opname, (a, b), a.type)

    def select(self, cond, a, b):
        cond = self.truth(cond, allow_lines=True)
        if is_number(cond):
            return a if cond else b
        a, b = self.common(a, b)
        if cond.type.width not in (1, a.type.width):
            self.ctx.error(CubeTypeError, f"select condition of width {cond.type.width} does not match {a.type}")
        return self.b.op("select", (cond, a, b), a.type)


_FLOAT_MATH = {"sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "erf", "floor", "ceil"}
_SYMBOL = {"and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
_FOLD_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
                 "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def _literal_fits(value, dtype: DType) -> bool:
    """Whether a Python literal takes ``dtype``'s kind (weak typing): ints go anywhere but bool,
    floats only to floats."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return not dtype.is_bool
    return dtype.is_float


def _simplify(opname: str, a: Value, b: Value):
    """Integer identities and constant folding that keep tracing output small (``x * 1``,
    ``x + 0``, ``2 * 3``); floats are left alone (``x * 0`` is not 0 for NaN)."""
    dtype = a.type.dtype
    if not dtype.is_int or a.type.width != 1:
        return None
    ca, cb = isinstance(a, Const), isinstance(b, Const)
    if ca and cb:
        return fold_typed_binary(opname, a, b)
    if cb and ((opname in ("add", "sub", "or", "xor", "shl", "shr") and b.value == 0)
               or (opname in ("mul", "floordiv") and b.value == 1)):
        return a
    if ca and ((opname in ("add", "or", "xor") and a.value == 0) or (opname == "mul" and a.value == 1)):
        return b
    if opname == "mul" and ((ca and a.value == 0) or (cb and b.value == 0)):
        return Const(0, a.type)
    return None


def _describe(x) -> str:
    if isinstance(x, FormatString):
        return "an f-string with runtime values (kernels only print them: print(f\"...\"))"
    return f"{type(x).__name__} {x!r}" if len(repr(x)) < 60 else type(x).__name__
