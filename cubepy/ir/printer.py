"""A readable text form of the IR (what ``kernel.ir(*args)`` shows)."""

from __future__ import annotations

from .nodes import Block, Buffer, Kernel, Op, ScalarParam


def _operand(x) -> str:
    return repr(x)


def _attrs(op: Op) -> str:
    shown = {k: v for k, v in op.attrs.items() if not (k == "checked" and v is False)}
    return (" {" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + "}") if shown else ""


def _print_block(block: Block, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    for op in block.ops:
        lhs = f"{op.result!r}: {op.result.type} = " if op.result is not None else ""
        args = ", ".join(_operand(a) for a in op.args)
        line = f"{pad}{lhs}{op.opcode}({args}){_attrs(op)}"
        if op.loc is not None:
            line = f"{line:<72}  # line {op.loc.line}"
        out.append(line)
        names = {"if": ("then", "else"), "for": ("body",), "loop": ("body",)}.get(op.opcode, ())
        for name, b in zip(names, op.blocks):
            if name == "else" and not b.ops:
                continue
            out.append(f"{pad}  {name}:")
            _print_block(b, indent + 2, out)


def print_kernel(kernel: Kernel) -> str:
    """The whole kernel as text."""
    params = []
    for p in kernel.params:
        if isinstance(p, Buffer):
            mut = "mut " if p.mutable else ""
            by_value = f" by value[{p.inline}]" if p.inline else ""
            params.append(f"{p!r}: {mut}array{p.ndim}d<{p.type}>{by_value}")
        elif isinstance(p, ScalarParam):
            params.append(f"{p.name}: {p.type}")
    out = [f"kernel {kernel.name}({', '.join(params)})"
           f"  cube_dim={format_dims(kernel.cube_dim)} plane_dim={kernel.plane_dim} checked={kernel.checked}"]
    for b in kernel.buffers:
        out.append(f"  {b.kind} {b!r}: {b.type}{list(b.shape)}")
    for v in kernel.vars:
        out.append(f"  var {v!r}: {v.type}")
    _print_block(kernel.body, 1, out)
    test = kernel.launch_test
    if test is not None:          # evaluated on the host before each launch; launch_in_bounds reads it
        out.append("  launch test (on the host):")
        _print_block(Block(list(test.ops)), 2, out)
        out.append(f"    answer {test.ok!r}")
    return "\n".join(out)


def format_dims(dims: tuple) -> str:
    """A CubeDim as text, an extent read at run time as ``runtime``: ``(runtime, 1, 1)``."""
    return "(" + ", ".join("runtime" if d is None else str(d) for d in dims) + ")"
