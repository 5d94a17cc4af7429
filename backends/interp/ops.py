"""Pure elementwise ops: opcode -> NumPy function. Results are fitted to the IR result dtype,
so integers wrap in their own width (``i8 + i8`` stays ``i8``) and ``f16`` stays ``f16``."""

from __future__ import annotations

import math

import numpy as np

from cubepy.ir.nodes import Op

from .values import fit, np_dtype

_erf = np.frompyfunc(math.erf, 1, 1)


def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu"


def _floordiv(a, b):
    if _is_int(a):  # Python semantics (numpy's already floor); x // 0 == 0 without a warning
        zero = b == 0
        return np.where(zero, 0, np.floor_divide(a, np.where(zero, 1, b)))
    return np.floor_divide(a, b)


def _mod(a, b):
    if _is_int(a):
        zero = b == 0
        return np.where(zero, 0, np.remainder(a, np.where(zero, 1, b)))
    return np.remainder(a, b)


def _pow(a, b):
    if _is_int(a):  # numpy refuses negative integer powers; a ** -k truncates to 0 (or +-1)
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b))
        return np.where(neg, np.where(np.abs(a) == 1, np.where(np.remainder(b, 2) == 0, 1, a), 0), r)
    return np.power(a, b)


def _shl(a, b):
    """``a << b``; a count outside [0, bits) shifts every bit out (cubepy.ir.semantics)."""
    out = (b < 0) | (b >= a.dtype.itemsize * 8)
    return np.where(out, 0, np.left_shift(a, np.where(out, 0, b)))


def _shr(a, b):
    bits = a.dtype.itemsize * 8
    out = (b < 0) | (b >= bits)
    gone = np.right_shift(a, bits - 1) if a.dtype.kind == "i" else np.zeros_like(a)   # -1 or 0
    return np.where(out, gone, np.right_shift(a, np.where(out, 0, b)))


def minimum(a, b):
    """Elementwise min; for floats IEEE 754-2019 ``minimum``: NaN wins, -0.0 < +0.0."""
    if a.dtype.kind != "f":
        return np.minimum(a, b)
    r = np.minimum(a, b)
    zeros = (a == b) & (a == 0)
    return np.where(zeros, np.where(np.signbit(a), a, b), r)


def maximum(a, b):
    if a.dtype.kind != "f":
        return np.maximum(a, b)
    r = np.maximum(a, b)
    zeros = (a == b) & (a == 0)
    return np.where(zeros, np.where(np.signbit(a), b, a), r)


def cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Conversion to ``dtype``; float to integer truncates toward zero, saturates, NaN gives 0."""
    if a.dtype.kind != "f" or dtype.kind not in "iu":
        return a.astype(dtype)
    info = np.iinfo(dtype)
    wide = a.astype(np.float64)                     # exact for every float type
    t = np.trunc(np.where(np.isnan(wide), 0.0, wide))
    high, low = t >= float(info.max), t <= float(info.min)
    # float(info.max) is exact, or for 64-bit types rounds up to 2**63 (2**64): at or past it saturates
    safe = np.where(high | low, 0.0, t)
    return np.where(high, info.max, np.where(low, info.min, safe.astype(dtype))).astype(dtype)


def _fma(a, b, c):
    """``a * b + c`` rounded once, as a fused multiply-add is (every compiled backend fuses)."""
    if a.dtype.kind != "f":
        return a * b + c
    if a.dtype.itemsize == 8:
        return _fma64(a, b, c)
    # f32/f16: the product is exact in f64; the f64 sum is rounded, and rounding it again to the
    # narrow type is wrong only when the sum lands on a midpoint of the narrow type (the overflow
    # threshold included): then the sum's exact error (TwoSum) says which neighbour the exact
    # result is nearer to
    a64, b64, c64 = (np.asarray(v, np.float64) for v in (a, b, c))
    p = a64 * b64
    s = p + c64
    bb = s - p
    t = (p - (s - bb)) + (c64 - bb)
    with np.errstate(over="ignore"):
        r = s.astype(a.dtype)
    back = r.astype(np.float64)
    # a finite sum rounded to infinity stands for the next power of two past the largest float:
    # the midpoint between the two is the rounding threshold, where the same rule decides
    top = np.ldexp(1.0, np.finfo(a.dtype).maxexp)
    back = np.where(np.isinf(back) & np.isfinite(s), np.copysign(top, s), back)
    toward = np.where(back < s, np.inf, -np.inf).astype(a.dtype)
    n = np.nextafter(r, toward)
    midpoint = s == (back + n.astype(np.float64)) / 2
    fix = midpoint & (t != 0) & (np.sign(t) == np.sign(n.astype(np.float64) - back))
    return np.where(fix, n, r)


_fsum3 = np.frompyfunc(lambda p, e, c: math.fsum((p, e, c)), 3, 1)


def _fma64(a, b, c):
    """Exact f64 fma: the product's exact error by Veltkamp splitting, the three-term sum rounded
    once by math.fsum; where a step could overflow or underflow, the exact rational rounded once
    (`_fma_exact`). Non-finite operands take IEEE's ``a * b + c``, but a finite product plus an
    infinite ``c`` is ``c`` (``a * b`` may overflow where the exact product does not)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c))
    a, b, c = (np.array(np.broadcast_to(v, shape), np.float64).reshape(-1) for v in (a, b, c))
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * b
        split = 134217729.0                                   # 2**27 + 1
        ta, tb = split * a, split * b
        ah, bh = ta - (ta - a), tb - (tb - b)
        al, bl = a - ah, b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        finite = np.isfinite(a) & np.isfinite(b)
        out = np.where(finite & np.isinf(c), c, p + c)
    finite &= np.isfinite(c)
    exact_product = (a == 0) | (b == 0)
    fast = finite & (np.abs(a) < 1e150) & (np.abs(b) < 1e150) & (np.abs(c) < 1e300) & (
        exact_product | ((np.abs(p) > 1e-290) & (np.abs(p) < 1e300)))
    if fast.any():
        summed = np.asarray(_fsum3(p[fast], e[fast], c[fast]), np.float64)
        # an exact zero: fsum has no -0.0; with an exact product IEEE's p + c gives the sign (-0.0
        # only for two negative zeros), and non-zero terms that cancel give +0.0
        out[fast] = np.where(summed == 0, np.where(e[fast] == 0, p[fast] + c[fast], 0.0), summed)
    for k in np.nonzero(finite & ~fast)[0]:
        out[k] = _fma_exact(float(a[k]), float(b[k]), float(c[k]))
    return out.reshape(shape)


def _fma_exact(a: float, b: float, c: float) -> float:
    """``a * b + c`` of finite floats rounded once to f64 (Python's int division rounds correctly,
    subnormals and overflow included)."""
    from fractions import Fraction

    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c if a == 0 or b == 0 else 0.0      # IEEE: zeros keep their signs, a cancellation is +0.0
    try:
        value = exact.numerator / exact.denominator
    except OverflowError:
        return math.inf if exact > 0 else -math.inf
    return value if value != 0 else (-0.0 if exact < 0 else 0.0)


UNARY = {
    "neg": np.negative, "not": np.logical_not, "invert": np.invert, "abs": np.abs,
    "sqrt": np.sqrt, "rsqrt": lambda a: np.reciprocal(np.sqrt(a)), "exp": np.exp, "log": np.log,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "erf": lambda a: _erf(a.astype(np.float64)),
    "floor": np.floor, "ceil": np.ceil,
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "floordiv": _floordiv, "mod": _mod, "pow": _pow, "min": minimum, "max": maximum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "shl": _shl, "shr": _shr,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}


def _select(op: Op, cond, a, b):
    if op.args[0].type.width == 1 and op.result.type.width > 1 and cond.ndim == 1:
        cond = cond[:, None]  # a per-unit bool choosing whole Lines
    return np.where(cond, a, b)


def _broadcast(op: Op, a):
    return np.broadcast_to(a[..., None], a.shape + (op.result.type.width,))


def _insert(op: Op, line, x):
    out = np.array(np.broadcast_to(line, np.broadcast_shapes(line.shape, x.shape + line.shape[-1:])))
    out[..., op.attrs["index"]] = x
    return out


SPECIAL = {
    "fma": lambda op, a, b, c: _fma(a, b, c),
    "select": _select,
    "cast": lambda op, a: cast(a, np_dtype(op.result.type)),
    "broadcast": _broadcast,
    "extract": lambda op, a: a[..., op.attrs["index"]],
    "insert": _insert,
}


def evaluate(op: Op, args: list[np.ndarray]) -> np.ndarray:
    """The result of a pure op on its operand values (call under ``np.errstate(all="ignore")``)."""
    code = op.opcode
    if code in UNARY:
        r = UNARY[code](args[0])
    elif code in BINARY:
        r = BINARY[code](args[0], args[1])
    else:
        r = SPECIAL[code](op, *args)
    return fit(r, op.result.type)
