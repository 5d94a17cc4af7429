"""Control flow and op dispatch: blocks, ``if``/``for``/endless loops, ``break``/``continue``/``return``,
barriers (a mixin of `renderer._Renderer` and of the WGSL renderer). The ``volatile`` tricks are
C's: only the OpenCL dialects of PoCL ask for them (`Dialect.opaque_loops`, `Dialect.join_loop_exits`)."""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import BINARY, COMPARE, PLANE_OPS, UNARY, Block, Const, Op, Value, Var, walk
from cubepy.ir.uniformity import UNIFORM, analyze_uniformity

from .plane import uses_barrier


class ControlFlow:
    """Statements: each op to its ``_op_<opcode>`` handler, structured control flow to C."""

    # --- statements ---------------------------------------------------------------------

    def _block(self, block: Block) -> None:
        for op in block.ops:
            self._op(op)

    def _nested(self, block: Block) -> None:
        self.depth += 1
        self._block(block)
        self.depth -= 1

    def _op(self, op: Op) -> None:
        code = op.opcode
        handler = getattr(self, f"_op_{code}", None)
        if handler is not None:
            handler(op)
        elif code in UNARY:
            dt = op.args[0].type.dtype
            if code == "neg" and dt.is_int and dt.is_signed:
                self.negations.add(op.result.id)
            self._define(op, lambda i: self._unary(code, dt, self._arg(op.args[0], i)))
        elif code in BINARY or code in COMPARE:
            dt = op.args[0].type.dtype
            b_value = op.args[1].value if isinstance(op.args[1], Const) else None
            nowrap = bool(op.attrs.get("nowrap"))
            of_negation = code in ("min", "max") and any(a.id in self.negations for a in op.args)
            self._define(op, lambda i: self._binary(code, dt, self._arg(op.args[0], i), self._arg(op.args[1], i),
                                                    b_value, nowrap, of_negation))
        elif code in PLANE_OPS:
            self._plane(op)
        else:
            raise CubeTypeError(f"the {self.d.name} backend cannot render opcode {code!r}", self.k.name, op.loc)

    # --- control flow -------------------------------------------------------------------

    def _op_sync_cube(self, op: Op) -> None:
        self._line(self.d.barrier)

    def _op_if(self, op: Op) -> None:
        then, other = op.blocks[0], op.blocks[1] if len(op.blocks) > 1 else Block()
        cond = self._arg(op.args[0])
        if not then.ops and other.ops:
            then, other, cond = other, Block(), f"!{cond}"
        self._line(f"if ({cond}) {{")
        self._nested(then)
        if other.ops:
            self._line("} else {")
            self._nested(other)
        self._line("}")

    def _op_for(self, op: Op) -> None:
        start, stop, step = (self._arg(a) for a in op.args)
        var = self.names[op.attrs["var"].id]
        if self.opaque_loops:
            opaque = self._unique("cb_stop")
            self._line(f"volatile int {opaque} = {stop};")
            stop = opaque
        s = op.args[2]
        if isinstance(s, Const):
            cond = f"{var} {'<' if s.value > 0 else '>'} {stop}"
        else:
            cond = self.d.step_test.format(var=var, stop=stop, step=step)
        entering = self._hide_unit_values(op)
        self._line(f"for ({var} = {start}; {cond}; {var} += {step}) {{")
        self._loop_body(op, entering)
        self._line("}")
        self._join_exits(op)

    def _opaque(self, op: Op) -> bool:
        """Whether this ``loop`` gets a second, never-taken exit through a volatile (PoCL): only
        one without a barrier inside. With a barrier loop's exit hidden that way and an inner
        ``for``'s trip count read through a volatile, PoCL ran a plane-uniform branch inside the
        loop on every work-item (tests/fuzz, seed 7000610). ``for`` loops keep their volatile
        trip count with barriers or without (seed 800350209 needs it on a barrier loop)."""
        return self.opaque_loops and not self._holds_barrier(op)

    def _holds_barrier(self, op: Op) -> bool:
        return any(uses_barrier(inner, self.d) for inner in walk(op.blocks[0]))

    def _op_loop(self, op: Op) -> None:
        if self._opaque(op):        # a second exit that is never taken: the loop has no single exit
            running = self._unique("cb_run")
            self._line(f"for (volatile int {running} = 1; {running}; ) {{")
            self._nested(_without_tail_continue(op.blocks[0]))
            self._line("}")
            return
        self._hide_entry_values(op)
        entering = self._hide_unit_values(op)
        self._line(self.d.forever)
        self._loop_body(op, entering)
        self._line("}")
        self._join_exits(op)

    def _loop_body(self, op: Op, entering: list) -> None:
        """The body of loop ``op``, first reading back the values `_hide_unit_values` hid."""
        self.depth += 1
        renamed = {}
        for key, hidden, local in entering:
            if isinstance(key, Var):
                self._line(f"{self.names[key.id]} = {hidden};")
            else:
                renamed[key.id] = self.names[key.id]
                self._let(local, self._vt(key.type), hidden)
                self.names[key.id] = local
        self._block(_without_tail_continue(op.blocks[0]))
        self.names.update(renamed)
        self.depth -= 1

    def _hide_unit_values(self, op: Op) -> list:
        """Before a loop that holds a barrier (PoCL): the per-unit values it uses from outside,
        and the variables it reads without writing, go through a volatile that each iteration
        reads again, so that LLVM cannot hoist what the loop computes from them out of it. A
        per-unit guard ``if g < n`` between barrier pairs of a runtime loop was hoisted to the
        loop's preheader, and PoCL used the last work-item's value of it for the whole work-group
        (CI fuzz seed 507500169). Returns ``(value or variable, volatile, per-iteration name)``."""
        if not self.opaque_loops or not self._holds_barrier(op):
            return []
        if self.unit_levels is None:
            self.unit_levels = analyze_uniformity(self.k)
        inside, used = set(), []
        stored = {op.attrs["var"].id} if op.opcode == "for" else set()
        for inner in walk(op.blocks[0]):
            if inner.result is not None:
                inside.add(inner.result.id)
            if inner.opcode == "store_var":
                stored.add(inner.args[0].id)
            if inner.opcode == "for":
                stored.add(inner.attrs["var"].id)
            for a in inner.args:
                if isinstance(a, (Value, Var)) and not isinstance(a, Const) and a not in used:
                    used.append(a)
        out = []
        for a in used:
            if isinstance(a, Var):
                keep = a.id not in stored
            else:
                keep = a.id not in inside and a.id in self.names and self.unit_levels.get(a.id, UNIFORM) > UNIFORM
            if keep:
                hidden, local = self._unique("cb_in"), self._unique("cb_it")
                self._line(f"volatile {self._vt(a.type)} {hidden} = {self._arg(a)};")
                out.append((a, hidden, local))
        return out

    def _hide_entry_values(self, op: Op) -> None:
        """Before a barrier ``loop`` on PoCL, pass the values its variables enter with through a
        volatile, so that LLVM cannot count its trips. ``if c: w = 0; while w < 1: ...
        plane_shuffle(...); if g < n: ...``: LLVM proved the back edge never taken, deleted the
        loop, and left its barriers under the hoisted condition, with the guard after them in
        one region; PoCL let every work-item through the guard (tests/fuzz, CI seed 429550188).
        The loop's exits stay plain (seed 7000610)."""
        if not self.opaque_loops or not self._holds_barrier(op):
            return
        written = []
        for inner in walk(op.blocks[0]):
            if inner.opcode == "store_var" and inner.args[0] not in written:
                written.append(inner.args[0])
        for var in written:
            name = self.names[var.id]
            hidden = self._unique("cb_entry")
            self._line(f"{{ volatile {self._vt(var.type)} {hidden} = {name}; {name} = {hidden}; }}")

    def _join_exits(self, op: Op) -> None:
        """A barrier after a loop that holds a barrier and has more than one way out (PoCL), so
        that all its exits meet there. ``if c: while ...: sync_cube()`` comes out of the ``if``
        as a loop whose first statement is ``if (!c) break;``, and the work after it is under
        ``if (c)`` again: LLVM threads that exit past the work (or moves the test before the
        loop), which leaves the barrier loop under a conditional with a per-unit guard after it
        in the same region, and PoCL let every work-item through the guard (tests/fuzz, seed
        9100144). LLVM neither duplicates a barrier nor threads a branch across one. Legal: a
        loop holding a barrier is run by the whole cube and left by all of it at once
        (`check_barriers`)."""
        if not self.d.join_loop_exits or not self._holds_barrier(op):
            return
        if (op.opcode == "for") + _own_breaks(op.blocks[0]) > 1:
            self._line(self.d.barrier)

    def _op_break(self, op: Op) -> None:
        self._line("break;")

    def _op_continue(self, op: Op) -> None:
        self._line("continue;")

    def _op_return(self, op: Op) -> None:
        self._line("return;")


def _own_breaks(block: Block) -> int:
    """The ``break`` statements that leave the loop whose body is ``block`` (not those of loops
    nested in it)."""
    return sum(1 if op.opcode == "break" else _own_breaks_in(op) for op in block.ops)


def _own_breaks_in(op: Op) -> int:
    return 0 if op.opcode in ("for", "loop") else sum(_own_breaks(b) for b in op.blocks)


def _without_tail_continue(block: Block) -> Block:
    """The loop body without a ``continue`` that is its last statement (also at the end of an
    ``if`` that ends the body): it changes nothing, and PoCL miscompiled a trailing ``continue``
    (``while`` loops ending in ``if c: continue`` ran one extra iteration for some units)."""
    if not block.ops:
        return block
    last = block.ops[-1]
    if last.opcode == "continue":
        return Block(block.ops[:-1])
    if last.opcode == "if":
        blocks = tuple(_without_tail_continue(b) for b in last.blocks)
        if all(a is b for a, b in zip(blocks, last.blocks)):
            return block
        return Block(block.ops[:-1] + [Op(last.opcode, last.args, last.result, last.attrs, blocks, last.loc)])
    return block


__all__ = ["ControlFlow"]
