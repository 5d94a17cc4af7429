"""Hand-building IR kernels for the interpreter tests, and running them."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from cubepy.ir.builder import Builder
from cubepy.ir.nodes import Block, Buffer, Kernel, ScalarParam, SourceLoc, Value
from cubepy.ir.types import DType, Type, bool_, i32, u64
from cubepy.ir.verify import verify

try:
    from cubepy.ir.passes import lower_bounds_checks
except ImportError:  # an IR without the pass
    lower_bounds_checks = None

PACKAGE = Path(__file__).resolve().parents[2] / "backends" / "interp"


def load_interp():
    """``cubepy.backends.interp`` if that is this checkout's file, else the package by path."""
    try:
        mod = importlib.import_module("cubepy.backends.interp")
        if Path(mod.__file__).resolve().parent == PACKAGE:
            return mod
    except ImportError:
        pass
    name = "cubepy_backends_interp"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, PACKAGE / "__init__.py", submodule_search_locations=[str(PACKAGE)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


interp = load_interp()
BACKEND = interp.BACKEND
I32, BOOL = Type(i32), Type(bool_)


def T(dtype: DType, width: int = 1) -> Type:
    return Type(dtype, width)


class KB:
    """A kernel under construction: ``kb.op("add", a, b)``, ``with kb.if_(c): ...``, ``kb.run(...)``."""

    def __init__(self, name="k", cube_dim=(1, 1, 1), plane_dim=32, checked=True):
        self.k = Kernel(name, cube_dim=tuple(cube_dim), plane_dim=plane_dim, checked=checked)
        self.b = Builder(self.k)

    def line(self, n: int) -> None:
        """Stamp the following ops with source line ``n``."""
        self.b.loc = SourceLoc("kernel.py", n)

    # declarations
    def array(self, name, dtype, ndim=1, width=1, mutable=True) -> Buffer:
        buf = Buffer(name, "global", Type(dtype, width), ndim=ndim, mutable=mutable,
                     param_index=len(self.k.params))
        self.k.params.append(buf)
        return buf

    def scalar(self, name, dtype) -> Value:
        p = ScalarParam(name, Type(dtype), len(self.k.params))
        self.k.params.append(p)
        return self.b.op("param", (), p.type, index=p.param_index, name=name)

    def shared(self, name, dtype, shape, width=1) -> Buffer:
        return self.b.new_buffer(Buffer(name, "shared", Type(dtype, width), len(shape), True, tuple(shape)))

    def local(self, name, dtype, shape, width=1) -> Buffer:
        return self.b.new_buffer(Buffer(name, "local", Type(dtype, width), len(shape), True, tuple(shape)))

    def var(self, name, type: Type):
        return self.b.new_var(name, type)

    # values
    def c(self, value, dtype=i32, width=1):
        return self.b.const(value, Type(dtype, width))

    def op(self, opcode, *args, t: Type | None = None, **attrs) -> Value:
        return self.b.op(opcode, args, t or args[1 if opcode == "select" else 0].type, **attrs)

    def cmp(self, opcode, a, b) -> Value:
        return self.b.op(opcode, (a, b), Type(bool_, a.type.width))

    def cast(self, a, dtype) -> Value:
        return self.b.op("cast", (a,), Type(dtype, a.type.width))

    def builtin(self, name) -> Value:
        return self.b.op("builtin", (), I32, name=name)

    def gid(self) -> Value:
        """cube_pos_x * cube_dim_x + unit_pos_x"""
        base = self.op("mul", self.builtin("cube_pos_x"), self.builtin("cube_dim_x"))
        return self.op("add", base, self.builtin("unit_pos_x"))

    def load_var(self, var):
        return self.b.load_var(var)

    def store_var(self, var, value):
        self.b.store_var(var, value)

    # memory
    def load(self, buf, *idx) -> Value:
        return self.b.op("load", (buf, *idx), buf.type, checked=self.k.checked)

    def store(self, buf, *idx_and_value) -> None:
        self.b.op("store", (buf, *idx_and_value), checked=self.k.checked)

    def atomic(self, kind, buf, *args) -> Value:
        return self.b.op("atomic", (buf, *args), buf.type, op=kind, checked=self.k.checked)

    def shape(self, buf, dim=0) -> Value:
        return self.b.op("shape", (buf,), I32, dim=dim)

    def sync(self) -> None:
        self.b.op("sync_cube")

    def plane(self, opcode, *args, t: Type | None = None) -> Value:
        if t is None:
            w = args[0].type.width if args else 1
            t = {"plane_all": Type(bool_, w), "plane_any": Type(bool_, w), "plane_elect": BOOL,
                 "plane_ballot": Type(u64, w)}.get(opcode) or args[0].type
        return self.b.op(opcode, args, t)

    # control flow
    @contextmanager
    def if_(self, cond):
        """``with kb.if_(c) as orelse:`` builds the then-block; ``with kb.at(orelse):`` the else."""
        then, orelse = Block(), Block()
        self.b.op("if", (cond,), blocks=(then, orelse))
        with self.b.at(then):
            yield orelse

    def at(self, block):
        return self.b.at(block)

    @contextmanager
    def for_(self, start, stop, step, name="i"):
        var = self.var(name, I32)
        body = Block()
        self.b.op("for", (start, stop, step), blocks=(body,), var=var)
        with self.b.at(body):
            yield self.load_var(var)

    @contextmanager
    def loop(self):
        body = Block()
        self.b.op("loop", (), blocks=(body,))
        with self.b.at(body):
            yield

    def brk(self):
        self.b.op("break")

    def cont(self):
        self.b.op("continue")

    def ret(self):
        self.b.op("return")

    # running
    def run(self, args, cube_count=(1, 1, 1), plane_dim=None, races=False, cube_dim=None, lower=False):
        """Launch on the interpreter; ``lower`` first turns checked accesses into the runtime's
        ``if in bounds: access else: report_oob`` (what the interpreter gets from the frontend)."""
        if plane_dim is not None:
            self.k.plane_dim = plane_dim
        if lower:
            lower_bounds_checks(self.k)
        verify(self.k)
        props = BACKEND.probe(plane_dim=self.k.plane_dim)
        exe = BACKEND.compile(self.k, props)
        cube_count = tuple(cube_count) + (1,) * (3 - len(cube_count))
        BACKEND.launch(exe, self.k, cube_count, tuple(cube_dim or self.k.cube_dim), list(args), props,
                       {"races": races})
        return args


def poisoned(n, dtype):
    """An output array full of a value no test writes, to show unwritten elements."""
    dtype = np.dtype(dtype)
    return np.full(n, np.nan if dtype.kind == "f" else 0x5A, dtype)
