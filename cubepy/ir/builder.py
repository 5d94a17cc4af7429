"""Appending ops to blocks: the one way the frontend (and tests) create IR."""

from __future__ import annotations

from contextlib import contextmanager

from .nodes import Block, Buffer, Const, Kernel, Op, SourceLoc, Value, Var
from .types import Type


class Builder:
    """Appends ops to the current block of a kernel; ``loc`` is stamped on each new op."""

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.block = kernel.body
        self.loc: SourceLoc | None = None

    @contextmanager
    def at(self, block: Block):
        saved, self.block = self.block, block
        try:
            yield block
        finally:
            self.block = saved

    def op(self, opcode: str, args=(), result_type: Type | None = None, blocks=(), **attrs) -> Value | None:
        result = Value(result_type) if result_type is not None else None
        self.block.ops.append(Op(opcode, tuple(args), result, attrs, tuple(blocks), self.loc))
        return result

    def const(self, value, type: Type) -> Const:
        return Const(value, type)

    def new_var(self, name: str, type: Type) -> Var:
        var = Var(name, type)
        self.kernel.vars.append(var)
        return var

    def new_buffer(self, buffer: Buffer) -> Buffer:
        self.kernel.buffers.append(buffer)
        return buffer

    def load_var(self, var: Var) -> Value:
        return self.op("load_var", (var,), var.type)

    def store_var(self, var: Var, value: Value) -> None:
        self.op("store_var", (var, value))
