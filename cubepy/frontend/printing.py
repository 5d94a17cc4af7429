"""``print(...)`` and f-strings in kernels: a print site and the stores that record one line.

The layout of what units write, and why kernels record lines instead of calling a device
printf, is in `cubepy.ir.prints`; the host side is `cubepy.runtime.printing`.
"""

from __future__ import annotations

import ast

from ..errors import CubeTypeError, CubeValueError
from ..ir.nodes import Block, Buffer, Const
from ..ir.prints import CONVERSIONS, HEADER, NAMES, PrintSite, PrintValue
from ..ir.types import INDEX, Type, f64, i64
from .folding import I32
from .operators import is_traced
from .values import ArrayRef, FormatString, RegionRef

_I32, _I64, _F64 = Type(INDEX), Type(i64), Type(f64)


def format_string(ctx, node: ast.JoinedStr):
    """The value of an f-string: a ``str`` when every value is known at compile time, else a
    `FormatString` for ``print``."""
    pieces: list = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            pieces.append(part.value)
            continue
        value = ctx.expr(part.value)
        conversion = chr(part.conversion) if part.conversion != -1 else None
        spec = _static_spec(ctx, part.format_spec)
        if is_traced(value):
            _check_spec(ctx, value, conversion, spec)
            pieces.append((value, conversion, spec))
        else:
            pieces.append(_format_static(ctx, value, conversion, spec))
    if all(isinstance(p, str) for p in pieces):
        return "".join(pieces)
    return FormatString(tuple(pieces))


def _static_spec(ctx, spec: ast.JoinedStr | None) -> str:
    if spec is None:
        return ""
    out = []
    for part in spec.values:
        if isinstance(part, ast.Constant):
            out.append(part.value)
            continue
        value = ctx.expr(part.value)
        if is_traced(value):
            ctx.error(CubeTypeError, "a format spec in a kernel's f-string must be known at compile time "
                      "(e.g. {x:.3f} or {x:{width}} with width a Comptime parameter), not a runtime value")
        out.append(_format_static(ctx, value, chr(part.conversion) if part.conversion != -1 else None,
                                  _static_spec(ctx, part.format_spec)))
    return "".join(out)


def _format_static(ctx, value, conversion, spec: str) -> str:
    if isinstance(value, (ArrayRef, RegionRef)):
        name = value.name if isinstance(value, ArrayRef) else value.param
        ctx.error(CubeTypeError, f"cannot format the array '{name}' in a kernel; print its elements, "
                  "e.g. print(x[i])")
    if isinstance(value, I32):
        value = int(value)
    if conversion is not None:
        value = CONVERSIONS[conversion](value)
    try:
        return format(value, spec)
    except (TypeError, ValueError) as e:
        ctx.error(CubeValueError, f"format spec {spec!r} does not apply to {value!r}: {e}")


def _sample(dtype):
    """A Python value of the kind the host formats for ``dtype``."""
    return 0.0 if dtype.is_float else (False if dtype.is_bool else 0)


def _check_spec(ctx, value, conversion, spec: str) -> None:
    """Refuse a spec the host could not apply: to each lane, or to the converted text (a Line's
    converted text is its list's)."""
    sample = _sample(value.type.dtype)
    if conversion is not None:
        sample = CONVERSIONS[conversion]([sample] * value.type.width if value.type.width > 1 else sample)
    try:
        format(sample, spec)
    except (TypeError, ValueError) as e:
        ctx.error(CubeValueError, f"format spec {spec!r} does not apply to a value of type {value.type}: {e}")


