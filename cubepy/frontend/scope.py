"""What the statement and expression visitors share about names, frames and control.

`Frame` is one function being traced (the kernel, or an inlined ``@cb.func``) with its scope
dictionary and the loops it is in. The markers a scope may hold instead of a value: `Poisoned`
(a compile-time value assigned under a runtime condition) and `MaybeUnbound` (a name not every
path binds: reading it is a compile error, Python's UnboundLocalError). The exceptions that
unwind tracing: `KernelReturn` and `FuncReturn` (a return), `StaticBreak` and `StaticContinue`
(in a loop that runs at trace time), `Retrace` (a variable needs a wider type: trace again).
`Branches` carries what the two sides of an ``if`` bound to where they join. Also the
AST-operator-to-opcode tables (`BINOPS`, `CMPOPS`, `UNARYOPS`, `STATIC_COMPARE`), `assigned_names`
and `join_types` (the type a variable needs to hold two values).
"""

from __future__ import annotations

import ast
import operator

from ..ir.types import Type
from .source import FunctionSource

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
           ast.LShift: "shl", ast.RShift: "shr"}
CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
STATIC_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
                   ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
                   ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
UNARYOPS = {ast.USub: "neg", ast.Not: "not", ast.Invert: "invert"}
MAX_STATIC_ITERATIONS = 100_000


class Poisoned:
    """A name last assigned a compile-time value under a runtime condition."""

    def __init__(self, name: str):
        self.name = name


class MaybeUnbound:
    """A name first bound under runtime control flow that not every path binds (an ``if``
    without the assignment on one side, a loop that may run zero times): reading it is the
    UnboundLocalError Python would raise on that path, so it is a compile error."""

    def __init__(self, name: str, construct: str, line: int | None):
        self.name, self.construct, self.line = name, construct, line


class Branches:
    """What an ``if`` tells `traced_region` about its two sides: their scopes at the end, and
    whether each ended in a return/break/continue (then its bindings never reach past the if)."""

    def __init__(self):
        self.scopes: list[dict] = []
        self.ended: list[bool] = []


class KernelReturn(Exception):
    pass


class FuncReturn(Exception):
    def __init__(self, value):
        self.value = value


class StaticBreak(Exception):
    pass


class StaticContinue(Exception):
    pass


class Retrace(Exception):
    """A variable needs a wider type than its first assignment gave it; trace again."""


class ShapeSpecific(Exception):
    """A shape-generic trace (``spec.cube_dim`` None) met code whose meaning depends on the cube
    extents being compile-time values; the kernel is traced for its CubeDim instead."""


class Frame:
    """One function being traced (the kernel, or an inlined @cb.func)."""

    def __init__(self, source: FunctionSource, scope: dict, traced_depth: int, path: tuple[str, ...] | None = ()):
        self.source = source
        self.path = path               # how the kernel reached this function (cubepy.frontend.dependencies)
        self.scope = scope
        self.globals = source.fn.__globals__
        self.closure = closure_vars(source.fn)
        self.base_depth = traced_depth
        self.loops: list[tuple] = []   # ("traced" | "static", depth at entry, loop node), innermost last


def closure_vars(fn) -> dict:
    if not fn.__closure__:
        return {}
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def assigned_names(nodes) -> set[str]:
    """Names a list of statements may assign (targets of assignments and for loops)."""
    names: set[str] = set()
    for stmt in nodes:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


MISSING = object()


def join_types(a: Type, b: Type) -> Type | None:
    """The type a variable needs to hold values of both types, or None."""
    from ..ir.types import PromotionError, promote

    if a.width != b.width and 1 not in (a.width, b.width):
        return None
    try:
        dtype = promote(a.dtype, b.dtype)
    except PromotionError:
        return None
    return Type(dtype, max(a.width, b.width))


def describe(x) -> str:
    name = getattr(x, "__qualname__", None) or getattr(x, "__name__", None)
    return f"'{name}'" if name else type(x).__name__
