"""What each `cubepy` intrinsic and topology builtin becomes in the IR.

Each handler takes the tracing context and the call's evaluated arguments. The table
`HANDLERS` is keyed by `Intrinsic.name`.
"""

from __future__ import annotations

from ..errors import CubeTypeError, CubeValueError
from ..ir.nodes import Buffer, Const
from ..ir.types import INDEX, DType, Type, bool_, u64
from .folding import I32
from .operators import is_number
from .values import ArrayRef, RangeSpec, Unroll

_I32 = Type(INDEX)


# --- topology builtins ---------------------------------------------------------------------
def builtin_value(ctx, name: str, implicit: bool = False):
    """The value of a topology builtin, always of type i32. CubeDim and PlaneDim are part of the
    specialization: compile-time `I32` values, except a cube extent the spec leaves to run time
    (None in a shape-generic spec: `cubepy.runtime.shapes`), which is read with a ``builtin`` op
    and marked as computed from the extents (`Tracer.dim_value`). A unit position on an axis of
    extent 1 (and the lane at plane size 1) is the constant 0 of type i32, never a weakly typed
    Python 0, so an expression has one type whatever the launch shape.

    ``implicit``: read for a linear position or count (``ABSOLUTE_POS``, ``CUBE_POS``,
    ``CUBE_COUNT``) or a print's header, not by code that names the axis. A cube position or count
    along y or z read so is marked ``implicit=True``: a backend that builds per launch shape
    builds first for one cube along such an axis (docs/design.md, "Builds per launch shape")."""
    ops = ctx.ops
    dims = ctx.spec.cube_dim
    if name in ("cube_dim_x", "cube_dim_y", "cube_dim_z"):
        return _extent(ctx, name[-1])
    if name == "cube_dim":
        if None not in dims:
            return I32(dims[0] * dims[1] * dims[2])
        return ctx.entry_cached(name, lambda: ops.binary("mul", _extent(ctx, "x"), ops.binary(
            "mul", _extent(ctx, "y"), _extent(ctx, "z"))))
    if name == "plane_dim":
        return I32(ctx.spec.plane_dim)
    if name == "unit_pos_plane" and ctx.spec.plane_dim == 1:
        return Const(0, _I32)
    if name in ("unit_pos_x", "unit_pos_y", "unit_pos_z"):
        if dims["xyz".index(name[-1])] == 1:
            return Const(0, _I32)
        return ctx.entry_builtin(name)
    if name in ("cube_pos_x", "cube_pos_y", "cube_pos_z", "cube_count_x", "cube_count_y",
                "cube_count_z", "unit_pos_plane"):
        return ctx.entry_builtin(name, implicit=implicit and name[-1] in "yz")
    if name in ("absolute_pos_x", "absolute_pos_y", "absolute_pos_z"):
        axis = name[-1]

        def compute():
            return ops.binary("add", ops.binary("mul", builtin_value(ctx, f"cube_pos_{axis}", implicit),
                                                _extent(ctx, axis)),
                              builtin_value(ctx, f"unit_pos_{axis}"))
        return ctx.entry_cached(f"{name}:implicit" if implicit and axis in "yz" else name, compute)
    if name in ("absolute_pos", "unit_pos", "cube_pos"):
        def axis_extent(axis):
            if name == "absolute_pos":
                return ops.binary("mul", builtin_value(ctx, f"cube_count_{axis}", True), _extent(ctx, axis))
            return _extent(ctx, axis) if name == "unit_pos" else builtin_value(ctx, f"cube_count_{axis}", True)

        def compute_linear():
            x, y, z = (builtin_value(ctx, f"{name}_{a}", True) for a in "xyz")
            return ops.binary("add", x, ops.binary("mul", axis_extent("x"), ops.binary(
                "add", y, ops.binary("mul", axis_extent("y"), z))))
        return ctx.entry_cached(name, compute_linear)
    if name == "cube_count":
        return ctx.entry_cached(name, lambda: ops.binary("mul", builtin_value(ctx, "cube_count_x"), ops.binary(
            "mul", builtin_value(ctx, "cube_count_y", True), builtin_value(ctx, "cube_count_z", True))))
    raise AssertionError(name)


