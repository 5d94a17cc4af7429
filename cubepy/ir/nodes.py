"""The IR: a typed, structured tree of operations.

A kernel is a `Kernel` holding parameters, buffers (global arrays, shared and local memory),
mutable locals (`Var`) and a body `Block`. A block is a list of `Op`s; structured control flow
(`if`, `for`, `loop`) holds nested blocks. Operands are `Value`s (SSA temporaries, each defined
once), `Const`s, `Var`s (read and written only through `load_var`/`store_var`) and `Buffer`s.
Every opcode is listed, with its meaning, in `OPCODES` (`cubepy.ir.opcodes`, re-exported here): it
is the contract every backend implements.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from .opcodes import (  # noqa: F401  (the opcode contract, re-exported: importers take it from here)
    ATOMIC_OPS,
    BINARY,
    BUILTINS,
    COMPARE,
    OPCODES,
    PLANE_OPS,
    PLANE_REDUCE,
    UNARY,
)
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
    # a read-only global array passed by value in the launch's parameters, with room for this many
    # elements (read from the constant bank on CUDA: cubepy.ir.inline_arrays); 0: by address
    inline: int = 0
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def rank(self) -> int:
        """How many indices an access takes: the static shape's length, else ``ndim``."""
        return self.ndim if self.shape is None else len(self.shape)

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
    # an extent None is read at run time (a shape-generic kernel: `RUNTIME_CUBE_UNITS` units at most)
    cube_dim: tuple[int | None, int | None, int | None] = (1, 1, 1)
    plane_dim: int = 32
    units_bound: int | None = None      # shape-generic: the most units per cube it is launched with
    loc: SourceLoc | None = None
    # checks were left out on the proof that positions stay below a launch's unit count, which
    # holds only for launches of at most INDEX_MAX units (ir/bounds.py): the runtime refuses others
    units_fit_index: bool = False
    # print sites (cubepy.ir.prints.PrintSite), by site id; their hidden buffers follow the params
    prints: list = field(default_factory=list)
    # the host's test of a whole launch (cubepy.ir.cube_checks.LaunchTest), whose answer the
    # ``launch_in_bounds`` op reads; None where the kernel has none
    launch_test: Any = None
    # results of the compile pipeline's analysis stages, by stage name (cubepy.ir.pipeline); a
    # transform stage drops them, so what is here describes the IR as it is
    analyses: dict[str, Any] = field(default_factory=dict)

    @property
    def shape_generic(self) -> bool:
        """Whether some cube extent is read at run time (`cubepy.runtime.shapes`)."""
        return None in self.cube_dim

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


def walk(block: Block):
    """Every op of a block, nested ones included, in program order."""
    # an explicit stack: nested generators cost each op a step per level of nesting
    stack = [iter(block.ops)]
    while stack:
        for op in stack[-1]:
            yield op
            if op.blocks:
                stack.append(inner for b in op.blocks for inner in b.ops)
                break
        else:
            stack.pop()


def copied(kernel: Kernel) -> Kernel:
    """A deep copy of ``kernel`` for a backend's own transforms: a pickle round trip, which keeps
    shared values shared as ``copy.deepcopy`` does, in less than half its time (18 against 42 ms
    on the fuzzer's kernels); ``copy.deepcopy`` where an attribute does not pickle."""
    import pickle

    try:
        return pickle.loads(pickle.dumps(kernel, protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        import copy

        return copy.deepcopy(kernel)
