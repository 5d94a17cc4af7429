"""Which regions run as gangs (gang.py) rather than one unit at a time (unit.py)."""

from __future__ import annotations

from cubepy.ir.nodes import Block, Const, Op, Var, walk
from cubepy.ir.opcodes import LINE_OPS, PURE

# Ops a gang skips with a side of an `if` no lane takes, where LLVM's if-conversion of a unit
# loop runs them for every unit under a mask: loads and the costly arithmetic (a store alone is
# one masked store there, as cheap as the gang's test).
COSTLY = frozenset({"load", "div", "floordiv", "mod", "pow", "sqrt", "rsqrt", "exp", "log", "sin", "cos",
                    "tanh", "erf"})


def loaded_values(ops: list[Op]) -> set[int]:
    """The ids of the values of ``ops`` (nested blocks included) computed from a load, through
    variables too (a few rounds to a fixed point)."""
    loaded: set[int] = set()
    loaded_vars: set[int] = set()

    def visit(op: Op) -> None:
        code = op.opcode
        if code == "store_var" and getattr(op.args[1], "id", None) in loaded:
            loaded_vars.add(op.args[0].id)
        if op.result is not None and (code == "load" or any(getattr(a, "id", None) in loaded for a in op.args)
                                      or (code == "load_var" and op.args[0].id in loaded_vars)):
            loaded.add(op.result.id)
        for b in op.blocks:
            for o in b.ops:
                visit(o)
    for _ in range(3):
        for op in ops:
            visit(op)
    return loaded


def indirect_accesses(ops: list[Op]) -> int:
    """How many loads and stores of ``ops`` (nested blocks included) take an index read from
    memory (``x[zones[i] + 1]``)."""
    loaded = loaded_values(ops)
    return sum(1 for op in walk(Block(list(ops))) if op.opcode in ("load", "store")
               and any(getattr(a, "id", None) in loaded for a in op.args[1:1 + op.args[0].rank]))


# accesses at indices read from memory that make a loop-free region a gang
INDIRECT_ACCESSES = 2


