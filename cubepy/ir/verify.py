"""Structural checks of the IR: what every backend may assume."""

from __future__ import annotations

from .nodes import (
    BINARY,
    COMPARE,
    OPCODES,
    UNARY,
    Block,
    Buffer,
    Const,
    Kernel,
    Op,
    ScalarParam,
    Value,
    Var,
)


class VerifyError(Exception):
    """The IR broke an invariant: a bug in cubepy, never the user's fault."""


def verify(kernel: Kernel) -> None:
    """Raise VerifyError if the kernel's IR is malformed."""
    buffers = {id(b) for b in kernel.buffers} | {id(p) for p in kernel.params if isinstance(p, Buffer)}
    variables = {id(v) for v in kernel.vars}
    n_params = len(kernel.params)

    def fail(op: Op, msg: str):
        where = f" (line {op.loc.line})" if op.loc else ""
        raise VerifyError(f"kernel {kernel.name}: {op.opcode}{where}: {msg}")

    defined: set[int] = set()

    def check_block(block: Block, loop_depth: int) -> None:
        own = []            # the values this block defines: out of scope again after it
        for op in block.ops:
            if op.opcode not in OPCODES:
                fail(op, "unknown opcode")
            for a in op.args:
                if isinstance(a, Const):
                    continue
                if isinstance(a, Value):
                    if a.id not in defined:
                        fail(op, f"operand {a!r} used before it is defined")
                elif isinstance(a, Var):
                    if id(a) not in variables:
                        fail(op, f"undeclared variable {a!r}")
                elif isinstance(a, Buffer):
                    if id(a) not in buffers:
                        fail(op, f"undeclared buffer {a!r}")
                else:
                    fail(op, f"bad operand {a!r}")
            _check_types(op, fail)
            if op.opcode == "param" and not (0 <= op.attrs["index"] < n_params
                                             and isinstance(kernel.params[op.attrs["index"]], ScalarParam)):
                fail(op, "param index is not a scalar parameter")
            if op.opcode in ("break", "continue") and loop_depth == 0:
                fail(op, "outside a loop")
            inner = loop_depth + (1 if op.opcode in ("for", "loop") else 0)
            for b in op.blocks:
                check_block(b, inner)
            if op.result is not None:
                defined.add(op.result.id)
                own.append(op.result.id)
        defined.difference_update(own)

    check_block(kernel.body, 0)


def _check_types(op: Op, fail) -> None:
    code, args, res = op.opcode, op.args, op.result
    if code in BINARY:
        if args[0].type != args[1].type:
            fail(op, f"operand types differ: {args[0].type} and {args[1].type}")
        if res.type != args[0].type:
            fail(op, f"result type {res.type} differs from operand type {args[0].type}")
    elif code in COMPARE:
        if args[0].type != args[1].type:
            fail(op, f"operand types differ: {args[0].type} and {args[1].type}")
        if not res.type.dtype.is_bool or res.type.width != args[0].type.width:
            fail(op, "a comparison gives bool of the operands' width")
    elif code in UNARY:
        if res.type != args[0].type:
            fail(op, f"result type {res.type} differs from operand type {args[0].type}")
    elif code == "store_var":
        if args[0].type != args[1].type:
            fail(op, f"storing {args[1].type} into variable of type {args[0].type}")
    elif code == "store":
        buf, value = args[0], args[-1]
        if value.type != buf.type:
            fail(op, f"storing {value.type} into buffer of {buf.type}")
        if len(args) - 2 != buf.rank:
            fail(op, "index count differs from the buffer's rank")
    elif code == "load":
        if res.type != args[0].type:
            fail(op, "load type differs from the buffer's element type")
        if len(args) - 1 != args[0].rank:
            fail(op, "index count differs from the buffer's rank")
    elif code in ("if",):
        if not args[0].type.dtype.is_bool or args[0].type.width != 1:
            fail(op, "condition must be a scalar bool")

