"""The meaning of the operations whose result is a choice, on one scalar, in plain Python.

Every backend implements these rules (docs/design.md, "Semantics"); the frontend folds constants
with these functions, so a folded expression gives what the same expression gives at run time.

- Integers wrap (two's complement). ``//`` and ``%`` follow Python (floor; the sign of the
  divisor); a division or modulo by zero gives 0.
- Shifts: ``a << n`` and ``a >> n`` are Python's shifts of the exact value, wrapped to the type,
  for ``0 <= n < bits``; a count ``n >= bits`` or ``n < 0`` shifts every bit out: ``<<`` gives 0,
  ``>>`` gives 0, or -1 for a negative signed ``a`` (NumPy's rule).
- Float to integer conversion truncates toward zero and saturates at the type's bounds; NaN gives
  0 (Rust's ``as``, LLVM's ``fptosi.sat``).
- ``min``/``max`` of floats: NaN if either operand is NaN, and -0.0 < +0.0 (IEEE 754-2019
  ``minimum``/``maximum``), so both are commutative and associative.
- Integer ``**``: exact, wrapped; a negative exponent gives the truncated quotient ``1 / a**-n``
  (1 for a == 1, +-1 for a == -1, else 0).
"""

from __future__ import annotations

import math
import struct

from .types import DType


def wrap(value: int, dtype: DType) -> int:
    """``value`` wrapped to the integer (or bool) type ``dtype``."""
    if dtype.is_bool:
        return int(bool(value))
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.is_signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def int_range(dtype: DType) -> tuple[int, int]:
    if dtype.is_bool:
        return 0, 1
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def fits(value: int, dtype: DType) -> bool:
    lo, hi = int_range(dtype)
    return lo <= value <= hi


def round_float(value: float, dtype: DType) -> float:
    """``value`` rounded to the float type ``dtype`` (to nearest, ties to even), as a Python float."""
    import numpy as np

    if dtype.bits == 64:
        return float(value)
    if dtype.name in ("f32", "f16"):      # the C conversion, rounding to nearest
        fmt = "<f" if dtype.name == "f32" else "<e"
        try:
            return struct.unpack(fmt, struct.pack(fmt, value))[0]
        except OverflowError:            # finite, but rounds past the largest value
            return math.copysign(math.inf, value)
    if dtype.name == "bf16":
        bits = int(np.array(value, np.float32).view(np.uint32))
        if math.isnan(value):
            return float("nan")
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array(bits, np.uint32).view(np.float32))
    with np.errstate(over="ignore"):
        return float(np.array(value, dtype.numpy_name))


def float_to_int(value: float, dtype: DType) -> int:
    """Saturating conversion toward zero; NaN gives 0."""
    if dtype.is_bool:
        return int(value != 0)
    if math.isnan(value):
        return 0
    lo, hi = int_range(dtype)
    if value >= hi:
        return hi
    if value <= lo:
        return lo
    return int(value)


def floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else a // b


def mod(a: int, b: int) -> int:
    return 0 if b == 0 else a % b


def shift_left(a: int, n: int, bits: int | None) -> int:
    """Unwrapped; ``bits`` None for a Python int (no width: only a negative count shifts all out)."""
    if n < 0 or (bits is not None and n >= bits):
        return 0
    return a << n


def shift_right(a: int, n: int, bits: int | None) -> int:
    if n < 0 or (bits is not None and n >= bits):
        return -1 if a < 0 else 0
    return a >> n


def int_pow(a: int, n: int, dtype: DType | None) -> int:
    if n < 0:
        return 1 if a == 1 else ((-1 if n % 2 else 1) if a == -1 else 0)
    if dtype is None:
        return a ** n
    return pow(a, n, 1 << dtype.bits)


def minimum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def maximum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def float_floordiv(a: float, b: float) -> float:
    """NumPy's (and Python's) float ``//``, with IEEE results for a zero divisor."""
    import numpy as np

    with np.errstate(all="ignore"):
        return float(np.floor_divide(np.float64(a), np.float64(b)))


def float_mod(a: float, b: float) -> float:
    import numpy as np

    with np.errstate(all="ignore"):
        return float(np.remainder(np.float64(a), np.float64(b)))


def true_divide(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b
