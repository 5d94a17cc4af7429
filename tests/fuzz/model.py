"""An independent NumPy model of straight-line programs (assignments and guarded stores only),
written from docs/design.md ("Semantics") without the interpreter's code: integers are exact
Python ints wrapped to their type after every operation, floats are NumPy scalars of their type,
every unit of the launch at once. `evaluate` returns the outputs as a `run.Run`, or None when the
program uses something the model does not cover."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .program import E, Program
from .run import Run, arguments, poison

_NP = {"bool_": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
       "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32,
       "f64": np.float64}


class Unsupported(Exception):
    pass


def _is_int(dt: str) -> bool:
    return dt[0] in "iu"


def _wrap(v: int, dt: str) -> int:
    bits = int(dt[1:])
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt[0] == "i" and v >= 1 << (bits - 1) else v


def _ints(a) -> np.ndarray:
    return np.array([int(x) for x in np.broadcast_to(a, a.shape).ravel()], dtype=object).reshape(a.shape)


class Model:
    def __init__(self, program: Program):
        self.p = program
        dx, dy, dz = program.cube_dim
        cx, cy, cz = program.cube_count
        self.U = dx * dy * dz
        self.N = n = self.U * cx * cy * cz
        unit = np.arange(n)
        lin, cube = unit % self.U, unit // self.U
        ux, uy, uz = lin % dx, lin // dx % dy, lin // (dx * dy)
        qx, qy, qz = cube % cx, cube // cx % cy, cube // (cx * cy)
        self.topo = {"t": lin, "cb.UNIT_POS_X": ux, "cb.UNIT_POS_Y": uy, "cb.UNIT_POS_Z": uz, "cb.CUBE_POS": cube,
                     "cb.CUBE_POS_X": qx, "cb.CUBE_DIM": np.full(n, self.U), "cb.CUBE_COUNT": np.full(n, cx * cy * cz),
                     "cb.ABSOLUTE_POS_Y": qy * dy + uy, "i32(K)": np.full(n, program.comptime)}
        ax, ay, az = qx * dx + ux, qy * dy + uy, qz * dz + uz
        self.topo["g"] = ax + cx * dx * (ay + cy * dy * az)
        self.args = arguments(program)
        self.named = {p.name: a for p, a in zip(program.params, self.args)}
        self.env: dict[str, np.ndarray] = {}

    def plane(self, plane_dim: int):
        self.topo["cb.PLANE_DIM"] = np.full(self.N, plane_dim)
        self.topo["cb.UNIT_POS_PLANE"] = self.topo["t"] % plane_dim

    # --- values: ints as object arrays of Python ints, floats and bools as NumPy arrays -------
    def typed(self, values, dt: str) -> np.ndarray:
        values = np.broadcast_to(np.asarray(values, dtype=object if _is_int(dt) else None), (self.N,))
        if _is_int(dt):
            return np.array([_wrap(int(v), dt) for v in values], dtype=object)
        return np.asarray(values).astype(_NP[dt])

    def cast(self, v: np.ndarray, src: str, dst: str) -> np.ndarray:
        if src == dst:
            return v
        if dst == "bool_":
            with np.errstate(invalid="ignore"):
                return np.asarray(v != 0, bool) if _is_int(src) else np.asarray(v.astype(np.float64) != 0)
        if _is_int(dst):
            if src == "bool_" or _is_int(src):
                return np.array([_wrap(int(x), dst) for x in v], dtype=object)
            bits, signed = int(dst[1:]), dst[0] == "i"
            low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            out = []
            for x in v.astype(np.float64):
                out.append(0 if math.isnan(x) else high if x >= high else low if x <= low else int(x))
            return np.array(out, dtype=object)
        if src == "bool_":
            return v.astype(_NP[dst])
        if _is_int(src):     # one correct rounding: through the C conversion of a 64-bit integer
            wide = np.array([int(x) for x in v], dtype=np.uint64 if src == "u64" else np.int64)
            with np.errstate(over="ignore"):
                return wide.astype(np.float64 if dst == "f64" else np.float32 if dst == "f32" else np.float64
                                   ).astype(_NP[dst]) if dst != "f16" else _int_to_f16(wide)
        with np.errstate(over="ignore"):
            return v.astype(_NP[dst])

    def expr(self, e: E) -> np.ndarray:
        op, dt = e.op, e.dtype
        with np.errstate(all="ignore"):
            if op in ("lit", "weaklit"):
                if dt == "bool_":
                    return np.full(self.N, bool(e.value))
                if _is_int(dt):
                    return self.typed(e.value, dt)
                return np.full(self.N, e.value).astype(_NP[dt])
            if op == "var":
                return self.env[e.value]
            if op == "param":
                value = self.named[e.value]
                return self.typed(value, dt)
            if op == "topo":
                return self.typed(self.topo[e.value], "i32")
            if op == "active":
                return np.asarray(self.topo["g"] < self.p.active)
            if op == "slot":
                return self.topo["g"] * self.p.slots + e.value
            if op == "load":
                index = self.expr(e.args[0])
                arr = self.named[e.value]
                at = np.array([int(i) % len(arr) for i in index])
                return self.typed(arr[at], dt) if _is_int(dt) else arr[at]
            args = [self.expr(a) for a in e.args]
            if op == "cast":
                return self.cast(args[0], e.args[0].dtype, dt)
            if op == "bin":
                a, b = args
                return self.binary(e.value, a, self._to(b, e.args[1].dtype, dt), dt)
            if op == "neg":
                return np.array([_wrap(-int(x), dt) for x in args[0]], dtype=object) if _is_int(dt) else -args[0]
            if op == "invert":
                return np.array([_wrap(~int(x), dt) for x in args[0]], dtype=object)
            if op == "abs":
                return np.array([_wrap(abs(int(x)), dt) for x in args[0]], dtype=object) if _is_int(dt) \
                    else np.abs(args[0])
            if op in ("min", "max"):
                return self.minmax(op, *args, dt)
            if op == "select":
                c, a, b = args
                return np.where(c, a, b) if not _is_int(dt) else np.array(
                    [x if k else y for k, x, y in zip(c, a, b)], dtype=object)
            if op == "pow":
                n = e.value
                if _is_int(dt):
                    return np.array([_wrap(int(x) ** n, dt) for x in args[0]], dtype=object)
                if n == 0:
                    return np.ones(self.N, _NP[dt])
                r = args[0]
                for _ in range(n - 1):
                    r = (r * args[0]).astype(_NP[dt])
                return r
            if op in ("valor", "valand"):
                a, b = args
                pick = [(x if int(x) != 0 else y) if op == "valor" else (y if int(x) != 0 else x) for x, y in zip(a, b)]
                return np.array(pick, dtype=object)
            if op in ("sqrt", "floor", "ceil"):
                return getattr(np, op)(args[0]).astype(_NP[dt])
            if op == "div":
                return (args[0] / args[1]).astype(_NP[dt])
            if op == "fma":
                return np.array([_fma(x, y, z, dt) for x, y, z in zip(*args)], _NP[dt])
            if op == "cmp":
                a, b = args
                sym = e.value
                if _is_int(e.args[0].dtype):
                    import operator

                    fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
                          "==": operator.eq, "!=": operator.ne}[sym]
                    return np.array([fn(int(x), int(y)) for x, y in zip(a, b)], bool)
                return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                        "==": np.equal, "!=": np.not_equal}[sym](a, b)
            if op == "boolor":
                return args[0] | args[1]
            if op == "booland":
                return args[0] & args[1]
            if op == "not":
                return ~args[0]
        raise Unsupported(op or e.fmt)

    def _to(self, v, src: str, dst: str):
        return v if src == dst else self.cast(v, src, dst)

    def binary(self, sym: str, a, b, dt: str):
        if not _is_int(dt):
            fn = {"+": np.add, "-": np.subtract, "*": np.multiply}[sym]
            return fn(a, b).astype(_NP[dt])
        bits = int(dt[1:])
        out = []
        for x, y in zip(a, b):
            x, y = int(x), int(y)
            if sym in ("//", "%"):
                r = 0 if y == 0 else (x // y if sym == "//" else x % y)
            elif sym in ("<<", ">>"):
                if 0 <= y < bits:
                    r = x << y if sym == "<<" else x >> y
                else:
                    r = -1 if sym == ">>" and x < 0 else 0
            else:
                r = {"+": x + y, "-": x - y, "*": x * y, "&": x & y, "|": x | y, "^": x ^ y}[sym]
            out.append(_wrap(r, dt))
        return np.array(out, dtype=object)

    def minmax(self, fn: str, a, b, dt: str):
        if _is_int(dt):
            return np.array([(min if fn == "min" else max)(int(x), int(y)) for x, y in zip(a, b)], dtype=object)
        out = []
        for x, y in zip(a.astype(np.float64), b.astype(np.float64)):
            if math.isnan(x) or math.isnan(y):
                out.append(math.nan)
            elif x == y == 0:      # of -0.0 and +0.0: min is -0.0, max +0.0
                neg = math.copysign(1, x) < 0 or math.copysign(1, y) < 0
                both = math.copysign(1, x) < 0 and math.copysign(1, y) < 0
                out.append(-0.0 if (neg if fn == "min" else both) else 0.0)
            else:
                out.append(min(x, y) if fn == "min" else max(x, y))
        return np.array(out).astype(_NP[dt])

    # --- statements -----------------------------------------------------------------------------
    def run(self, block) -> None:
        for s in block:
            if s.kind == "assign":
                self.env[s.target] = self.expr(s.value)
            elif s.kind == "if" and s.cond.op == "active" and not s.orelse:
                mask = np.asarray(self.topo["g"] < self.p.active)
                for inner in s.body:
                    self.store(inner, mask)
            elif s.kind == "store":
                self.store(s, np.ones(self.N, bool))
            else:
                raise Unsupported(s.kind)

    def store(self, s, mask) -> None:
        if s.kind != "store" or not s.target.startswith("out_"):
            raise Unsupported(s.kind)
        index = self.expr(s.index)
        value = self.expr(s.value)
        out = self.named[s.target]
        for k in np.flatnonzero(mask):
            out[int(index[k])] = value[k]


def _fma(x, y, z, dt):
    if not all(math.isfinite(float(v)) for v in (x, y, z)):
        return np.float64(x) * np.float64(y) + np.float64(z)
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    if exact == 0:       # Fractions have no -0.0: x * y is exact in f64 then, so IEEE addition gives the sign
        return _NP[dt](np.float64(x) * np.float64(y) + np.float64(z))
    if dt == "f64":
        return _rounded(exact)
    if abs(exact) >= _F32_OVERFLOW:
        return np.float32(math.inf if exact > 0 else -math.inf)
    # rounded to f64 first, |exact| may land on the threshold: clamp, the neighbours below correct it
    guess = np.float32(math.copysign(min(abs(float(exact)), _F32_MAX), float(exact)))
    best = guess
    with np.errstate(over="ignore"):        # FLT_MAX's upper neighbour is inf, skipped below
        neighbours = (np.nextafter(guess, np.float32(-np.inf)), np.nextafter(guess, np.float32(np.inf)))
    for c in neighbours:
        if not np.isfinite(c):
            continue
        dc, db = abs(Fraction(float(c)) - exact), abs(Fraction(float(best)) - exact)
        if dc < db or (dc == db and int(np.float32(c).view(np.uint32)) % 2 == 0):
            best = c
    return best


_F32_MAX = float(np.finfo(np.float32).max)
_F32_OVERFLOW = Fraction(2**128 - 2**103)     # FLT_MAX + half an ulp: from here on f32 rounds to inf


def _rounded(exact: Fraction) -> float:
    """``exact`` rounded to f64, beyond f64's range infinity of its sign (as an IEEE fma overflows)."""
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _int_to_f16(wide: np.ndarray) -> np.ndarray:
    # |v| <= 65504 is exact in f32, anything beyond rounds to inf in f16 either way
    return wide.astype(np.float64).astype(np.float32).astype(np.float16)


def evaluate(program: Program, plane_dim: int = 32) -> Run | None:
    """The model's outputs for a straight-line program (None if it uses something not modelled)."""
    if not program.straight:
        return None
    model = Model(program)
    model.plane(plane_dim)
    for p, a in zip(program.params, model.args):
        if p.kind == "out":
            a[:] = poison(a.dtype, a.size)
    try:
        model.run(program.body)
    except Unsupported:
        return None
    return Run({p.name: model.named[p.name].copy() for p in program.params if p.kind in ("out", "acc")})
