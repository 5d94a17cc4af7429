"""Typing and arithmetic on traced values: promotion, casts, Line broadcast, folding.

Python numbers are trace-time constants and *weakly typed*: ``x * 2`` keeps ``x``'s type, as in
Python with NumPy scalars. Two traced operands promote by `cubepy.ir.types.promote`.
"""

from __future__ import annotations

import math
import operator

from ..errors import CubeTypeError, CubeValueError
from ..ir.nodes import BINARY, COMPARE, Const, Value
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
        if dtype.is_bool:
            value = bool(value)
        elif dtype.is_int:
            if isinstance(value, float):
                if not math.isfinite(value):
                    self.ctx.error(CubeTypeError, f"cannot convert {value} to {dtype}")
                value = int(value)
            value = _wrap_int(int(value), dtype)
        else:
            value = float(value)
        c = Const(value, Type(dtype))
        return self.broadcast(c, width) if width > 1 else c

    def lift(self, x, like: Type | None = None) -> Value:
        """A traced value for ``x``: a Python number takes ``like``'s dtype when it fits."""
        if is_traced(x):
            return x
        if is_number(x):
            if like is not None and _literal_fits(x, like.dtype):
                return self.const(x, like.dtype)
            return self.const(x, default_literal_dtype(x))
        self.ctx.error(CubeTypeError, f"expected a number or a traced value, got {_describe(x)}")

    def cast(self, x, dtype: DType) -> Value:
        v = self.lift(x, Type(dtype))
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

    def common(self, a, b) -> tuple[Value, Value]:
        """Both operands traced, of one type (promotion, literal fitting, Line broadcast)."""
        if not is_traced(a):
            a = self.lift(a, b.type)
        elif not is_traced(b):
            b = self.lift(b, a.type)
        try:
            dtype = promote(a.type.dtype, b.type.dtype)
        except PromotionError as e:
            self.ctx.error(CubeTypeError, str(e))
        width = max(a.type.width, b.type.width)
        if a.type.width not in (1, width) or b.type.width not in (1, width):
            self.ctx.error(CubeTypeError, f"cannot combine {a.type} with {b.type}: Line widths differ")
        return self.broadcast(self.cast(a, dtype), width), self.broadcast(self.cast(b, dtype), width)

    # --- operators --------------------------------------------------------------------------
    def binary(self, opname: str, a, b):
        if is_number(a) and is_number(b):
            return _fold_binary(self.ctx, opname, a, b)
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
        if is_number(b) and float(b).is_integer() and 0 <= b <= 8:
            base = self.lift(a)
            n = int(b)
            if n == 0:
                return self.const(1, base.type.dtype, base.type.width)
            result = base
            for _ in range(n - 1):
                result = self.b.op("mul", (result, base), base.type)
            return result
        a, b = self.common(a, b)
        if not a.type.dtype.is_float:
            a, b = self.cast(a, f32), self.cast(b, f32)
        return self.b.op("pow", (a, b), a.type)

    def compare(self, opname: str, a, b):
        if is_number(a) and is_number(b):
            return _FOLD_COMPARE[opname](a, b)
        a, b = self.common(a, b)
        return self.b.op(opname, (a, b), Type(bool_, a.type.width))

    def unary(self, opname: str, a):
        if is_number(a):
            return _fold_unary(self.ctx, opname, a)
        dt = a.type.dtype
        if opname == "not":
            return self.b.op("not", (self.truth(a),), Type(bool_, a.type.width))
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
        return self.b.op(opname, (a,), a.type)

    def truth(self, a):
        """A bool value for ``a`` (Python truthiness: non-zero)."""
        if is_number(a):
            return bool(a)
        if not is_traced(a):
            self.ctx.error(CubeTypeError, f"{_describe(a)} has no truth value inside a kernel")
        if a.type.dtype.is_bool:
            return a
        return self.compare("ne", a, 0)

    def minmax(self, opname: str, a, b):
        if is_number(a) and is_number(b):
            return min(a, b) if opname == "min" else max(a, b)
        a, b = self.common(a, b)
        return self.b.op(opname, (a, b), a.type)

    def select(self, cond, a, b):
        cond = self.truth(cond)
        if is_number(cond):
            return a if cond else b
        if is_number(a) and is_number(b):
            a = self.lift(a, self.lift(b).type if isinstance(b, float) else None)
        a, b = self.common(a, b)
        if cond.type.width not in (1, a.type.width):
            self.ctx.error(CubeTypeError, f"select condition of width {cond.type.width} does not match {a.type}")
        return self.b.op("select", (cond, a, b), a.type)


_FLOAT_MATH = {"sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "erf", "floor", "ceil"}
_SYMBOL = {"and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
_FOLD_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "and": operator.and_,
    "or": operator.or_, "xor": operator.xor, "shl": operator.lshift, "shr": operator.rshift,
}
_FOLD_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
                 "gt": operator.gt, "ge": operator.ge}
COMPARE_OPS = tuple(COMPARE)


def _fold_binary(ctx, opname, a, b):
    try:
        return _FOLD_BINARY[opname](a, b)
    except ZeroDivisionError:
        ctx.error(CubeValueError, f"division by zero in a compile-time expression ({a!r} {opname} {b!r})")
    except TypeError as e:
        ctx.error(CubeTypeError, str(e))


def _fold_unary(ctx, opname, a):
    table = {"neg": operator.neg, "not": operator.not_, "invert": operator.invert, "abs": abs,
             "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos,
             "tanh": math.tanh, "erf": math.erf, "floor": math.floor, "ceil": math.ceil,
             "rsqrt": lambda v: 1.0 / math.sqrt(v)}
    try:
        return table[opname](a)
    except (ValueError, ZeroDivisionError, TypeError) as e:
        ctx.error(CubeTypeError, f"{opname}({a!r}) at compile time: {e}")


def _literal_fits(value, dtype: DType) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return not dtype.is_bool
    return dtype.is_float


_FOLD_INT = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "and": operator.and_,
             "or": operator.or_, "xor": operator.xor, "min": min, "max": max}


def _simplify(opname: str, a: Value, b: Value):
    """Integer identities and constant folding that keep tracing output small (``x * 1``,
    ``x + 0``, ``2 * 3``); floats are left alone (``x * 0`` is not 0 for NaN)."""
    dtype = a.type.dtype
    if not dtype.is_int or a.type.width != 1:
        return None
    ca, cb = isinstance(a, Const), isinstance(b, Const)
    if ca and cb and opname in _FOLD_INT:
        return Const(_wrap_int(_FOLD_INT[opname](a.value, b.value), dtype), a.type)
    if cb and ((opname in ("add", "sub", "or", "xor", "shl", "shr") and b.value == 0)
               or (opname in ("mul", "floordiv") and b.value == 1)):
        return a
    if ca and ((opname in ("add", "or", "xor") and a.value == 0) or (opname == "mul" and a.value == 1)):
        return b
    if opname == "mul" and ((ca and a.value == 0) or (cb and b.value == 0)):
        return Const(0, a.type)
    return None


def _wrap_int(value: int, dtype: DType) -> int:
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _describe(x) -> str:
    return f"{type(x).__name__} {x!r}" if len(repr(x)) < 60 else type(x).__name__
