"""The IR: a typed, structured tree of operations.

A kernel is a `Kernel` holding parameters, buffers (global arrays, shared and local memory),
mutable locals (`Var`) and a body `Block`. A block is a list of `Op`s; structured control flow
(`if`, `for`, `loop`) holds nested blocks. Operands are `Value`s (SSA temporaries, each defined
once), `Const`s, `Var`s (read and written only through `load_var`/`store_var`) and `Buffer`s.
Every opcode is listed, with its meaning, in `OPCODES` below: it is the contract every backend
implements.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from .types import Type


@dataclass(frozen=True)
class SourceLoc:
    """Where in the user's source an operation came from."""

    filename: str
    line: int
    col: int = 0
    end_col: int | None = None
    text: str = ""

    def render(self) -> str:
        """``File "x.py", line 3`` with the source line and a caret under the expression."""
        out = f'  File "{self.filename}", line {self.line}'
        if self.text:
            stripped = self.text.lstrip()
            indent = len(self.text) - len(stripped)
            start = max(0, self.col - indent)
            end = self.end_col - indent if self.end_col and self.end_col > self.col else start + 1
            out += f"\n    {stripped.rstrip()}\n    {' ' * start}{'^' * max(1, end - start)}"
        return out


_ids = itertools.count()


class Value:
    """An SSA value: the result of one op (or a constant)."""

    __slots__ = ("id", "type", "name")

    def __init__(self, type: Type, name: str | None = None):
        self.id = next(_ids)
        self.type = type
        self.name = name

    def __repr__(self) -> str:
        return f"%{self.id}"


class Const(Value):
    """A constant operand; ``value`` is a Python bool, int or float already fitted to ``type``."""

    __slots__ = ("value",)

    def __init__(self, value: Any, type: Type):
        super().__init__(type)
        self.value = value

    def __repr__(self) -> str:
        return f"{self.value!r}:{self.type}"


class Var:
    """A mutable local of one type: what a Python name reassigned under control flow becomes."""

    __slots__ = ("id", "name", "type")

    def __init__(self, name: str, type: Type):
        self.id = next(_ids)
        self.name = name
        self.type = type

    def __repr__(self) -> str:
        return f"${self.name}.{self.id}"


@dataclass(eq=False)
class Buffer:
    """An array the kernel indexes.

    ``kind``: ``"global"`` (a kernel parameter; shape is known only at launch, read with the
    ``shape`` op), ``"shared"`` (one per cube, ``shape`` static) or ``"local"`` (one per unit,
    ``shape`` static). ``type`` is the element type (a Line type for `cb.lines` arguments).
    Global buffers are C-contiguous; indices are per dimension, row-major.
    """

    name: str
    kind: str
    type: Type
    ndim: int = 1
    mutable: bool = False
    shape: tuple[int, ...] | None = None
    param_index: int | None = None     # position among the kernel's runtime parameters
    id: int = field(default_factory=lambda: next(_ids))

    def __repr__(self) -> str:
        return f"@{self.name}"


@dataclass(eq=False)
class Block:
    ops: list[Op] = field(default_factory=list)


@dataclass(eq=False)
class Op:
    opcode: str
    args: tuple = ()
    result: Value | None = None
    attrs: dict = field(default_factory=dict)
    blocks: tuple[Block, ...] = ()
    loc: SourceLoc | None = None


@dataclass(frozen=True)
class ScalarParam:
    """A scalar kernel parameter passed by value at launch."""

    name: str
    type: Type
    param_index: int                   # position among the kernel's runtime parameters


@dataclass(eq=False)
class Kernel:
    name: str
    params: list = field(default_factory=list)          # Buffer (global) or ScalarParam, in order
    buffers: list[Buffer] = field(default_factory=list)  # shared and local memory
    vars: list[Var] = field(default_factory=list)
    body: Block = field(default_factory=Block)
    checked: bool = True
    fastmath: str | None = None
    cube_dim: tuple[int, int, int] = (1, 1, 1)
    plane_dim: int = 32
    loc: SourceLoc | None = None
    # checks were left out on the proof that positions stay below a launch's unit count, which
    # holds only for launches of at most INDEX_MAX units (ir/bounds.py): the runtime refuses others
    units_fit_index: bool = False
    # print sites (cubepy.ir.prints.PrintSite), by site id; their hidden buffers follow the params
    prints: list = field(default_factory=list)

    @property
    def shared_bytes(self) -> int:
        total = 0
        for b in self.buffers:
            if b.kind == "shared":
                n = 1
                for s in b.shape:
                    n *= s
                total += n * b.type.dtype.itemsize * b.type.width
        return total


# --- the opcode contract ------------------------------------------------------------------
#
# Arithmetic is elementwise on Lines; operands of binary ops have the same type (the frontend
# inserts casts and `broadcast`). Integer arithmetic wraps (two's complement). The choices are
# written once, with a scalar reference, in `semantics.py`.

