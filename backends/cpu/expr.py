"""Pure operations: arithmetic, compares, math functions and casts (on scalars and LLVM vectors)."""

from __future__ import annotations

from cubepy.ir.nodes import (
    BINARY,
    COMPARE,
    UNARY,
    Op,
)
from cubepy.ir.types import Type, bool_, f32, f64, i32

from .common import CpuCompileError
from .llvmtext import const, ltype, mangle, scalar_type


class ExprMixin:
    def _flags(self) -> str:
        return "reassoc contract arcp afn " if self.fast else ""

    def _decl(self, name: str, ret: str, args: list[str]) -> str:
        self.decls.setdefault(name, f"declare {ret} @{name}({', '.join(args)})")
        return name

    def _call(self, name: str, ret: str, args: list[tuple[str, str]], fast: bool = False) -> str:
        self._decl(name, ret, [a for a, _ in args])
        fl = self._flags() if fast else ""
        return self.fn.op(f"call {fl}{ret} @{name}({', '.join(f'{a} {b}' for a, b in args)})")

    def _intrinsic(self, base: str, t: Type, args: list[str]) -> str:
        ty = ltype(t)
        return self._call(f"llvm.{base}.{mangle(t)}", ty, [(ty, a) for a in args], fast=t.dtype.is_float)

    def _libm(self, name: str, t: Type, args: list[str], via_f64: bool = False) -> str:
        """A libm function applied per element (f16 computes in f32; via_f64 in f64)."""
        fn = self.fn
        d = t.dtype
        work = f64 if (via_f64 or d == f64) else f32
        cname = name if work == f64 else name + "f"
        wty, sty = scalar_type(work), scalar_type(d)
        conv_in = "fpext" if d.bits < work.bits else None
        conv_out = "fptrunc" if d.bits < work.bits else None

        def one(xs: list[str]) -> str:
            xs = [fn.op(f"{conv_in} {sty} {x} to {wty}") if conv_in else x for x in xs]
            r = self._call(cname, wty, [(wty, x) for x in xs])
            return self._fptrunc(r, Type(work), Type(d)) if conv_out else r
        if t.width == 1:
            return one(args)
        vec = "poison"
        for i in range(t.width):
            parts = [fn.op(f"extractelement {ltype(t)} {a}, i64 {i}") for a in args]
            vec = fn.op(f"insertelement {ltype(t)} {vec}, {sty} {one(parts)}, i64 {i}")
        return vec

    def _pure(self, op: Op, a: list[str]) -> str:
        code = op.opcode
        fn = self.fn
        if code in COMPARE:
            return self._compare(code, a[0], a[1], self.lanes.of(op.args[0].type))
        t = self.lanes.of(op.result.type)
        ty = ltype(t)
        if code in UNARY:
            return self._unary(code, a[0], t)
        if code in ("add", "sub", "mul") and op.attrs.get("nowrap") and t.dtype.is_signed and not t.dtype.is_float:
            return fn.op(f"{code} nsw {ty} {a[0]}, {a[1]}")      # shown never to wrap (ir/cube_checks.py)
        if code in BINARY:
            return self._binary(code, a[0], a[1], t)
        if code == "fma":
            if t.dtype.is_float and t.dtype.bits == 16:  # in f64 (exact product), rounded once to f16
                wt = Type(f64, t.width)
                w = [fn.op(f"fpext {ty} {v} to {ltype(wt)}") for v in a]
                prod = fn.op(f"fmul {ltype(wt)} {w[0]}, {w[1]}")
                return self._fptrunc(fn.op(f"fadd {ltype(wt)} {prod}, {w[2]}"), wt, t)
            if t.dtype.is_float:
                return self._intrinsic("fma", t, a)
            return self._binary("add", self._binary("mul", a[0], a[1], t), a[2], t)
        if code == "select":
            cty = ltype(self.lanes.of(op.args[0].type))
            return fn.op(f"select {cty} {a[0]}, {ty} {a[1]}, {ty} {a[2]}")
        if code == "cast":
            return self._cast(a[0], self.lanes.of(op.args[0].type), t)
        if code == "broadcast":
            sty = ltype(self.lanes.of(op.args[0].type))
            one = fn.op(f"insertelement {ty} poison, {sty} {a[0]}, i64 0")
            return fn.op(f"shufflevector {ty} {one}, {ty} poison, <{t.width} x i32> zeroinitializer")
        if code == "extract":
            return fn.op(f"extractelement {ltype(self.lanes.of(op.args[0].type))} {a[0]}, i64 {op.attrs['index']}")
        if code == "insert":
            sty = ltype(self.lanes.of(op.args[1].type))
            return fn.op(f"insertelement {ty} {a[0]}, {sty} {a[1]}, i64 {op.attrs['index']}")
        raise CpuCompileError(f"opcode {code!r} is not supported", self.k.name, op.loc)

    def _compare(self, code: str, x: str, y: str, t: Type) -> str:
        ty = ltype(t)
        d = t.dtype
        if d.is_float:
            pred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}[code]
            return self.fn.op(f"fcmp {self._flags()}{pred} {ty} {x}, {y}")
        s = "s" if d.is_signed and not d.is_bool else "u"
        pred = {"eq": "eq", "ne": "ne", "lt": f"{s}lt", "le": f"{s}le", "gt": f"{s}gt", "ge": f"{s}ge"}[code]
        return self.fn.op(f"icmp {pred} {ty} {x}, {y}")

    def _unary(self, code: str, x: str, t: Type) -> str:
        fn, ty, d = self.fn, ltype(t), t.dtype
        if code == "neg":
            return fn.op(f"fneg {self._flags()}{ty} {x}") if d.is_float else fn.op(f"sub {ty} {const(t, 0)}, {x}")
        if code in ("not", "invert"):
            return fn.op(f"xor {ty} {x}, {const(t, -1 if not d.is_bool else True)}")
        if code == "abs":
            if d.is_float:
                return self._intrinsic("fabs", t, [x])
            if d.is_bool or not d.is_signed:
                return x
            name = f"llvm.abs.{mangle(t)}"
            return self._call(name, ty, [(ty, x), ("i1", "false")])
        if not d.is_float:
            raise CpuCompileError(f"{code} needs a float operand, got {t}", self.k.name, None)
        if code in ("sqrt", "floor", "ceil"):
            return self._intrinsic(code, t, [x])
        if code == "rsqrt":
            s = self._intrinsic("sqrt", t, [x])
            return fn.op(f"fdiv {self._flags()}{ty} {const(t, 1.0)}, {s}")
        if code in ("exp", "log", "sin", "cos"):
            if d.bits == 16:
                return self._libm(code, t, [x])
            return self._intrinsic(code, t, [x])
        if code == "tanh":
            return self._libm("tanh", t, [x])
        if code == "erf":
            return self._libm("erf", t, [x], via_f64=True)
        raise CpuCompileError(f"unary {code!r} is not supported", self.k.name, None)

    def _binary(self, code: str, x: str, y: str, t: Type) -> str:
        fn, ty, d = self.fn, ltype(t), t.dtype
        fl = self._flags()
        if d.is_float:
            simple = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
            if code in simple:
                return fn.op(f"{simple[code]} {fl}{ty} {x}, {y}")
            if code in ("min", "max"):
                return self._intrinsic("minimum" if code == "min" else "maximum", t, [x, y])
            if code == "pow":
                return self._intrinsic("pow", t, [x, y]) if d.bits > 16 else self._libm("pow", t, [x, y])
            if code in ("floordiv", "mod"):
                return self._float_divmod(code, x, y, t)
            raise CpuCompileError(f"{code} on {t} is not supported", self.k.name, None)
        if d.is_bool:
            booly = {"add": "or", "mul": "and", "min": "and", "max": "or", "and": "and", "or": "or",
                     "xor": "xor", "sub": "xor"}
            if code in booly:
                return fn.op(f"{booly[code]} {ty} {x}, {y}")
            raise CpuCompileError(f"{code} on bool is not supported", self.k.name, None)
        simple = {"add": "add", "sub": "sub", "mul": "mul", "and": "and", "or": "or", "xor": "xor"}
        if code in simple:
            return fn.op(f"{simple[code]} {ty} {x}, {y}")
        if code in ("min", "max"):
            s = "s" if d.is_signed else "u"
            return self._intrinsic(f"{s}{code}", t, [x, y])
        if code in ("shl", "shr"):
            return self._shift(code, x, y, t)
        if code in ("floordiv", "mod"):
            return self._int_divmod(code, x, y, t)
        if code == "pow":
            return self._int_pow(x, y, t)
        if code == "div":
            raise CpuCompileError("integer true division reached the backend", self.k.name, None)
        raise CpuCompileError(f"{code} on {t} is not supported", self.k.name, None)

    def _shift(self, code: str, x: str, y: str, t: Type) -> str:
        """A count outside [0, bits) shifts every bit out: 0, or for ``>>`` of a negative signed
        value -1 (an unsigned compare catches negative counts too)."""
        fn, ty, d = self.fn, ltype(t), t.dtype
        bt = ltype(t.with_dtype(bool_))
        out = fn.op(f"icmp uge {ty} {y}, {const(t, d.bits)}")
        count = fn.op(f"select {bt} {out}, {ty} {const(t, 0)}, {ty} {y}")
        inst = "shl" if code == "shl" else ("ashr" if d.is_signed else "lshr")
        r = fn.op(f"{inst} {ty} {x}, {count}")
        if code == "shr" and d.is_signed:
            gone = fn.op(f"ashr {ty} {x}, {const(t, d.bits - 1)}")
        else:
            gone = const(t, 0)
        return fn.op(f"select {bt} {out}, {ty} {gone}, {ty} {r}")

    def _int_pow(self, a: str, b: str, t: Type) -> str:
        """Exact wrapped ``a ** b`` by squaring over every bit of ``b`` (straight-line, so it works
        on gang vectors too); a negative exponent gives the truncated 1 / a**-b."""
        fn, ty, d = self.fn, ltype(t), t.dtype
        bt = ltype(t.with_dtype(bool_))
        one = const(t, 1)
        r, x = one, a
        for k in range(d.bits - (1 if d.is_signed else 0)):
            bit = fn.op(f"and {ty} {fn.op(f'lshr {ty} {b}, {const(t, k)}')}, {one}")
            take = fn.op(f"icmp ne {ty} {bit}, {const(t, 0)}")
            r = fn.op(f"select {bt} {take}, {ty} {fn.op(f'mul {ty} {r}, {x}')}, {ty} {r}")
            x = fn.op(f"mul {ty} {x}, {x}")
        if not d.is_signed:
            return r
        neg = fn.op(f"icmp slt {ty} {b}, {const(t, 0)}")
        odd = fn.op(f"icmp ne {ty} {fn.op(f'and {ty} {b}, {one}')}, {const(t, 0)}")
        minus = fn.op(f"select {bt} {odd}, {ty} {const(t, -1)}, {ty} {one}")
        is_one = fn.op(f"zext {bt} {fn.op(f'icmp eq {ty} {a}, {one}')} to {ty}")
        inverse = fn.op(f"select {bt} {fn.op(f'icmp eq {ty} {a}, {const(t, -1)}')}, {ty} {minus}, {ty} {is_one}")
        return fn.op(f"select {bt} {neg}, {ty} {inverse}, {ty} {r}")

    def _int_divmod(self, code: str, a: str, b: str, t: Type) -> str:
        fn, ty = self.fn, ltype(t)
        bt = ltype(t.with_dtype(bool_))
        zero, one = const(t, 0), const(t, 1)
        z = fn.op(f"icmp eq {ty} {b}, {zero}")
        if not t.dtype.is_signed:
            bs = fn.op(f"select {bt} {z}, {ty} {one}, {ty} {b}")
            r = fn.op(f"{'udiv' if code == 'floordiv' else 'urem'} {ty} {a}, {bs}")
            return fn.op(f"select {bt} {z}, {ty} {zero}, {ty} {r}")
        m1 = fn.op(f"icmp eq {ty} {b}, {const(t, -1)}")
        bad = fn.op(f"or {bt} {z}, {m1}")
        bs = fn.op(f"select {bt} {bad}, {ty} {one}, {ty} {b}")
        q = fn.op(f"sdiv {ty} {a}, {bs}")
        r = fn.op(f"srem {ty} {a}, {bs}")
        rnz = fn.op(f"icmp ne {ty} {r}, {zero}")
        neg = fn.op(f"icmp slt {ty} {fn.op(f'xor {ty} {r}, {bs}')}, {zero}")
        adj = fn.op(f"and {bt} {rnz}, {neg}")
        if code == "floordiv":
            q2 = fn.op(f"select {bt} {adj}, {ty} {fn.op(f'sub {ty} {q}, {one}')}, {ty} {q}")
            q3 = fn.op(f"select {bt} {m1}, {ty} {fn.op(f'sub {ty} {zero}, {a}')}, {ty} {q2}")
            return fn.op(f"select {bt} {z}, {ty} {zero}, {ty} {q3}")
        r2 = fn.op(f"select {bt} {adj}, {ty} {fn.op(f'add {ty} {r}, {bs}')}, {ty} {r}")
        return fn.op(f"select {bt} {bad}, {ty} {zero}, {ty} {r2}")

    def _float_divmod(self, code: str, a: str, b: str, t: Type) -> str:
        """NumPy's npy_divmod (Python semantics), f16 computed in f32."""
        fn = self.fn
        if t.dtype.bits == 16:
            wt = Type(f32, t.width)
            wa = fn.op(f"fpext {ltype(t)} {a} to {ltype(wt)}")
            wb = fn.op(f"fpext {ltype(t)} {b} to {ltype(wt)}")
            r = self._float_divmod(code, wa, wb, wt)
            return fn.op(f"fptrunc {ltype(wt)} {r} to {ltype(t)}")
        ty, bt = ltype(t), ltype(t.with_dtype(bool_))
        zero = const(t, 0.0)

        def sel(c, x, y):
            return fn.op(f"select {bt} {c}, {ty} {x}, {ty} {y}")
        mod = fn.op(f"frem {ty} {a}, {b}")
        bzero = fn.op(f"fcmp oeq {ty} {b}, {zero}")
        quot = fn.op(f"fdiv {ty} {a}, {b}")
        div = fn.op(f"fdiv {ty} {fn.op(f'fsub {ty} {a}, {mod}')}, {b}")
        modnz = fn.op(f"fcmp une {ty} {mod}, {zero}")
        differ = fn.op(f"xor {bt} {fn.op(f'fcmp olt {ty} {b}, {zero}')}, {fn.op(f'fcmp olt {ty} {mod}, {zero}')}")
        fix = fn.op(f"and {bt} {modnz}, {differ}")
        mod2 = sel(fix, fn.op(f"fadd {ty} {mod}, {b}"), mod)
        div2 = sel(fix, fn.op(f"fsub {ty} {div}, {const(t, 1.0)}"), div)
        if code == "mod":
            signed_zero = self._intrinsic("copysign", t, [zero, b])
            return sel(bzero, mod, sel(modnz, mod2, signed_zero))
        fl = self._intrinsic("floor", t, [div2])
        gt = fn.op(f"fcmp ogt {ty} {fn.op(f'fsub {ty} {div2}, {fl}')}, {const(t, 0.5)}")
        fl2 = sel(gt, fn.op(f"fadd {ty} {fl}, {const(t, 1.0)}"), fl)
        divnz = fn.op(f"fcmp une {ty} {div2}, {zero}")
        res = sel(divnz, fl2, self._intrinsic("copysign", t, [zero, quot]))
        return sel(bzero, quot, res)

    def _fptrunc(self, x: str, src: Type, dst: Type) -> str:
        """fptrunc, with f64 -> f16 done without a libcall: f64 -> f32 rounding to odd, then
        f32 -> f16 (round to odd keeps the final rounding correct)."""
        fn = self.fn
        sty, dty = ltype(src), ltype(dst)
        if not (src.dtype.bits == 64 and dst.dtype.bits == 16):
            return fn.op(f"fptrunc {sty} {x} to {dty}")
        ft, it = Type(f32, src.width), Type(i32, src.width)
        fty, ity = ltype(ft), ltype(it)
        bt = ltype(src.with_dtype(bool_))
        t = fn.op(f"fptrunc {sty} {x} to {fty}")
        back = fn.op(f"fpext {fty} {t} to {sty}")
        inexact = fn.op(f"fcmp une {sty} {back}, {x}")
        ax = self._intrinsic("fabs", src, [x])
        aback = self._intrinsic("fabs", src, [back])
        up = fn.op(f"fcmp ogt {sty} {aback}, {ax}")
        bits = fn.op(f"bitcast {fty} {t} to {ity}")
        dec = fn.op(f"select {bt} {up}, {ity} {fn.op(f'sub {ity} {bits}, {const(it, 1)}')}, {ity} {bits}")
        odd = fn.op(f"or {ity} {dec}, {const(it, 1)}")
        fixed = fn.op(f"select {bt} {inexact}, {ity} {odd}, {ity} {bits}")
        f = fn.op(f"bitcast {ity} {fixed} to {fty}")
        return fn.op(f"fptrunc {fty} {f} to {dty}")

    def _cast(self, x: str, src: Type, dst: Type) -> str:
        fn = self.fn
        s, d = src.dtype, dst.dtype
        sty, dty = ltype(src), ltype(dst)
        if s == d:
            return x
        if d.is_bool:
            if s.is_float:
                return fn.op(f"fcmp une {sty} {x}, {const(src, 0.0)}")
            return fn.op(f"icmp ne {sty} {x}, {const(src, 0)}")
        if s.is_bool:
            return fn.op(f"{'uitofp' if d.is_float else 'zext'} {sty} {x} to {dty}")
        if s.is_float and d.is_float:
            if s.bits == d.bits:
                return x
            if d.bits > s.bits:
                return fn.op(f"fpext {sty} {x} to {dty}")
            return self._fptrunc(x, src, dst)
        if s.is_float:
            if s.bits == 16:
                # through f32 (exact): with AVX512-FP16, LLVM 20 lowers fptosi.sat.i16.f16 to an
                # instruction that gives -32768 for NaN, not 0 (a Sapphire Rapids host, 2026-12-05)
                wide = Type(f32, src.width)
                x, src, sty = fn.op(f"fpext {sty} {x} to {ltype(wide)}"), wide, ltype(wide)
            sat = "fptosi.sat" if d.is_signed else "fptoui.sat"
            return self._call(f"llvm.{sat}.{mangle(dst)}.{mangle(src)}", dty, [(sty, x)])
        if d.is_float:
            if d.bits == 16 and s.bits > 16:  # via f32: exact below 2**24, and larger is inf in f16
                wt = Type(f32, dst.width)
                w = fn.op(f"{'sitofp' if s.is_signed else 'uitofp'} {sty} {x} to {ltype(wt)}")
                return fn.op(f"fptrunc {ltype(wt)} {w} to {dty}")
            return fn.op(f"{'sitofp' if s.is_signed else 'uitofp'} {sty} {x} to {dty}")
        if s.bits == d.bits:
            return x
        if d.bits < s.bits:
            return fn.op(f"trunc {sty} {x} to {dty}")
        return fn.op(f"{'sext' if s.is_signed else 'zext'} {sty} {x} to {dty}")
