"""Trace-time folding with the meaning each operation has at run time (`cubepy.ir.semantics`).

Python numbers in kernel code are evaluated while tracing. They keep Python's exact arithmetic
(integers have no width, floats are f64), except where Python would raise and the kernel
language defines a result: an integer ``//`` or ``%`` by zero gives 0, a float division by zero
gives the IEEE infinity or NaN, a negative shift count shifts every bit out. Compile-time i32
values (`I32`: ``CUBE_DIM``, ``PLANE_DIM``) compute as i32. Typed constants (`Const`) fold as
the operation would run. Converting a constant to a type rounds as a run-time cast does.
"""

from __future__ import annotations

import math
import operator

from ..ir import semantics
from ..ir.nodes import Const
from ..ir.types import DType, Type, bool_, i32


class I32(int):
    """A compile-time value of type i32 (``CUBE_DIM``, ``PLANE_DIM``): folds like a Python int in
    static code (``range``, shared memory sizes, ``cb.unroll``), and is an i32, not a weakly
    typed literal, beside a traced value (``CUBE_DIM * x`` with ``x: u8`` computes in i32)."""

    def __repr__(self) -> str:
        return f"{int(self)}:i32"


class FoldError(Exception):
    """A fold that has no value (e.g. a Python type error); the message says why."""


_PYTHON = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "and": operator.and_,
           "or": operator.or_, "xor": operator.xor}


def fold_python_binary(opname: str, a, b):
    """``a <op> b`` for two Python numbers (at least one may be an `I32`)."""
    typed = (isinstance(a, I32) or isinstance(b, I32)) and not isinstance(a, float) and not isinstance(b, float)
    if typed:
        return I32(semantics.wrap(_int_binary(opname, int(a), int(b), i32), i32)) if opname != "truediv" \
            else _float_binary("truediv", float(a), float(b))
    if isinstance(a, float) or isinstance(b, float):
        if opname in ("and", "or", "xor", "shl", "shr"):
            raise FoldError(f"bitwise '{_SYMBOL[opname]}' needs integer operands, got {a!r} and {b!r}")
        return _float_binary(opname, float(a), float(b))
    if opname == "truediv":
        return _float_binary(opname, float(a), float(b))
    result = _int_binary(opname, int(a), int(b), None)
    if isinstance(a, bool) and isinstance(b, bool) and opname in ("and", "or", "xor"):
        return bool(result)
    return result


def _int_binary(opname: str, a: int, b: int, dtype: DType | None) -> int:
    bits = None if dtype is None else dtype.bits
    if opname in _PYTHON:
        return _PYTHON[opname](a, b)
    if opname == "floordiv":
        return semantics.floordiv(a, b)
    if opname == "mod":
        return semantics.mod(a, b)
    if opname == "shl":
        return semantics.shift_left(a, b, bits)
    if opname == "shr":
        return semantics.shift_right(a, b, bits)
    if opname == "pow":
        if b < 0 and dtype is None:      # Python: an int to a negative power is a float
            return _float_binary("pow", float(a), float(b))
        return semantics.int_pow(a, b, dtype)
    if opname in ("min", "max"):
        return min(a, b) if opname == "min" else max(a, b)
    raise FoldError(f"unsupported operator {opname}")


def _float_binary(opname: str, a: float, b: float) -> float:
    import numpy as np

    if opname == "truediv":
        return semantics.true_divide(a, b)
    if opname == "floordiv":
        return semantics.float_floordiv(a, b)
    if opname == "mod":
        return semantics.float_mod(a, b)
    if opname in ("min", "max"):
        return semantics.minimum(a, b) if opname == "min" else semantics.maximum(a, b)
    if opname == "pow":
        with np.errstate(all="ignore"):
            return float(np.power(np.float64(a), np.float64(b)))
    if opname in _PYTHON:
        return float(_PYTHON[opname](a, b))
    raise FoldError(f"unsupported operator {opname}")


def fold_python_minmax(opname: str, a, b):
    if isinstance(a, float) or isinstance(b, float):
        return _float_binary(opname, float(a), float(b))
    if isinstance(a, I32) or isinstance(b, I32):
        return I32(min(a, b) if opname == "min" else max(a, b))
    return min(a, b) if opname == "min" else max(a, b)


