"""Bounds checks once per run of loads instead of once per load (devices with ``checks_per_run``:
CUDA, HIP and OpenCL, where a branch per checked load keeps the compiler from scheduling the loads
together, and the CPU, where the checked gathers of RAJAPerf run twice as fast versioned).

`cube_checks` tests accesses whose indices are affine in unit positions once per cube; an index
read from memory (``i = zones[ii]`` then ``x[i + 1]``) has no interval there. Such accesses are
tested here, once per unit and run. A *run* is a stretch of one block between ops that write
memory, leave the block, hold blocks or exchange values between units (plane ops): every op of
a run runs, in order, for each unit that reaches it; a checked store may close it (the store of
the value the run computed, ``div[i] = ...``). When two or more checked accesses of a run have
indices that none of the run's checked loads feeds, their tests can be made before the run::

    the ops the tests and later code read (moved up: they run anyway), the tests
    if every test holds:  the run, those accesses unchecked
    else:                 the run as it was (each access checked: the same report, the same zero)

Each side computes its other indices where it loads them, so that they are not all live across
the checked side's branches. Values the run defines that later code uses leave both sides through
variables. First, a load of
a variable is replaced by the value stored to it earlier in the same block, so that an index read
through a variable (``i = zones[ii]``, then ``x[i - 1]``) is known before the run as well.
"""

from __future__ import annotations

from .linear import LinearForms
from .nodes import Block, Const, Kernel, Op, Value, Var, walk
from .opcodes import LINE_OPS, PLANE_OPS, PURE, SIDE_EFFECTS
from .passes import emitter, extent_value, unchecked_access
from .types import DTYPES_BY_NAME, INDEX, Type, bool_, i64

# ops that may be moved up within a run: they read no memory that the run could write (a run
# writes none) and have no effect
_MOVABLE = PURE | LINE_OPS | {"builtin", "param", "shape", "load_var", "load"}
_BOOL, _I32, _I64 = Type(bool_), Type(INDEX), Type(i64)
_INT32_MAX = (1 << 31) - 1


def check_per_run(kernel: Kernel) -> None:
    """Version every run of a checked kernel that has two or more testable checked loads."""
    _forward_stored_values(kernel)
    users: dict[int, list[Op]] = {}
    for op in walk(kernel.body):
        for a in _values(op.args):
            users.setdefault(a.id, []).append(op)
    extents = {(op.args[0].id, op.attrs["dim"]): op.result for op in kernel.body.ops if op.opcode == "shape"}
    entry: list[Op] = []
    forms = LinearForms({op.result.id: op for op in walk(kernel.body) if op.result is not None})
    _Versioner(kernel, users, extents, entry, forms).block(kernel.body)
    kernel.body.ops = entry + kernel.body.ops


def _values(args) -> list[Value]:
    return [a for a in args if isinstance(a, Value) and not isinstance(a, Const)]


def _checked_load(op: Op) -> bool:
    return op.opcode == "load" and _checked(op)


def _checked(op: Op) -> bool:
    """A load or store still checked on some axis."""
    return bool(op.attrs.get("checked")) and len(op.attrs.get("proven", ())) < op.args[0].rank


def _indices(op: Op) -> tuple:
    return op.args[1:1 + op.args[0].rank]


def _ends_run(op: Op) -> bool:
    return bool(op.blocks) or op.opcode in PLANE_OPS or (op.opcode in SIDE_EFFECTS and op.opcode != "store_var")


# --- stored values forwarded to later loads of the variable -------------------------------------

def _forward_stored_values(kernel: Kernel) -> None:
    replaced: dict[int, Value] = {}
    _forward_block(kernel.body, replaced)
    if replaced:
        for op in walk(kernel.body):
            op.args = tuple(replaced.get(a.id, a) if isinstance(a, Value) else a for a in op.args)