UNARY = {
    "neg": "-a",
    "not": "logical not (bool)",
    "invert": "bitwise not (integers)",
    "abs": "|a|",
    "sqrt": "square root", "rsqrt": "1/sqrt(a)", "exp": "e**a", "log": "natural log",
    "sin": "sine", "cos": "cosine", "tanh": "hyperbolic tangent", "erf": "error function",
    "floor": "round down (floats)", "ceil": "round up (floats)",
}
BINARY = {
    "add": "a + b", "sub": "a - b", "mul": "a * b",   # attrs nowrap: shown never to overflow (ir/cube_checks.py)
    "div": "a / b (floats only; the frontend casts integers to a float type first)",
    "floordiv": "Python's a // b: rounds toward -inf; integer division by zero gives 0",
    "mod": "Python's a % b: the sign of b; integer modulo by zero gives 0",
    "pow": "a ** b; integers: exact and wrapped, a negative b gives the truncated 1 / a**-b",
    "min": "minimum; floats: NaN if either is NaN, -0.0 < +0.0 (IEEE 754-2019 minimum)", "max": "maximum (likewise)",
    "and": "bitwise/logical and", "or": "bitwise/logical or", "xor": "bitwise/logical xor",
    "shl": "a << b; a count b outside [0, bits) gives 0",
    "shr": "a >> b (arithmetic for signed); a count outside [0, bits) gives 0, or -1 for a negative a",
}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
ATOMIC_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas")
PLANE_REDUCE = ("plane_sum", "plane_prod", "plane_min", "plane_max")
PLANE_OPS = PLANE_REDUCE + (
    "plane_all", "plane_any", "plane_ballot", "plane_broadcast", "plane_shuffle",
    "plane_shuffle_xor", "plane_shuffle_up", "plane_shuffle_down", "plane_elect",
    "plane_inclusive_sum", "plane_exclusive_sum",
)
BUILTINS = (
    "unit_pos_x", "unit_pos_y", "unit_pos_z", "cube_pos_x", "cube_pos_y", "cube_pos_z",
    "cube_dim_x", "cube_dim_y", "cube_dim_z", "cube_count_x", "cube_count_y", "cube_count_z",
    "plane_dim", "unit_pos_plane",
)

OPCODES: dict[str, str] = {
    **{k: f"unary: {v}" for k, v in UNARY.items()},
    **{k: f"binary: {v}" for k, v in BINARY.items()},
    **{k: f"compare ({v}); result is bool of the operands' width" for k, v in COMPARE.items()},
    "fma": "a * b + c (fused where the target can)",
    "select": "args (cond, a, b): a where cond else b; cond is bool, scalar or of a's width",
    "cast": "convert to result.type: integers wrap, floats round to nearest, float->int truncates toward zero "
    "and saturates (NaN -> 0), anything->bool is != 0",
    "broadcast": "a scalar repeated into result.type's Line width",
    "extract": "attrs index: one element of a Line",
    "insert": "args (line, scalar), attrs index: a copy of the Line with one element replaced",
    "builtin": f"attrs name in {BUILTINS}; an i32",
    "param": "attrs index, name: the launch value of a scalar parameter",
    "shape": "args (buffer,), attrs dim: the length of a global buffer along dim (i32)",
    "load": "args (buffer, *indices): one element; attrs checked (a checked index may be i64 or u64 until "
    "lower_bounds_checks narrows it inside its guard; backends see i32 indices)",
    "store": "args (buffer, *indices, value); attrs checked",
    "atomic": "args (buffer, *indices, value), attrs op in ATOMIC_OPS; returns the old value. "
    "For op 'cas' the args are (buffer, *indices, compare, value): store value if old == compare",
    "report_oob": "args (*indices, *extents), attrs array: record the first out-of-bounds access "
    "of the launch (the access itself is skipped); raised as OutOfBoundsError after the launch",
    "load_var": "args (var,)", "store_var": "args (var, value)",
    "sync_cube": "barrier: every unit of the cube arrives before any goes on; orders shared memory",
    **{k: "plane op: see docs/design.md, Plane operations" for k in PLANE_OPS},
    "if": "args (cond,), blocks (then, else). attrs cube_checks: the condition is the same for every "
    "unit of the cube and the sides are one body with and without some bounds checks (ir/cube_checks.py)",
    "for": "args (start, stop, step), attrs var: Var(i32) holding the counter; blocks (body,). "
    "var = start; while (step > 0 ? var < stop : var > stop) { body; var += step }",
    "loop": "blocks (body,): repeat until `break`",
    "break": "leave the innermost for/loop", "continue": "next iteration of the innermost for/loop",
    "return": "this unit is done with the kernel",
}

def walk(block: Block):
    """Every op of a block, nested ones included, in program order."""
    for op in block.ops:
        yield op
        for b in op.blocks:
            yield from walk(b)