def _extent(ctx, axis: str):
    """The cube's extent along ``axis``: an `I32`, or a run-time value in a shape-generic spec."""
    d = ctx.spec.cube_dim["xyz".index(axis)]
    return I32(d) if d is not None else ctx.dim_value(ctx.entry_builtin(f"cube_dim_{axis}"))


# --- memory --------------------------------------------------------------------------------
def _static_shape(ctx, what, size):
    shape = size if isinstance(size, tuple) else (size,)
    if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        ctx.error(CubeValueError, f"{what} size must be a positive int known at compile time "
                  f"(a literal, a Comptime parameter or CUBE_DIM), got {size!r}")
    return tuple(int(s) for s in shape)     # plain ints: CUBE_DIM's typed I32 prints as "8:i32"


def _memory(kind):
    def handler(ctx, args, kwargs):
        what = "SharedMemory" if kind == "shared" else "LocalArray"
        if len(args) != 2 or not isinstance(args[0], DType):
            ctx.error(CubeTypeError, f"{what} takes (dtype, size), e.g. cb.{what}(cb.f32, 256)")
        dtype, size = args
        shape = _static_shape(ctx, what, size)
        width = kwargs.get("line", 1)
        name = ctx.pending_name or f"{kind}{len(ctx.kernel.buffers)}"
        buf = ctx.builder.new_buffer(Buffer(name, kind, Type(dtype, width), len(shape), True, shape))
        return ArrayRef(buf, shape)
    return handler


def _sync_cube(ctx, args, kwargs):
    ctx.builder.op("sync_cube")


def _unroll(ctx, args, kwargs):
    r = args[0] if args else None
    if not isinstance(r, RangeSpec) or not all(is_number(v) for v in (r.start, r.stop, r.step)):
        ctx.error(CubeValueError, "cb.unroll takes a range whose bounds are known at compile time "
                  "(literals, Comptime parameters, CUBE_DIM or PLANE_DIM)")
    return Unroll(r)


# --- math ----------------------------------------------------------------------------------
def _unary(name):
    def handler(ctx, args, kwargs):
        _arity(ctx, name, args, 1)
        return ctx.ops.unary(name, args[0])
    return handler


def _minmax(name):
    def handler(ctx, args, kwargs):
        if len(args) < 2:
            ctx.error(CubeTypeError, f"{name}() inside kernels takes two or more values")
        result = args[0]
        for a in args[1:]:
            result = ctx.ops.minmax(name, result, a)
        return result
    return handler


def _pow(ctx, args, kwargs):
    _arity(ctx, "pow", args, 2)
    return ctx.ops.binary("pow", *args)


def _fma(ctx, args, kwargs):
    _arity(ctx, "fma", args, 3)
    a, b, c = args
    if all(is_number(v) for v in args):
        return a * b + c
    ops = ctx.ops
    a, b = ops.common(a, b)
    a, c = ops.common(a, c)
    a, b = ops.common(a, b)
    if not a.type.dtype.is_float:
        return ops.binary("add", ops.binary("mul", a, b), c)
    return ctx.builder.op("fma", (a, b, c), a.type)


def _select(ctx, args, kwargs):
    _arity(ctx, "select", args, 3)
    return ctx.ops.select(*args)


def _clamp(ctx, args, kwargs):
    _arity(ctx, "clamp", args, 3)
    x, lo, hi = args
    return ctx.ops.minmax("min", ctx.ops.minmax("max", x, lo), hi)


def _cast(ctx, args, kwargs):
    _arity(ctx, "cast", args, 2)
    if not isinstance(args[1], DType):
        ctx.error(CubeTypeError, f"cast(value, dtype) needs a cubepy dtype, got {args[1]!r}")
    return ctx.ops.cast(args[0], args[1])