def _forward_block(block: Block, replaced: dict[int, Value]) -> None:
    known: dict[int, Value] = {}        # var id -> the value last stored to it in this block
    kept = []
    for op in block.ops:
        if op.blocks:
            for b in op.blocks:
                _forward_block(b, replaced)
            for inner in walk(Block([op])):      # what the op's blocks may store is unknown after it
                if inner.opcode == "store_var":
                    known.pop(inner.args[0].id, None)
                elif inner.opcode == "for":
                    known.pop(inner.attrs["var"].id, None)
        elif op.opcode == "store_var":
            value = op.args[1]
            known[op.args[0].id] = replaced.get(value.id, value) if isinstance(value, Value) else value
        elif op.opcode == "load_var" and op.args[0].id in known:
            replaced[op.result.id] = known[op.args[0].id]
            continue
        kept.append(op)
    block.ops = kept


# --- versioning -----------------------------------------------------------------------------

class _Versioner:
    def __init__(self, kernel: Kernel, users: dict[int, list[Op]], extents: dict, entry: list,
                 forms: LinearForms):
        self.kernel, self.users, self.extents, self.entry = kernel, users, extents, entry
        self.extent_ids = {v.id for v in extents.values()}
        self.forms = forms

    def block(self, block: Block) -> None:
        out: list[Op] = []
        run: list[Op] = []
        for op in block.ops:
            # a per-cube version's checked side runs only in cubes at an edge: not worth a copy
            for b in op.blocks[:1] if "cube_checks" in op.attrs else op.blocks:
                self.block(b)
            if op.opcode == "store" and _checked(op) and run:
                # a store that closes a run (DEL_DOT_VEC_2D's div[i] after its loads) is tested
                # with them where its index is known before the run
                out += self.run(run + [op])
                run = []
            elif _ends_run(op):
                out += self.run(run)
                run = []
                out.append(op)
            else:
                run.append(op)
        out += self.run(run)
        block.ops = out

    def run(self, ops: list[Op]) -> list[Op]:
        """The run ``ops`` (maybe closed by a checked store) as segments, each versioned where it
        can be: a segment ends before a checked access whose index one of the segment's checked
        loads feeds."""
        out, start = [], 0
        while start < len(ops):
            defined, movable, tested = set(), set(), []
            end = len(ops)
            for k in range(start, len(ops)):
                op = ops[k]
                read = _indices(op) if op.opcode == "store" else op.args
                known = all(a.id not in defined or a.id in movable for a in _values(read))
                if _checked_load(op) or (op.opcode == "store" and _checked(op)):
                    if known:
                        tested.append(op)
                    elif tested:
                        end = k
                        break
                elif known and op.opcode in _MOVABLE and op.result is not None:
                    movable.add(op.result.id)
                if op.result is not None:
                    defined.add(op.result.id)
            out += self.segment(ops[start:end], movable, tested)
            start = end
        return out

    def segment(self, ops: list[Op], movable: set[int], tested: list[Op]) -> list[Op]:
        if len(tested) < 2:
            return ops
        groups = self.groups(tested)
        inside = {id(op) for op in ops}
        producers = {op.result.id: op for op in ops if op.result is not None and op.result.id in movable}
        # What the tests read moves up, and what later code reads (so that it keeps its uniformity);
        # each side computes the other indices itself, where it loads: moved up, they would all be
        # live across the checked side's branches (2 registers each for i64), which took
        # MATVEC_3D_STENCIL's tuned checked build from 32 registers to 54 on sm_90
        read_after = [producers[v].result for v in producers
                      if any(id(user) not in inside for user in self.users.get(v, ()))]
        # an array's extent (``shape``) is looked up through `extents`, not through its users: the
        # tests of later runs read it, so it stays outside the sides (a copy there defines it only
        # in the side's scope)
        extents = [producers[v].result for v in producers if v in self.extent_ids]
        needed = _feeding([group.least for group in groups.values()] + read_after + extents, producers)
        moved = [op for op in ops if op.result is not None and op.result.id in needed]
        rest = [op for op in ops if not (op.result is not None and op.result.id in needed)]
        loc = tested[0].loc
        tests: list[Op] = []
        emit = emitter(tests, loc)
        every = None
        for group in groups.values():
            ok = group.test(emit)
            every = ok if every is None else emit("and", (every, ok), _BOOL)
        leaving = [op.result for op in rest if op.result is not None
                   and any(id(user) not in inside for user in self.users.get(op.result.id, ()))]
        carriers = [Var(f"{v.name or 'run'}_out", v.type) for v in leaving]
        self.kernel.vars.extend(carriers)
        tested_ids = {id(op) for op in tested}
        sides = []
        for unchecked in (True, False):
            mapping: dict[int, Value] = {}
            side: list[Op] = []
            for op in rest:
                copy = _copy(op, mapping)
                if unchecked and id(op) in tested_ids:
                    # "proven": the interpreter then treats an access out of bounds here as a bug
                    copy.attrs["proven"] = tuple(range(copy.args[0].rank))
                    side += unchecked_access(copy)
                else:
                    side.append(copy)
            side += [Op("store_var", (var, mapping[v.id]), None, {}, (), loc) for var, v in zip(carriers, leaving)]
            sides.append(Block(side))
        after = [Op("load_var", (var,), v, {}, (), loc) for var, v in zip(carriers, leaving)]
        return [*moved, *tests, Op("if", (every,), None, {"run_checks": len(tested)}, tuple(sides), loc), *after]

    def groups(self, tested: list[Op]) -> dict[tuple, _Group]:
        """The indices of ``tested`` by linear form without its constant (one group per array
        axis's neighbourhood: ``x[i - 1]``, ``y[i]``, ``x[i + 1]``)."""
        groups: dict[tuple, _Group] = {}
        for op in tested:
            buf, proven = op.args[0], op.attrs.get("proven", ())
            for dim, index in enumerate(op.args[1:1 + buf.rank]):
                if dim in proven:
                    continue
                terms, offset = self.forms.of(index)
                group = groups.setdefault((str(index.type), terms), _Group())
                group.add(index, offset, extent_value(buf, dim, self.extents, self.entry, op.loc))
        return groups


