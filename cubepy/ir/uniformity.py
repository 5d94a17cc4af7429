"""Uniformity analysis: which values and which control flow are the same across units.

Levels: UNIFORM (same on every unit of a cube), PLANE (same on every unit of a plane), VARYING.
`sync_cube()` must run under cube-uniform control; a plane op under plane-uniform control.
Control becomes non-uniform under a branch on a non-uniform condition, inside a loop whose trip
count or exits are non-uniform, and after a non-uniform early exit (`return`, `break`,
`continue`). A `Var` is as non-uniform as any value stored into it, or the control of the store.

Planes are runs of ``PLANE_DIM`` consecutive units in the cube's linear unit order, so some
values that vary per unit are the same on a whole plane: the plane index ``UNIT_POS //
PLANE_DIM`` (the block-reduce idiom), ``ABSOLUTE_POS // PLANE_DIM`` when cubes hold whole planes,
``UNIT_POS_Y`` when rows hold whole planes. The analysis tracks values of the form
``m * lin + k`` (lin the linear unit position, k plane-uniform and a multiple of a known ``g``)
and a known divisor of uniform values; ``(m * lin + k) // c`` is plane-uniform when ``c`` and
``g`` are multiples of ``m * PLANE_DIM``.
"""

from __future__ import annotations

import math

from ..errors import DivergenceError
from .nodes import Block, Buffer, Const, Kernel, Op, Value, Var
from .opcodes import PLANE_OPS, PLANE_UNIFORM_RESULTS, UNIT_BUILTINS

UNIFORM, PLANE, VARYING = 0, 1, 2


