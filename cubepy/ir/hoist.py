"""Barriers out of conditionals: for targets where every unit of a cube must reach every barrier.

An ``if`` whose sides hold barriers (``sync_cube``, and plane ops a target emulates with cube-wide
barriers) becomes a sequence at its own level: the work between barriers runs under
``if (cond)`` (``if (not cond)`` for the else side), and each barrier runs for every unit. Values
that cross from one piece to a later one go through variables. For a cube-uniform condition this
is the same program (the barriers are reached by all units or by none, and an extra barrier
orders nothing new); for a plane-uniform one (``if UNIT_POS // PLANE_DIM == 0: plane_sum(...)``)
it is what makes an emulated plane op legal: each plane computes the op and only the planes that
took the branch use its result. PoCL miscompiles a barrier inside a conditional followed by a
per-unit guard (every unit passed the guard), and the hoisted form is what it handles.

A loop holding a barrier comes out of an ``if`` when the condition is cube-uniform, made to run
no iteration where it is false; under a plane-uniform condition it stays (planes would run
different numbers of barriers), and `check_barriers` reports any barrier that some units of a
cube can miss, as a DivergenceError naming the line.
"""

from __future__ import annotations

from .nodes import Block, Const, Kernel, Op, Value, Var, walk
from .types import Type, bool_


def hoist_barriers(kernel: Kernel, is_barrier, continues: bool = False, once: bool = False) -> Kernel:
    """Rewrite ``kernel`` in place (``is_barrier(op)`` says which ops are barriers); returns it.

    Early returns become a flag first (`flag_returns`) when the kernel has barriers: a unit that
    returned must still reach the barriers after its return (which only a cube-uniform return
    may precede), and PoCL also miscompiled a barrier after a uniform early return. With
    ``once`` (PoCL), a loop holding a barrier whose body never reaches its end becomes the
    ``if`` it is (`unloop_once`); with ``continues`` (PoCL), a ``continue`` that a barrier of the
    same iteration may follow becomes a flag (`flag_continues`), and so does a ``break`` after
    the body's last barrier, the loop left at the top of the next iteration
    (`flag_late_breaks`)."""
    if any(op.opcode == "return" for op in walk(kernel.body)) and any(is_barrier(op) for op in walk(kernel.body)):
        flag_returns(kernel, _returns_before_barriers(kernel, is_barrier))
    if once:
        unloop_once(kernel, is_barrier)
    if continues:
        flag_continues(kernel, is_barrier)
        flag_late_breaks(kernel, is_barrier)
    from .uniformity import analyze_uniformity

    hoister = _Hoister(kernel, is_barrier, analyze_uniformity(kernel))
    kernel.body.ops = hoister.block(kernel.body.ops)
    if hoister.made:
        kernel.body.ops = hoister.initial + kernel.body.ops
    return kernel


def _returns_before_barriers(kernel: Kernel, is_barrier) -> set[int]:
    """The ``return`` ops a barrier may follow: one later in the program, or in the same loop."""
    order = list(walk(kernel.body))
    last = max((k for k, op in enumerate(order) if is_barrier(op)), default=-1)
    found = {id(op) for k, op in enumerate(order) if op.opcode == "return" and k < last}

    def in_loops(block: Block, barrier_loop: bool) -> None:
        for op in block.ops:
            if op.opcode == "return" and barrier_loop:
                found.add(id(op))
            inner = barrier_loop or (op.opcode in ("for", "loop") and any(is_barrier(o) for o in walk(op.blocks[0])))
            for b in op.blocks:
                in_loops(b, inner)
    in_loops(kernel.body, False)
    return found