_UNARY = {"sqrt": "sqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tanh": "tanh",
          "floor": "floor", "ceil": "ceil"}


def fold_python_unary(opname: str, a):
    import numpy as np

    if opname == "not":
        return not a
    if opname == "neg":
        return I32(semantics.wrap(-a, i32)) if isinstance(a, I32) else -a
    if opname == "invert":
        if isinstance(a, float):
            raise FoldError(f"'~' needs an integer operand, got {a!r}")
        return I32(~a) if isinstance(a, I32) else ~a
    if opname == "abs":
        return I32(semantics.wrap(abs(a), i32)) if isinstance(a, I32) else abs(a)
    if opname in ("floor", "ceil") and not isinstance(a, float):
        return a
    with np.errstate(all="ignore"):
        x = np.float64(a)
        if opname == "rsqrt":
            return float(1.0 / np.sqrt(x))
        if opname == "erf":
            return math.erf(float(x))
        return float(getattr(np, _UNARY[opname])(x))


def cast_constant(value, dtype: DType):
    """A Python number converted to ``dtype`` as a run-time cast converts: integers wrap, floats
    round to the type, float to integer truncates, saturates, NaN gives 0."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_int:
        if isinstance(value, float):
            return semantics.float_to_int(value, dtype)
        return semantics.wrap(int(value), dtype)
    return semantics.round_float(float(value), dtype)


def literal_value(value, dtype: DType) -> bool | int | float:
    """A Python literal taking the type ``dtype`` (weak typing): it must fit, since a silent wrap
    or overflow to infinity would change its value. Raises FoldError saying why not."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_int:
        if isinstance(value, float):
            raise FoldError(f"the float {value!r} cannot become {dtype} implicitly")
        if not semantics.fits(int(value), dtype):
            lo, hi = semantics.int_range(dtype)
            raise FoldError(f"the integer {int(value)} does not fit {dtype} (range [{lo}, {hi}])")
        return int(value)
    rounded = semantics.round_float(float(value), dtype)
    if math.isinf(rounded) and math.isfinite(float(value)):
        raise FoldError(f"the number {value!r} overflows {dtype} (it would become {rounded})")
    return rounded


def typed_constant(value, dtype: DType) -> Const:
    return Const(cast_constant(value, dtype), Type(dtype))


def fold_typed_binary(opname: str, a: Const, b: Const) -> Const | None:
    """Both operands typed scalar constants of one integer type: the run-time result."""
    dtype = a.type.dtype
    if a.type.width != 1 or not dtype.is_int:
        return None
    if opname in ("add", "sub", "mul", "and", "or", "xor", "floordiv", "mod", "shl", "shr", "pow", "min", "max"):
        return Const(semantics.wrap(_int_binary(opname, a.value, b.value, dtype), dtype), a.type)
    return None


def fold_typed_unary(opname: str, a: Const) -> Const | None:
    """``neg``, ``abs`` or ``invert`` of a typed scalar constant: the run-time result (exact: a
    float negation or absolute value only changes the sign bit, an integer one wraps). Left
    unfolded, a C compiler folds ``-0.0f`` itself, past the opaque form the CUDA backend gives
    every -0.0 constant (docs/fuzzing.md, seed 14000430)."""
    dtype = a.type.dtype
    if a.type.width != 1 or dtype.is_bool or opname not in ("neg", "abs", "invert"):
        return None
    if dtype.is_float:
        if opname == "invert":
            return None
        return Const(-a.value if opname == "neg" else math.fabs(a.value), a.type)
    value = {"neg": operator.neg, "abs": abs, "invert": operator.invert}[opname](a.value)
    return Const(semantics.wrap(value, dtype), a.type)


_COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
            "ge": operator.ge}


def fold_typed_compare(opname: str, a: Const, b: Const) -> Const | None:
    if a.type.width != 1:
        return None
    return Const(bool(_COMPARE[opname](a.value, b.value)), Type(bool_))


_SYMBOL = {"and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