def trace_print(ctx, args: list, kwargs: dict) -> None:
    """``print(*args, sep=" ", end="\\n")`` in a kernel: one print site and the stores of one line."""
    sep, end = " ", "\n"
    for key, value in kwargs.items():
        if key in ("sep", "end"):
            if value is not None and not isinstance(value, str):
                ctx.error(CubeTypeError, f"print's {key}= must be a string known at compile time, got "
                          f"{type(value).__name__}")
            if value is not None:
                sep, end = (value, end) if key == "sep" else (sep, value)
        elif key == "flush":
            pass                   # lines are written when the launch ends
        elif key == "file":
            ctx.error(CubeTypeError, "print(..., file=...) in a kernel: kernel prints go to sys.stdout; "
                      "redirect it on the host (contextlib.redirect_stdout)")
        else:
            ctx.error(CubeTypeError, f"print() got an unexpected keyword argument '{key}'")
    pieces: list = []
    values: list = []
    for k, arg in enumerate(args):
        if k:
            pieces.append(sep)
        if isinstance(arg, FormatString):
            for piece in arg.pieces:
                if isinstance(piece, str):
                    pieces.append(piece)
                else:
                    pieces.append(_slot(ctx, *piece, values))
        elif is_traced(arg):
            pieces.append(_slot(ctx, arg, None, "", values))
        else:
            pieces.append(_format_static(ctx, arg, None, ""))
    pieces.append(end)
    if not ctx.spec.prints:
        return
    site = PrintSite(_merge_text(pieces), ctx.builder.loc)
    ctx.kernel.prints.append(site)
    _record_line(ctx, len(ctx.kernel.prints) - 1, site, values)


def _slot(ctx, value, conversion, spec: str, values: list) -> PrintValue:
    values.append(value)
    return PrintValue(value.type.dtype.name, value.type.width, conversion, spec, value.type.dtype.is_float)


def _merge_text(pieces: list) -> tuple:
    out: list = []
    for p in pieces:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        elif not (isinstance(p, str) and not p):
            out.append(p)
    return tuple(out)


def _hidden_buffer(ctx, role: str, type_: Type) -> Buffer:
    """The launch's hidden print buffer ``role`` (made at the first print that needs it)."""
    name = NAMES[role]
    for p in ctx.kernel.params:
        if isinstance(p, Buffer) and p.name == name:
            return p
    buf = Buffer(name, "global", type_, 1, True, None, len(ctx.kernel.params))
    ctx.kernel.params.append(buf)
    return buf


def _record_line(ctx, site_id: int, site: PrintSite, values: list) -> None:
    """Reserve a line if the cap allows, then store its header and values (unchecked: the
    reservation is in bounds by construction, and compared with the buffer's length anyway)."""
    from .intrinsics import builtin_value

    b, ops = ctx.builder, ctx.ops
    counts = _hidden_buffer(ctx, "counts", _I32)
    words = _hidden_buffer(ctx, "words", _I64)
    floats = _hidden_buffer(ctx, "floats", _F64) if any(v.type.dtype.is_float for v in values) else None
    line = b.op("atomic", (counts, Const(1, _I32), Const(1, _I32)), _I32, op="add", checked=False, array=counts.name)
    cap = b.op("load", (counts, Const(2, _I32)), _I32, checked=False, array=counts.name)
    kept = ops.binary("and", ops.compare("ge", line, 0), ops.compare("lt", line, cap))
    then_block, else_block = Block(), Block()
    b.op("if", (kept,), blocks=(then_block, else_block))
    with b.at(then_block):
        size = site.words
        base = b.op("atomic", (counts, Const(0, _I32), Const(size, _I32)), _I32, op="add", checked=False,
                    array=counts.name)
        length = b.op("shape", (words,), _I32, dim=0)
        fits = ops.binary("and", ops.compare("ge", base, 0), ops.compare("le", base, ops.binary("sub", length, size)))
        store_block, skip_block = Block(), Block()
        b.op("if", (fits,), blocks=(store_block, skip_block))
        with b.at(store_block):
            header = [Const(site_id, _I32), *(builtin_value(ctx, f"cube_pos_{a}", True) for a in "xyz"),
                      builtin_value(ctx, "unit_pos")]
            for k, v in enumerate(header):
                _store(ctx, words, base, k, ops.cast(v, i64))
            k = HEADER
            for v in values:
                lanes = [v] if v.type.width == 1 else [
                    b.op("extract", (v,), Type(v.type.dtype), index=j) for j in range(v.type.width)]
                for lane in lanes:
                    if lane.type.dtype.is_float:
                        _store(ctx, floats, base, k, ops.cast(lane, f64))
                    else:
                        _store(ctx, words, base, k, ops.cast(lane, i64))
                    k += 1


def _store(ctx, buf: Buffer, base, offset: int, value) -> None:
    at = ctx.ops.binary("add", base, offset) if offset else base
    if isinstance(value, Const) or not is_traced(value):
        value = ctx.ops.lift(value, buf.type)
    ctx.builder.op("store", (buf, at, value), checked=False, array=buf.name)