def flag_returns(kernel: Kernel, which: set[int] | None = None) -> None:
    """Replace each ``return`` (of ``which``, op ids; default all) by setting a per-unit flag: a
    unit that set it leaves the loops it is in (``break``) and skips the rest of each enclosing
    block (``if not returned``)."""
    flag = Var("cb_returned", Type(bool_))
    kernel.vars.append(flag)

    def read(loc):
        v = Value(Type(bool_))
        return v, Op("load_var", (flag,), v, {}, (), loc)

    def block(ops: list[Op], in_loop: bool) -> tuple[list[Op], bool]:
        out: list[Op] = []
        for i, op in enumerate(ops):
            if op.opcode == "return" and (which is None or id(op) in which):
                out.append(Op("store_var", (flag, Const(True, Type(bool_))), None, {}, (), op.loc))
                if in_loop:
                    out.append(Op("break", (), None, {}, (), op.loc))
                return out, True                  # what follows a return is never reached
            returns = False
            for b in op.blocks:
                b.ops, r = block(b.ops, in_loop or op.opcode in ("for", "loop"))
                returns |= r
            out.append(op)
            if returns:
                done, load = read(op.loc)
                rest, _ = block(ops[i + 1:], in_loop)
                if in_loop:
                    out += [load, Op("if", (done,), None, {}, (Block([Op("break", (), None, {}, (), op.loc)]), Block()),
                                     op.loc)] + rest
                elif rest:
                    live = Value(Type(bool_))
                    out += [load, Op("not", (done,), live, {}, (), op.loc),
                            Op("if", (live,), None, {}, (Block(rest), Block()), op.loc)]
                return out, True
        return out, False

    body, _ = block(kernel.body.ops, False)
    kernel.body.ops = [Op("store_var", (flag, Const(False, Type(bool_))), None, {}, (), kernel.loc)] + body


def _skip_rest(ops: list[Op], which: set[int], flag: Var) -> tuple[list[Op], bool]:
    """``ops`` with each jump of ``which`` (op ids; not those of nested loops) replaced by setting
    ``flag``, and the rest of each enclosing block under ``if not flag``; and whether any was."""
    out: list[Op] = []
    for i, op in enumerate(ops):
        if id(op) in which:
            out.append(Op("store_var", (flag, Const(True, Type(bool_))), None, {}, (), op.loc))
            return out, True                  # what follows a jump is never reached
        jumps = False
        if op.opcode not in ("for", "loop"):  # a nested loop's jumps are its own
            for b in op.blocks:
                b.ops, j = _skip_rest(b.ops, which, flag)
                jumps |= j
        out.append(op)
        if jumps:
            rest, _ = _skip_rest(ops[i + 1:], which, flag)
            if rest:
                done, live = Value(Type(bool_)), Value(Type(bool_))
                out += [Op("load_var", (flag,), done, {}, (), op.loc), Op("not", (done,), live, {}, (), op.loc),
                        Op("if", (live,), None, {}, (Block(rest), Block()), op.loc)]
            return out, True
    return out, False


def _own(block: Block, opcode: str, live: bool = False) -> list[Op]:
    """The ``break`` or ``continue`` ops of the loop whose body is ``block`` (not of nested
    loops); with ``live``, only those that may run: on a side of an ``if`` that a constant
    condition takes, and not after a statement that always leaves (``if i32(K) > 2: break``
    with K a Comptime 4 makes a ``continue`` after it dead: counted, it kept a loop that runs
    once a loop on PoCL, which then let every work-item through a guard in it, CI seed
    655010257)."""
    found = []
    for op in block.ops:
        if op.opcode == opcode:
            found.append(op)
        elif op.opcode not in ("for", "loop"):
            for b in (_taken(op) if live else op.blocks):
                found += _own(b, opcode, live)
        if live and (op.opcode in ("break", "continue", "return") or _always_leaves([op])):
            break
    return found


def _taken(op: Op) -> tuple[Block, ...]:
    """The blocks of ``op`` that may run: one side of an ``if`` on a constant."""
    if op.opcode == "if" and isinstance(op.args[0], Const):
        return op.blocks[:1] if op.args[0].value else op.blocks[1:]
    return op.blocks


def _always_leaves(ops: list[Op]) -> bool:
    """Whether every path through ``ops`` ends in a ``break`` or ``return`` (an ``if`` on a
    constant goes the way the compiler folds it)."""
    for op in ops:
        if op.opcode in ("break", "return"):
            return True
        if op.opcode == "if":
            sides = _taken(op)
            decided = len(sides) == 2 or isinstance(op.args[0], Const)
            if decided and sides and all(_always_leaves(b.ops) for b in sides):
                return True
    return False