class _Analysis:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.values: dict[int, int] = {}
        self.vars: dict[int, int] = {}
        self.read: set[int] = set()         # the Vars whose level this walk has read
        self.changed = False
        self.failure: DivergenceError | None = None
        self.cube_barrier = None
        self.why = ""
        self.forms: dict[int, tuple[int, int]] = {}    # value id -> (m, g): m * lin + (multiple of g)
        self.divisors: dict[int, int] = {}             # plane-uniform value id -> a divisor (0: it is 0)
        self.P = max(1, kernel.plane_dim)
        self.dims = kernel.cube_dim

    def level(self, x) -> int:
        cls = x.__class__
        if cls is Const:
            return UNIFORM
        if cls is Var:
            self.read.add(x.id)
            return self.vars.get(x.id, UNIFORM)
        if isinstance(x, Value):
            return self.values.get(x.id, UNIFORM)
        return UNIFORM

    def highest(self, args) -> int:
        """The highest level among ``args`` (UNIFORM for none)."""
        top = UNIFORM
        for a in args:
            lv = self.level(a)
            if lv > top:
                if lv == VARYING:
                    return VARYING
                top = lv
        return top

    def raise_var(self, var: Var, level: int) -> None:
        if level > self.vars.get(var.id, UNIFORM):
            self.vars[var.id] = level
            # only a level this walk has already used is stale: raising one not read yet (the
            # first store into a Var) needs no second walk
            self.changed = self.changed or var.id in self.read

    def divisor(self, x) -> int:
        if isinstance(x, Const) and isinstance(x.value, int) and not isinstance(x.value, bool):
            return abs(x.value)
        return self.divisors.get(x.id, 1) if isinstance(x, Value) else 1

    def plane_structure(self, op: Op) -> int | None:
        """The level of an op that is plane-uniform although built from unit positions, or None;
        records the linear forms and divisors that later ops build on."""
        code, args, rid = op.opcode, op.args, op.result.id
        dx, dy, dz = self.dims          # an extent read at run time (shape-generic) is None
        P = self.P
        x_planes = dx is not None and dx % P == 0
        if code == "builtin":
            name = op.attrs["name"]
            if name == "unit_pos_x":
                if dy == 1 and dz == 1:
                    self.forms[rid] = (1, 0)
                elif x_planes:
                    self.forms[rid] = (1, dx)    # lin minus a multiple of dx, the same on a plane
                return None
            if (name == "unit_pos_y" and x_planes) or (name == "unit_pos_z" and dx is not None and dy is not None
                                                        and (dx * dy) % P == 0):
                self.divisors[rid] = 1
                return PLANE
            return None
        form = [self.forms.get(a.id) if isinstance(a, Value) else None for a in args]
        level = [self.level(a) for a in args]
        if code == "cast" and form[0] is not None and op.result.type.dtype.bits >= args[0].type.dtype.bits:
            self.forms[rid] = form[0]
            return None
        if code in ("add", "sub") and (form[0] is not None) != (form[1] is not None):
            lin = 0 if form[0] is not None else 1
            if code == "sub" and lin == 1:
                return None
            other = args[1 - lin]
            if level[1 - lin] <= PLANE:
                m, g = form[lin]
                self.forms[rid] = (m, math.gcd(g, self.divisor(other)))
            return None
        if code == "mul":
            for lin in (0, 1):
                c = args[1 - lin]
                if form[lin] is not None and isinstance(c, Const) and isinstance(c.value, int) and c.value > 0:
                    m, g = form[lin]
                    self.forms[rid] = (m * c.value, g * c.value)
                    return None
        if code in ("floordiv", "shr") and form[0] is not None and isinstance(args[1], Const):
            c = args[1].value if code == "floordiv" else (1 << args[1].value if 0 <= args[1].value < 62 else 0)
            m, g = form[0]
            if m > 0 and c > 0 and c % (m * P) == 0 and g % (m * P) == 0:
                return PLANE
            return None
        if all(lv <= PLANE for lv in level) and code in ("add", "sub", "mul", "cast"):
            d = [self.divisor(a) for a in args]
            self.divisors[rid] = (d[0] * d[1] if code == "mul" else math.gcd(d[0], d[1])) if len(d) == 2 else d[0]
        return None

    def value_level(self, op: Op, ctl: int) -> int:
        code = op.opcode
        if op.result is not None and code in ("builtin", "cast", "add", "sub", "mul", "floordiv", "shr"):
            structured = self.plane_structure(op)
            if structured is not None:
                return structured
        if code == "builtin":
            return VARYING if op.attrs["name"] in UNIT_BUILTINS else UNIFORM
        if code == "load":
            buf: Buffer = op.args[0]
            if buf.kind == "global" and not buf.mutable:
                return self.highest(op.args[1:])
            return VARYING
        if code == "atomic" or code == "plane_elect":
            return VARYING
        if code in PLANE_UNIFORM_RESULTS:
            return PLANE
        if code in PLANE_OPS:
            return VARYING
        if code == "load_var":
            return self.level(op.args[0])
        return self.highest(op.args)

    def fail(self, op: Op, message: str) -> None:
        if self.failure is None:        # the walk's first; raised if the walk turns out to be the last
            self.failure = DivergenceError(message, self.kernel.name, op.loc)

    def walk(self, block: Block, ctl: int) -> tuple[int, int]:
        """Walk a block under control level ``ctl``; return the levels at which it may leave
        its loop (break/continue) and the kernel (return), or -1 for none."""
        cur, loop_exit, ret = ctl, -1, -1
        for op in block.ops:
            code = op.opcode
            if code in ("break", "continue"):
                loop_exit = max(loop_exit, cur)
                break
            if code == "return":
                ret = max(ret, cur)
                break
            if code == "sync_cube" and cur > UNIFORM:
                self.fail(op, "sync_cube() is reached by only some units of the cube (it is under "
                          "a branch, loop or early exit that depends on the unit); every unit of "
                          "the cube must reach it, or the cube deadlocks")
            if code != "sync_cube" and self.cube_barrier is not None and cur > UNIFORM and self.cube_barrier(op):
                self.fail(op, f"{code}() is reached by only some units of the cube, and {self.why}, so every "
                          "unit of the cube must reach it; make the condition or early exit before it the "
                          "same for the whole cube")
            if code in PLANE_OPS and cur > PLANE and self.P > 1:      # a plane of one unit is uniform
                self.fail(op, f"{code}() is reached by only some units of a plane (it is under a "
                          "branch, loop or early exit that depends on the unit); make the control "
                          "flow plane-uniform, e.g. compute the condition into a value and pass "
                          "that value to the plane op")
            if code == "if":
                # the sides of a run's version (cubepy.ir.run_checks) compute the same values and
                # reach the same ops: which one a unit takes changes nothing this analysis sees
                inner = cur if "run_checks" in op.attrs else max(cur, self.level(op.args[0]))
                exits = [self.walk(b, inner) for b in op.blocks]
                loop_exit = max([loop_exit] + [e[0] for e in exits])
                ret = max([ret] + [e[1] for e in exits])
                cur = max([cur] + [e[0] for e in exits] + [e[1] for e in exits])
            elif code in ("for", "loop"):
                body_ctl = max([cur] + [self.level(a) for a in op.args])
                if code == "for":
                    self.raise_var(op.attrs["var"], body_ctl)
                while True:
                    inner_exit, inner_ret = self.walk(op.blocks[0], body_ctl)
                    needed = max(body_ctl, inner_exit, inner_ret)
                    if needed <= body_ctl:
                        break
                    body_ctl = needed
                    if code == "for":
                        self.raise_var(op.attrs["var"], body_ctl)
                ret = max(ret, inner_ret)
                cur = max(cur, inner_ret)
            elif code == "store_var":
                self.raise_var(op.args[0], max(cur, self.level(op.args[1])))
            if op.result is not None:
                lvl = self.value_level(op, cur)
                if lvl != self.values.get(op.result.id):
                    self.values[op.result.id] = lvl
        return loop_exit, ret


def analyze_uniformity(kernel: Kernel, cube_barrier=None, why: str = "") -> dict[int, int]:
    """Check sync and plane-op placement; return the level of each value id.

    Raises DivergenceError naming the user's line for a misplaced ``sync_cube`` or plane op.
    ``cube_barrier(op)``: ops a target runs as cube-wide barriers (plane ops emulated through
    shared memory), which then need cube-uniform control too; ``why`` says so in the message.
    """
    analysis = _Analysis(kernel)
    analysis.cube_barrier, analysis.why = cube_barrier, why
    while True:
        # a walk that raises no variable's level saw the final levels throughout, so the first
        # misplaced op it found is the one to report (no second walk to find it)
        analysis.changed, analysis.failure = False, None
        analysis.read.clear()
        analysis.walk(kernel.body, UNIFORM)
        if not analysis.changed:
            break
    if analysis.failure is not None:
        raise analysis.failure
    return analysis.values
