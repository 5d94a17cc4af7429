"""IR-to-IR passes run on every kernel before a backend sees it."""

from __future__ import annotations

from .nodes import Block, Const, Kernel, Op, Value, Var, walk
from .opcodes import SIDE_EFFECTS
from .types import INDEX, Type, bool_

_BOOL, _I32 = Type(bool_), Type(INDEX)

_CHECKED = ("load", "store", "atomic")


def lower_bounds_checks(kernel: Kernel) -> None:
    """Guard every checked access: ``if indices in range: access else: report_oob``.

    An index wider than i32 (an i64, u32 or u64 value) is compared at its own width and narrowed
    to i32 inside the guard, so the check and the report see the true index and no backend
    indexes with anything but i32. After this pass no op carries ``checked=True``; backends only
    implement ``report_oob``. An out-of-bounds access therefore never touches memory, on every
    backend alike.
    """
    extents: dict[tuple[int, int], Value] = {}
    for op in kernel.body.ops:
        if op.opcode == "shape":
            extents.setdefault((op.args[0].id, op.attrs["dim"]), op.result)
    entry: list[Op] = []
    _lower_block(kernel, kernel.body, extents, entry)
    kernel.body.ops = entry + kernel.body.ops


def _lower_block(kernel: Kernel, block: Block, extents: dict, entry: list) -> None:
    new_ops: list[Op] = []
    for op in block.ops:
        for b in op.blocks:
            _lower_block(kernel, b, extents, entry)
        if not (op.opcode in _CHECKED and op.attrs.get("checked")):
            new_ops.append(op)
        elif len(op.attrs.get("proven", ())) == op.args[0].rank:
            new_ops.extend(unchecked_access(op))
        else:
            new_ops.extend(_guard(kernel, op, extents, entry))
    block.ops = new_ops


def unchecked_access(op: Op) -> list[Op]:
    """``op`` without its check, for an access known in bounds: the wide indices narrowed (they
    fit), then the access."""
    out, args = [], list(op.args)
    for k in range(1, 1 + op.args[0].rank):
        if args[k].type != Type(INDEX):
            narrowed = Value(Type(INDEX))
            out.append(Op("cast", (args[k],), narrowed, {}, (), op.loc))
            args[k] = narrowed
    out.append(Op(op.opcode, tuple(args), op.result, {**op.attrs, "checked": False}, (), op.loc))
    return out


def extent_value(buf, dim: int, extents: dict, entry: list, loc) -> Value:
    """The extent of ``buf`` along ``dim``: a constant for a static shape, else the value of a
    ``shape`` op (one per array axis, kept in ``extents``, made in ``entry`` at the kernel's top)."""
    if buf.shape is not None:
        return Const(buf.shape[dim], Type(INDEX))
    key = (buf.id, dim)
    if key not in extents:
        result = Value(Type(INDEX))
        entry.append(Op("shape", (buf,), result, {"dim": dim}, (), loc))
        extents[key] = result
    return extents[key]


def _in_bounds(op: Op, known_extents: dict, entry: list, emit, narrowed_ops: list):
    """The test that ``op``'s indices lie in bounds (None if every one is proven), its extents, and
    its indices narrowed to i32 (the casts appended to ``narrowed_ops``)."""
    buf = op.args[0]
    ndim = buf.rank
    extents, narrow, ok = [], [], None
    proven, nonneg, nonempty = op.attrs.get("proven", ()), op.attrs.get("nonneg", ()), op.attrs.get("nonempty", ())
    for dim, index in enumerate(op.args[1:1 + ndim]):
        extent = extent_value(buf, dim, known_extents, entry, op.loc)
        extents.append(extent)
        itype = index.type
        if itype == _I32:
            narrow.append(index)
        else:   # a wide index: compare at its width, narrow to i32 only once it is in bounds
            narrowed = Value(_I32)
            narrowed_ops.append(Op("cast", (index,), narrowed, {}, (), op.loc))
            narrow.append(narrowed)
        if dim in proven:
            continue
        if dim in nonempty:       # an index in [0, extent) whenever the extent is not 0
            inside = emit("lt", (Const(0, _I32), extent), _BOOL)
            ok = inside if ok is None else emit("and", (ok, inside), _BOOL)
            continue
        bound = Const(extent.value, itype) if isinstance(extent, Const) else (
            extent if itype == _I32 else emit("cast", (extent,), itype))
        inside = emit("lt", (index, bound), _BOOL)
        if itype.dtype.is_signed and dim not in nonneg:
            inside = emit("and", (emit("ge", (index, Const(0, itype)), _BOOL), inside), _BOOL)
        ok = inside if ok is None else emit("and", (ok, inside), _BOOL)
    return ok, extents, narrow