def unloop_once(kernel: Kernel, is_barrier) -> None:
    """A loop holding a barrier whose body never reaches its end (every path through it leaves,
    and it has no ``continue``) runs at most once: it becomes ``if`` the loop runs (a ``for``'s
    start before its stop; a ``loop`` always, its test is its first ``break``), the body under
    it, and its breaks a flag that skips the rest of the body (`_skip_rest`). The hoister then
    splits that ``if`` around the barriers. Left a loop, LLVM found the back edge unreachable and
    folded it into an ``if`` itself, with the barriers under it and a per-unit guard after them
    in the same region, and PoCL let every work-item through the guard (tests/fuzz, seed
    9100774)."""
    def block(ops: list[Op]) -> list[Op]:
        out: list[Op] = []
        for op in ops:
            for b in op.blocks:
                b.ops = block(b.ops)
            body = op.blocks[0] if op.opcode in ("for", "loop") else None
            if body is None or not any(is_barrier(o) for o in walk(body)) or _own(body, "continue", live=True) \
                    or not _always_leaves(body.ops):
                out.append(op)
                continue
            flag = Var("cb_left", Type(bool_))
            kernel.vars.append(flag)
            jumps = _own(body, "break") + _own(body, "continue")       # continues here are never reached
            inner, _ = _skip_rest(body.ops, {id(j) for j in jumps}, flag)
            inner = [Op("store_var", (flag, Const(False, Type(bool_))), None, {}, (), op.loc)] + inner
            if op.opcode == "loop":
                out += inner
                continue
            start, stop, step = op.args
            inner = [Op("store_var", (op.attrs["var"], start), None, {}, (), op.loc)] + inner
            runs = Value(Type(bool_))
            if isinstance(step, Const):
                out.append(Op("lt" if step.value > 0 else "gt", (start, stop), runs, {}, (), op.loc))
            else:
                up, down, rising = Value(Type(bool_)), Value(Type(bool_)), Value(Type(bool_))
                out += [Op("lt", (start, stop), up, {}, (), op.loc), Op("gt", (start, stop), down, {}, (), op.loc),
                        Op("gt", (step, Const(0, step.type)), rising, {}, (), op.loc),
                        Op("select", (rising, up, down), runs, {}, (), op.loc)]
            out.append(Op("if", (runs,), None, {}, (Block(inner), Block()), op.loc))
        return out

    kernel.body.ops = block(kernel.body.ops)


def flag_continues(kernel: Kernel, is_barrier) -> None:
    """In each loop that holds a barrier, a ``continue`` of its own that a barrier later in the
    body may follow sets a per-iteration flag instead, and the rest of each enclosing block of
    the body runs under ``if not continued`` (`_skip_rest`): the barriers after it are then under
    an ``if``, which the hoister splits as any other. Left a jump, ``if c: continue`` makes the
    rest of the body a conditional that LLVM sees (the loop's latch is where the two paths
    meet), a barrier under it and a per-unit guard after the barrier in the same region, and
    PoCL let every work-item through the guard (tests/fuzz, seed 9100469). Only a cube-uniform
    ``continue`` may precede a barrier (`check_barriers`), so the flag is cube-uniform."""
    for loop in [op for op in walk(kernel.body) if op.opcode in ("for", "loop")]:
        body = loop.blocks[0]
        order = list(walk(body))
        last = max((k for k, op in enumerate(order) if is_barrier(op)), default=-1)
        own = {id(op) for op in _own(body, "continue")}
        which = {id(op) for k, op in enumerate(order) if id(op) in own and k < last}
        if not which:
            continue
        flag = Var("cb_continued", Type(bool_))
        kernel.vars.append(flag)
        ops, _ = _skip_rest(body.ops, which, flag)
        body.ops = [Op("store_var", (flag, Const(False, Type(bool_))), None, {}, (), loop.loc)] + ops


