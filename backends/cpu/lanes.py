"""The lanes the code being emitted runs for: one unit, or a gang of VF consecutive units.

Inside a region the same emitter (region.py) lowers ops for any number of lanes ``n``: each IR
value is then one LLVM value per lane, a ``<n x T>`` vector in a gang. Everything here degrades
to the scalar form at ``n == 1`` (the vector type is the scalar type, a splat is the value itself),
so width-1 code comes out exactly as if written for one unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubepy.ir.types import Type

from .llvmtext import Fn


@dataclass(frozen=True)
class Lanes:
    n: int = 1
    first: str | None = None      # the first lane's unit index (an i32 register); None at cube level
    units: str | None = None      # every lane's unit index: ``first`` itself when n == 1

    @classmethod
    def unit(cls, u: str | None) -> Lanes:
        """One lane: unit ``u`` (None: cube-level code, outside any unit)."""
        return cls(1, u, u)

    @classmethod
    def gang(cls, fn: Fn, first: str, n: int) -> Lanes:
        """``n`` lanes, units ``first`` .. ``first + n - 1`` (emits their index vector)."""
        shape = cls(n)
        units = fn.op(f"add {shape.vector('i32')} {shape.splat(fn, first, 'i32')}, {shape.iota('i32')}")
        return cls(n, first, units)

    def of(self, t: Type) -> Type:
        """The type of a value of IR type ``t`` on every lane (a gang never holds Lines)."""
        return t if self.n == 1 else Type(t.dtype, t.width * self.n)

    def vector(self, scalar_ty: str) -> str:
        return scalar_ty if self.n == 1 else f"<{self.n} x {scalar_ty}>"

    def splat(self, fn: Fn, x: str, scalar_ty: str) -> str:
        """``x`` on every lane."""
        if self.n == 1:
            return x
        vt = self.vector(scalar_ty)
        one = fn.op(f"insertelement {vt} poison, {scalar_ty} {x}, i64 0")
        return fn.op(f"shufflevector {vt} {one}, {vt} poison, <{self.n} x i32> zeroinitializer")

    def iota(self, scalar_ty: str) -> str:
        """The constant lane numbers 0 .. n-1."""
        if self.n == 1:
            return "0"
        return "<" + ", ".join(f"{scalar_ty} {i}" for i in range(self.n)) + ">"

    @property
    def zero(self) -> str:
        """An integer 0 on every lane."""
        return "0" if self.n == 1 else "zeroinitializer"

    @property
    def align(self) -> int:
        """Alignment of a stack slot holding one value per lane (a gang's: a cache line)."""
        return 16 if self.n == 1 else 64