class GangChoiceMixin:
    def _gang_ok(self, ops: list[Op]) -> bool:
        """Regions gang.py can emit (`_gang_lowerable`) that hold a loop, gather through an
        index array without one (`_gathers_through_indices`), or branch on loaded data with
        costly work on a side (`_skippable_branch`)."""
        lowerable, has_loop = self._gang_lowerable(ops)
        if not lowerable:
            return False
        if has_loop:
            return self._gang_accesses_contiguous(ops)
        if self._gathers_through_indices(ops):
            return True
        return self._skippable_branch(ops) and self._gang_accesses_contiguous(ops, everywhere=True)

    def _gathers_through_indices(self, ops: list[Op]) -> bool:
        """A heuristic: several accesses at indices read from memory (a mesh's zone list,
        DEL_DOT_VEC_2D's ``x[i + 1 + jp]`` with ``i = real_zones[ii]``). LLVM's vectorizer
        gathers each of them for every unit; a gang tests at run time whether its lanes' indices
        are consecutive, which a zone list mostly is, and loads a vector then. Such a kernel's
        gangs are one vector wide (`codegen.gang_width`)."""
        return indirect_accesses(ops) >= INDIRECT_ACCESSES

    def _gang_lowerable(self, ops: list[Op]) -> tuple[bool, bool]:
        """``(lowerable, has_loop)``: whether every op of the region has a gang lowering (no
        atomics, no Lines, no break/continue of a cube-level loop), and whether it holds a loop."""
        if self.VF <= 1:
            return False, False
        has_loop = False

        def scalar(x) -> bool:
            return not hasattr(x, "type") or x.type is None or getattr(x.type, "width", 1) == 1

        def ok(op: Op, depth: int) -> bool:
            nonlocal has_loop
            if op.opcode == "atomic" or op.opcode in LINE_OPS:
                return False
            if op.opcode in ("break", "continue") and depth == 0:
                return False
            if op.result is not None and op.result.type.width > 1:
                return False
            if not all(scalar(a) for a in op.args):
                return False
            if op.opcode in ("for", "loop"):
                has_loop = True
                depth += 1
                if op.opcode == "for" and op.attrs["var"].type.width > 1:
                    return False
            return all(ok(o, depth) for b in op.blocks for o in b.ops)
        lowerable = all(ok(op, 0) for op in ops)
        return lowerable, has_loop

    def _skippable_branch(self, ops: list[Op]) -> bool:
        """A heuristic: does the region branch on data it loaded, with loads or costly arithmetic
        on a side? LLVM's loop vectorizer if-converts a unit loop's branches and runs both sides
        for every unit under masks; a gang runs a side only where a lane takes it, so a branch
        that no lane of a gang takes (a rare case, a boundary condition) costs its test alone.
        A branch on the unit's position alone (a bounds guard) or with cheap sides (a clamp)
        stays with LLVM."""
        loaded = loaded_values(ops)

        def costly(block) -> bool:
            return any(o.opcode in COSTLY or any(costly(b) for b in o.blocks) for o in block.ops)
        return any(op.opcode == "if" and getattr(op.args[0], "id", None) in loaded
                   and any(costly(b) for b in op.blocks) for op in walk(Block(list(ops))))

    def _gang_accesses_contiguous(self, ops: list[Op], everywhere: bool = False) -> bool:
        """A heuristic (correctness never depends on it): inside the region's loops (or
        ``everywhere``), does every load/store index look uniform or consecutive across units?
        Otherwise (e.g. each unit walking its own chunk) a gang would gather from VF distant
        places per step, and one unit at a time streams better."""
        UNI, CONS, VARY = 0, 1, 2
        shape: dict[int, int] = {}
        var_shape: dict[int, int] = {}

        def sh(a) -> int:
            if isinstance(a, Const) or a.id in self.invariant:
                return UNI
            if isinstance(a, Var):
                return var_shape.get(a.id, UNI)
            return shape.get(a.id, VARY)

        def visit(op: Op) -> None:
            code = op.opcode
            if op.result is not None:
                args = [sh(a) for a in op.args]
                if op.result.id in self.remat:
                    r = CONS if self.remat[op.result.id] == "unit_pos_x" or self.dims[0] == self.U else VARY
                elif code == "load_var":
                    r = sh(op.args[0])
                elif code in ("add", "sub") and max(args, default=UNI) <= CONS and args.count(CONS) <= 1 \
                        and (code == "add" or args[-1] == UNI):
                    r = max(args)
                elif code == "cast" and args[0] <= CONS and op.args[0].type.dtype.bits <= op.result.type.dtype.bits:
                    r = args[0]
                elif code in PURE and all(x == UNI for x in args):
                    r = UNI
                else:
                    r = VARY
                shape[op.result.id] = r
            if code == "store_var":
                var_shape[op.args[0].id] = max(var_shape.get(op.args[0].id, UNI), sh(op.args[1]))
            if code == "for":
                v = op.attrs["var"].id
                var_shape[v] = max(var_shape.get(v, UNI), sh(op.args[0]), CONS * 2 * (sh(op.args[2]) != UNI))
            for b in op.blocks:
                for o in b.ops:
                    visit(o)

        for _ in range(3):              # variables: a few rounds to a fixed point
            for op in ops:
                visit(op)

        def accesses(op: Op, in_loop: bool) -> bool:
            if in_loop and op.opcode in ("load", "store"):
                n = op.args[0].rank
                idx = [sh(a) for a in op.args[1:1 + n]]
                if idx[-1] == VARY or any(x != UNI for x in idx[:-1]):
                    return False
            inner = in_loop or op.opcode in ("for", "loop")
            return all(accesses(o, inner) for b in op.blocks for o in b.ops)
        return all(accesses(op, everywhere) for op in ops)
