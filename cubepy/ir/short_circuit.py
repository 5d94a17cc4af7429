"""``a and b`` / ``a or b`` with a small pure right side, as one ``and`` / ``or`` op.

The frontend keeps Python's meaning: the right side of ``and`` / ``or`` runs only where it is
needed (it may index an array the left side guards), as a bool variable set under an ``if``::

    store_var($and, L)
    if L:  <right side>; store_var($and, R)
    %v = load_var($and)

Where the right side is a few pure ops (arithmetic and compares of values at hand: no load, no
plane op, nothing that touches memory or depends on which units run it), computing it always
gives the same answer: integer division by zero gives 0 and float ops give NaN or inf, nothing
faults. `flatten_short_circuits` then replaces the pattern with ``%v = and(L, R)``. The analyses
that read guards (`cubepy.ir.bounds`, `cubepy.ir.cube_checks`) see ``if m < nm and g < ng:`` as two
compares, so the accesses under it are proven or tested once per cube and per launch, and the
backends get straight-line code.
"""

from __future__ import annotations

from collections import Counter

from .nodes import Block, Kernel, Op, Var, walk
from .opcodes import PURE

# ops the right side may hold: pure, or reads that cannot fault and are the same wherever they run
_MOVABLE = PURE | {"builtin", "param", "shape", "load_var"}
_MOST_OPS = 12          # a longer right side keeps its branch: it may be costly where the left decides


def flatten_short_circuits(kernel: Kernel) -> int:
    """Rewrite every bool ``and`` / ``or`` whose right side is at most a few movable ops; returns
    how many were rewritten."""
    uses = Counter(a.id for op in walk(kernel.body) for a in op.args if isinstance(a, Var))
    return _block(kernel.body, uses)


def _block(block: Block, uses: Counter) -> int:
    count = sum(_block(b, uses) for op in block.ops for b in op.blocks)
    ops, out, k = block.ops, [], 0
    while k < len(ops):
        found = _match(ops, k, uses)
        if found is None:
            out.append(ops[k])
            k += 1
            continue
        code, left, right_ops, right, load, skipped, end = found
        out += skipped + right_ops
        out.append(Op(code, (left, right), load.result, {}, (), ops[end - 1].loc))
        count += 1
        k = end + 1
    block.ops = out
    return count


def _match(ops: list, k: int, uses: Counter):
    """The pattern starting at ``ops[k]`` (the store of the left side), or None."""
    first = ops[k]
    if first.opcode != "store_var" or not first.args[0].type.dtype.is_bool or uses[first.args[0].id] != 3:
        return None
    var, left = first.args
    code, skipped, at = "and", [], k + 1
    if at < len(ops) and ops[at].opcode == "not" and ops[at].args[0] is left:
        code, skipped, at = "or", [ops[at]], at + 1         # `or`: the branch runs where the left is false
    if at + 1 >= len(ops):
        return None
    branch, load = ops[at], ops[at + 1]
    condition = skipped[0].result if skipped else left
    if (branch.opcode != "if" or branch.attrs or branch.args[0] is not condition
            or any(b.ops for b in branch.blocks[1:])):
        return None
    if load.opcode != "load_var" or load.args[0] is not var:
        return None
    body = branch.blocks[0].ops
    if not body or len(body) - 1 > _MOST_OPS:
        return None
    last = body[-1]
    if last.opcode != "store_var" or last.args[0] is not var:
        return None
    right_ops, right = body[:-1], last.args[1]
    if right.type != left.type or any(op.opcode not in _MOVABLE or op.blocks or op.result is None for op in right_ops):
        return None
    return code, left, right_ops, right, load, skipped, at + 1
