"""Uniformity analysis: which values and which control flow are the same across units.

Levels: UNIFORM (same on every unit of a cube), PLANE (same on every unit of a plane), VARYING.
`sync_cube()` must run under cube-uniform control; a plane op under plane-uniform control.
Control becomes non-uniform under a branch on a non-uniform condition, inside a loop whose trip
count or exits are non-uniform, and after a non-uniform early exit (`return`, `break`,
`continue`). A `Var` is as non-uniform as any value stored into it, or the control of the store.
"""

from __future__ import annotations

from ..errors import DivergenceError
from .nodes import PLANE_OPS, PLANE_REDUCE, Block, Buffer, Const, Kernel, Op, Value, Var

UNIFORM, PLANE, VARYING = 0, 1, 2
_UNIT_BUILTINS = {"unit_pos_x", "unit_pos_y", "unit_pos_z", "unit_pos_plane"}
_PLANE_UNIFORM_RESULTS = set(PLANE_REDUCE) | {"plane_all", "plane_any", "plane_ballot", "plane_broadcast"}


class _Analysis:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.values: dict[int, int] = {}
        self.vars: dict[int, int] = {}
        self.changed = False
        self.report = False

    def level(self, x) -> int:
        if isinstance(x, Const):
            return UNIFORM
        if isinstance(x, Value):
            return self.values.get(x.id, UNIFORM)
        if isinstance(x, Var):
            return self.vars.get(x.id, UNIFORM)
        return UNIFORM

    def raise_var(self, var: Var, level: int) -> None:
        if level > self.vars.get(var.id, UNIFORM):
            self.vars[var.id] = level
            self.changed = True

    def value_level(self, op: Op, ctl: int) -> int:
        code = op.opcode
        if code == "builtin":
            return VARYING if op.attrs["name"] in _UNIT_BUILTINS else UNIFORM
        if code == "load":
            buf: Buffer = op.args[0]
            if buf.kind == "global" and not buf.mutable:
                return max((self.level(a) for a in op.args[1:]), default=UNIFORM)
            return VARYING
        if code == "atomic" or code == "plane_elect":
            return VARYING
        if code in _PLANE_UNIFORM_RESULTS:
            return PLANE
        if code in PLANE_OPS:
            return VARYING
        if code == "load_var":
            return self.level(op.args[0])
        return max((self.level(a) for a in op.args), default=UNIFORM)

    def fail(self, op: Op, message: str) -> None:
        if self.report:
            raise DivergenceError(message, self.kernel.name, op.loc)

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
            if code in PLANE_OPS and cur > PLANE:
                self.fail(op, f"{code}() is reached by only some units of a plane (it is under a "
                          "branch, loop or early exit that depends on the unit); make the control "
                          "flow plane-uniform, e.g. compute the condition into a value and pass "
                          "that value to the plane op")
            if code == "if":
                inner = max(cur, self.level(op.args[0]))
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


def analyze_uniformity(kernel: Kernel) -> dict[int, int]:
    """Check sync and plane-op placement; return the level of each value id.

    Raises DivergenceError naming the user's line for a misplaced ``sync_cube`` or plane op.
    """
    analysis = _Analysis(kernel)
    while True:
        analysis.changed = False
        analysis.walk(kernel.body, UNIFORM)
        if not analysis.changed:
            break
    analysis.report = True
    analysis.walk(kernel.body, UNIFORM)
    return analysis.values