class _Group:
    """Indices ``t + c`` of one type with the same terms ``t``, and the extents they index. They
    all lie in bounds iff the least, ``t + c_min``, lies in ``[0, n - (c_max - c_min))``, with ``n``
    the least extent: one unsigned compare (a negative value wraps above any bound). Each index
    then equals ``t + c_min`` plus a small non-negative constant, without wrapping."""

    def __init__(self):
        self.least: Value | None = None
        self.low = self.high = 0
        self.extents: list = []

    def add(self, index: Value, offset: int, extent) -> None:
        if self.least is None:
            self.least, self.low, self.high = index, offset, offset
        elif offset < self.low:
            self.least, self.low = index, offset
        self.high = max(self.high, offset)
        if not any(e is extent or (isinstance(e, Const) and isinstance(extent, Const) and e.value == extent.value)
                   for e in self.extents):
            self.extents.append(extent)

    def test(self, emit) -> Value:
        spread = self.high - self.low
        if spread > _INT32_MAX:              # no two of them fit in one array
            return Const(False, _BOOL)
        itype = self.least.type
        unsigned = itype if not itype.dtype.is_signed else Type(DTYPES_BY_NAME[f"u{itype.dtype.bits}"])
        consts = [e.value for e in self.extents if isinstance(e, Const)]
        n = Const(min(consts), _I32) if consts else None
        for e in self.extents:
            if not isinstance(e, Const):
                n = e if n is None else emit("min", (n, e), _I32)
        if isinstance(n, Const):
            bound = Const(max(n.value - spread, 0), unsigned)
        elif spread == 0:
            bound = emit("cast", (n,), unsigned)
        else:
            less = emit("sub", (emit("cast", (n,), _I64), Const(spread, _I64)), _I64)
            bound = emit("cast", (emit("max", (less, Const(0, _I64)), _I64),), unsigned)
        value = self.least if itype == unsigned else emit("cast", (self.least,), unsigned)
        return emit("lt", (value, bound), _BOOL)


def _feeding(values: list[Value], producers: dict[int, Op]) -> set[int]:
    """The results of ``producers`` that ``values`` are computed from (themselves included)."""
    found: set[int] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        op = producers.get(value.id)
        if op is not None and value.id not in found:
            found.add(value.id)
            stack.extend(_values(op.args))
    return found


def _copy(op: Op, mapping: dict[int, Value]) -> Op:
    args = tuple(mapping.get(a.id, a) if isinstance(a, Value) else a for a in op.args)
    result = None
    if op.result is not None:
        result = mapping[op.result.id] = Value(op.result.type, op.result.name)
    return Op(op.opcode, args, result, dict(op.attrs), (), op.loc)