def emitter(out: list, loc):
    """``emit(opcode, args, type, **attrs)``: append an op to ``out`` and return its result."""
    def emit(opcode, args=(), type_=None, **attrs):
        result = Value(type_) if type_ is not None else None
        out.append(Op(opcode, tuple(args), result, attrs, (), loc))
        return result
    return emit


def _report(op: Op, extents: list) -> Op:
    ndim = len(extents)
    return Op("report_oob", (*op.args[1:1 + ndim], *extents), None, {"array": op.attrs.get("array", op.args[0].name)},
              (), op.loc)


def _guard(kernel: Kernel, op: Op, known_extents: dict, entry: list) -> list[Op]:
    buf = op.args[0]
    ndim = buf.rank
    out: list[Op] = []
    then_ops: list[Op] = []
    ok, extents, narrow = _in_bounds(op, known_extents, entry, emitter(out, op.loc), then_ops)
    args = (buf, *narrow, *op.args[1 + ndim:])
    unchecked = Op(op.opcode, args, None, {**op.attrs, "checked": False}, (), op.loc)
    report = _report(op, extents)
    then_block, else_block = Block([*then_ops, unchecked]), Block([report])
    if op.result is not None:
        tmp = Var(f"{buf.name}_elem", op.result.type)
        kernel.vars.append(tmp)
        unchecked.result = Value(op.result.type)
        then_block.ops.append(Op("store_var", (tmp, unchecked.result), None, {}, (), op.loc))
        zero = Const(0 if not op.result.type.dtype.is_float else 0.0, Type(op.result.type.dtype))
        if op.result.type.width > 1:
            zero_line = Value(op.result.type)
            else_block.ops.append(Op("broadcast", (zero,), zero_line, {}, (), op.loc))
            zero = zero_line
        if op.result.type.dtype.is_bool:
            zero = Const(False, op.result.type) if op.result.type.width == 1 else zero
        else_block.ops.append(Op("store_var", (tmp, zero), None, {}, (), op.loc))
    out.append(Op("if", (ok,), None, {}, (then_block, else_block), op.loc))
    if op.result is not None:
        out.append(Op("load_var", (tmp,), op.result, {}, (), op.loc))
    return out


def eliminate_dead_code(kernel: Kernel) -> None:
    """Remove ops without side effects whose results nothing uses, until none is left: one pass
    from the end, since every use of a value comes after its definition."""
    uses: dict[int, int] = {}
    for op in walk(kernel.body):
        for a in op.args:
            if isinstance(a, Value):
                uses[a.id] = uses.get(a.id, 0) + 1
    _sweep(kernel.body, uses)
    loaded = {op.args[0].id for op in walk(kernel.body) if op.opcode == "load_var"}
    _drop_dead_stores(kernel.body, loaded)
    referenced = {op.args[0].id for op in walk(kernel.body) if op.opcode in ("load_var", "store_var")}
    referenced |= {op.attrs["var"].id for op in walk(kernel.body) if op.opcode == "for"}
    kernel.vars = [v for v in kernel.vars if v.id in referenced]


def _sweep(block: Block, uses: dict[int, int]) -> None:
    kept = []
    for op in reversed(block.ops):
        for b in reversed(op.blocks):
            _sweep(b, uses)
        if op.opcode not in SIDE_EFFECTS and op.result is not None and not uses.get(op.result.id):
            for a in op.args:
                if isinstance(a, Value):
                    uses[a.id] -= 1
            continue
        kept.append(op)
    block.ops = kept[::-1]


def _drop_dead_stores(block: Block, loaded: set[int]) -> None:
    block.ops = [op for op in block.ops if not (op.opcode == "store_var" and op.args[0].id not in loaded)]
    for op in block.ops:
        for b in op.blocks:
            _drop_dead_stores(b, loaded)