# --- atomics -------------------------------------------------------------------------------
def _atomic(op):
    def handler(ctx, args, kwargs):
        n = 4 if op == "cas" else 3
        name = f"atomic_{op}"
        _arity(ctx, name, args, n)
        array, index = args[0], args[1]
        if not isinstance(array, ArrayRef):
            ctx.error(CubeTypeError, f"{name} needs an array (a Mut[Array] parameter or SharedMemory) as "
                      f"its first argument, got {type(array).__name__}")
        ctx.require_mutable(array, name)
        indices = ctx.index_values(array, index)
        dtype = array.buffer.type.dtype
        if array.buffer.type.width != 1:
            ctx.error(CubeTypeError, f"{name} works on scalar elements, not Lines")
        if op in ("and", "or", "xor") and dtype.is_float:
            ctx.error(CubeTypeError, f"{name} needs an integer array, '{array.name}' holds {dtype}")
        values = [ctx.ops.coerce(v, Type(dtype), f"the {name} value") for v in args[2:]]
        return ctx.builder.op("atomic", (array.buffer, *indices, *values), Type(dtype), op=op,
                              checked=ctx.spec.checked, array=array.name)
    return handler


# --- plane ops -----------------------------------------------------------------------------
_COUNTING = ("plane_sum", "plane_inclusive_sum", "plane_exclusive_sum")

def _plane_value(name):
    def handler(ctx, args, kwargs):
        _arity(ctx, name, args, 1)
        v = ctx.ops.lift(args[0])
        if v.type.dtype.is_bool and name in _COUNTING:   # summing bools counts them
            v = ctx.ops.cast(v, INDEX)
        return ctx.builder.op(name, (v,), v.type)
    return handler


def _plane_bool(name, result_dtype):
    def handler(ctx, args, kwargs):
        _arity(ctx, name, args, 1)
        v = ctx.ops.lift(ctx.ops.truth(args[0]))
        if v.type.width != 1:
            ctx.error(CubeTypeError, f"{name} takes a scalar condition, got {v.type}")
        return ctx.builder.op(name, (v,), Type(result_dtype))
    return handler


def _plane_lane(name):
    def handler(ctx, args, kwargs):
        _arity(ctx, name, args, 2)
        v = ctx.ops.lift(args[0])
        lane = ctx.ops.cast(args[1], INDEX)
        return ctx.builder.op(name, (v, lane), v.type)
    return handler


def _plane_elect(ctx, args, kwargs):
    _arity(ctx, "plane_elect", args, 0)
    return ctx.builder.op("plane_elect", (), Type(bool_))


def _arity(ctx, name, args, n):
    if len(args) != n:
        ctx.error(CubeTypeError, f"{name}() takes {n} argument{'s' if n != 1 else ''}, got {len(args)}")


HANDLERS = {
    "SharedMemory": _memory("shared"), "LocalArray": _memory("local"), "sync_cube": _sync_cube,
    "unroll": _unroll, "select": _select, "clamp": _clamp, "fma": _fma, "cast": _cast,
    "min": _minmax("min"), "max": _minmax("max"), "pow": _pow,
    **{n: _unary(n) for n in ("sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "erf", "abs", "floor", "ceil")},
    **{f"atomic_{op}": _atomic(op) for op in ("add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas")},
    **{n: _plane_value(n) for n in ("plane_sum", "plane_prod", "plane_min", "plane_max",
                                    "plane_inclusive_sum", "plane_exclusive_sum")},
    "plane_all": _plane_bool("plane_all", bool_), "plane_any": _plane_bool("plane_any", bool_),
    "plane_ballot": _plane_bool("plane_ballot", u64),
    **{n: _plane_lane(n) for n in ("plane_broadcast", "plane_shuffle", "plane_shuffle_xor",
                                   "plane_shuffle_up", "plane_shuffle_down")},
    "plane_elect": _plane_elect,
}

__all__ = ["HANDLERS", "builtin_value"]