def flag_late_breaks(kernel: Kernel, is_barrier) -> None:
    """In each loop that holds a barrier, a ``break`` of its own after the body's last barrier
    sets a flag instead, the rest of the body is skipped (`_skip_rest`), and the loop is left by
    ``if left: break`` at the top of the next iteration, beside the loop's own test. Left where
    it was, the exit sat in the region after the last barrier, which PoCL's region builder
    could not form (its hoisted guard branches straight from the barrier both to the exit's
    side and to the latch, which that side also reaches): PoCL asserted "Incoming edges to
    non-entry block!" and aborted the process (tests/fuzz, seed 9100940). A ``for`` loop's
    counter steps once more before the test; nothing reads it after the loop."""
    def block(parent: Block) -> None:
        ops = []
        for loop in parent.ops:
            for b in loop.blocks:
                block(b)
            if loop.opcode in ("for", "loop"):
                ops.extend(_late_breaks_flagged(kernel, loop, is_barrier))
            ops.append(loop)
        parent.ops = ops

    block(kernel.body)


def _late_breaks_flagged(kernel: Kernel, loop: Op, is_barrier) -> list[Op]:
    """Rewrite ``loop`` for `flag_late_breaks`; the ops to put before it (the flag's reset)."""
    body = loop.blocks[0]
    order = list(walk(body))
    barriers = [k for k, op in enumerate(order) if is_barrier(op)]
    own = {id(op) for op in _own(body, "break")}
    which = {id(op) for k, op in enumerate(order) if barriers and id(op) in own and k > barriers[-1]}
    if not which:
        return []
    flag = Var("cb_left", Type(bool_))
    kernel.vars.append(flag)
    ops, _ = _skip_rest(body.ops, which, flag)
    left = Value(Type(bool_))
    leave = Op("if", (left,), None, {}, (Block([Op("break", (), None, {}, (), loop.loc)]), Block()), loop.loc)
    body.ops = [Op("load_var", (flag,), left, {}, (), loop.loc), leave] + ops
    return [Op("store_var", (flag, Const(False, Type(bool_))), None, {}, (), loop.loc)]


class _Hoister:
    def __init__(self, kernel: Kernel, is_barrier, levels: dict):
        self.kernel = kernel
        self.is_barrier = is_barrier
        self.levels = levels            # uniformity level per value id (0: the same on the whole cube)
        self.initial: list[Op] = []     # the crossing variables start at zero (never read undefined)
        self.made = False

    def has_barrier(self, op: Op) -> bool:
        return self.is_barrier(op) or any(self.has_barrier(o) for b in op.blocks for o in b.ops)

    def loops_a_barrier(self, op: Op) -> bool:
        """Whether a loop inside ``op`` (or ``op`` itself) holds a barrier."""
        if op.opcode in ("for", "loop") and self.has_barrier(op):
            return True
        return any(self.loops_a_barrier(o) for b in op.blocks for o in b.ops)

    def block(self, ops: list[Op]) -> list[Op]:
        out: list[Op] = []
        for op in ops:
            for b in op.blocks:
                b.ops = self.block(b.ops)
            # a loop holding a barrier comes out of an if only when the whole cube agrees on the
            # condition: it then runs no iteration where the condition is false
            if op.opcode == "if" and self.has_barrier(op) and (
                    not self.loops_a_barrier(op) or self.uniform(op.args[0])):
                out.extend(self.split(op))
            else:
                out.append(op)
        return out

    def uniform(self, value) -> bool:
        return isinstance(value, Const) or self.levels.get(value.id, 0) == 0

    def conditioned(self, loop: Op, guard: Value) -> list[Op]:
        """``loop`` (holding a barrier) made to run no iteration where ``guard`` is false."""
        if loop.opcode == "for":
            start, stop, step = loop.args
            limited = Value(stop.type)
            loop.args = (start, limited, step)
            return [Op("select", (guard, stop, start), limited, {}, (), loop.loc), loop]
        stop = Value(Type(bool_))
        body = loop.blocks[0]
        body.ops = [Op("not", (guard,), stop, {}, (), loop.loc),
                    Op("if", (stop,), None, {}, (Block([Op("break", (), None, {}, (), loop.loc)]), Block()),
                       loop.loc)] + body.ops
        return [loop]

    def split(self, op: Op) -> list[Op]:
        """``if (c) {T} else {E}`` -> pieces of T under c, T's barriers, pieces of E under !c, E's barriers."""
        self.made = True
        cond = op.args[0]
        out: list[Op] = []
        negated = None
        for side, ops in enumerate(op.blocks):
            if not ops.ops:
                continue
            if side == 1:
                negated = Value(Type(bool_))
                out.append(Op("not", (cond,), negated, {}, (), op.loc))
                self.levels[negated.id] = self.levels.get(cond.id, 0)
            guard = cond if side == 0 else negated
            piece: list[Op] = []
            for inner in ops.ops:
                if self.has_barrier(inner):
                    if piece:
                        out.append(Op("if", (guard,), None, {}, (Block(piece), Block()), op.loc))
                        piece = []
                    if inner.opcode in ("for", "loop"):
                        out.extend(self.conditioned(inner, guard))
                    elif inner.opcode == "if":          # one that could not be split stays guarded
                        out.append(Op("if", (guard,), None, {}, (Block([inner]), Block()), op.loc))
                    else:
                        out.append(inner)
                else:
                    piece.append(inner)
            if piece:
                out.append(Op("if", (guard,), None, {}, (Block(piece), Block()), op.loc))
        return self.route(out)

    def route(self, ops: list[Op]) -> list[Op]:
        """Values defined inside a piece and used after it travel through a variable."""
        defined_in: dict[int, int] = {}
        for k, op in enumerate(ops):
            if op.opcode == "if" and not self.has_barrier(op):
                for o in walk(op.blocks[0]):
                    if o.result is not None:
                        defined_in[o.result.id] = k
        carried: dict[int, Var] = {}
        result: list[Op] = []
        for k, op in enumerate(ops):
            uses = {a.id: a for a in _operands(op) if isinstance(a, Value) and not isinstance(a, Const)
                    and defined_in.get(a.id, k) < k}
            renames = {}
            loads = []
            for vid, value in uses.items():
                var = carried.get(vid)
                if var is None:
                    var = carried[vid] = Var(f"carried{vid}", value.type)
                    self.kernel.vars.append(var)
                    zero = _zero(value.type)
                    self.initial.extend(zero[1])
                    self.initial.append(Op("store_var", (var, zero[0]), None, {}, (), op.loc))
                    self._store_after_definition(ops[defined_in[vid]], value, var)
                loaded = Value(value.type)
                loads.append(Op("load_var", (var,), loaded, {}, (), op.loc))
                renames[vid] = loaded
            if renames:
                if op.opcode == "if" and not self.has_barrier(op):
                    op.blocks[0].ops = loads + op.blocks[0].ops
                    _rename(op.blocks[0], renames)
                else:
                    result.extend(loads)
                    op.args = tuple(renames.get(a.id, a) if isinstance(a, Value) else a for a in op.args)
                    for b in op.blocks:
                        _rename(b, renames)
            result.append(op)
        return result

    @staticmethod
    def _store_after_definition(piece: Op, value: Value, var: Var) -> None:
        block = piece.blocks[0]
        for i, o in enumerate(block.ops):
            if o.result is value:
                block.ops.insert(i + 1, Op("store_var", (var, value), None, {}, (), o.loc))
                return
        raise AssertionError("a carried value is defined at the top of its piece")


def _operands(op: Op):
    yield from op.args
    for b in op.blocks:
        for o in walk(b):
            yield from o.args
            if o.opcode == "for":
                yield o.attrs["var"]


def _rename(block: Block, renames: dict) -> None:
    for o in walk(block):
        o.args = tuple(renames.get(a.id, a) if isinstance(a, Value) and not isinstance(a, Const) else a
                       for a in o.args)


def _zero(t: Type):
    """A zero of type ``t`` (a Line is the broadcast of a scalar zero): (value, ops making it)."""
    scalar = Const(False if t.dtype.is_bool else 0.0 if t.dtype.is_float else 0, Type(t.dtype))
    if t.width == 1:
        return scalar, []
    line = Value(t)
    return line, [Op("broadcast", (scalar,), line, {}, (), None)]


def check_barriers(kernel: Kernel, is_barrier, why: str) -> None:
    """Raise DivergenceError naming the line of a barrier that not every unit of its cube reaches
    (``why``: what makes the op a barrier on this target, for the message)."""
    from .uniformity import analyze_uniformity

    analyze_uniformity(kernel, cube_barrier=is_barrier, why=why)
