"""Which arrays the specialization offered to pass by value keep that placement.

The runtime gives a small read-only host array a capacity in the specialization
(`cubepy.runtime.inline_arrays`); a backend then passes it in the launch's parameters, where CUDA
reads it from the constant bank. The constant cache serves one address per request: units of a
plane reading different elements wait for each other, so an array read at an index that differs
between the units that run a load together (a lookup table indexed by data) is better read from
global memory. This pass keeps the placement of an array only if every load of it has such
indices, and only while the kept arrays fit the kernel's budget of parameter bytes (in parameter
order); the others are passed by address again (``Buffer.inline = 0``), which the launch follows.

"The same on the units that run a load together" is weaker than the uniformity analysis's
plane-uniform: the counter of a ``for`` loop with uniform start and step is the same on every unit
running an iteration, even where some units of the plane skipped the loop (the usual ``if i <
n:`` guard around a filter's tap loop), although it is not plane-uniform there; so is a variable
stored once, with such a value, before the load in the code that encloses it (``j`` of ``for j in
range(n)``, which the loop stores from its counter).
"""

from __future__ import annotations

from .nodes import Buffer, Kernel, Op, Value, Var, walk
from .opcodes import PURE
from .uniformity import PLANE, analyze_uniformity


def place_inline_arrays(kernel: Kernel, budget: int) -> None:
    """Keep ``Buffer.inline`` of the arrays read at indices shared by co-running units, within
    ``budget`` bytes."""
    offered = [p for p in kernel.params if isinstance(p, Buffer) and p.inline]
    if not offered:
        return
    shared = _SharedIndices(kernel)
    varying = {op.args[0].id for op in walk(kernel.body)
               if op.opcode == "load" and op.args[0].__class__ is Buffer and op.args[0].inline
               and not all(shared.holds(i) for i in op.args[1:])}
    left = budget
    for p in offered:
        nbytes = p.inline * p.type.dtype.itemsize
        if p.id in varying or nbytes > left:
            p.inline = 0
        else:
            left -= nbytes


class _SharedIndices:
    """Whether a value is the same on all units that run an op using it together."""

    def __init__(self, kernel: Kernel):
        self.levels = analyze_uniformity(kernel)
        self.defs: dict[int, Op] = {}
        self.counters: dict[int, Op] = {}        # a for loop's counter Var id -> the loop
        self.where: dict[int, tuple] = {}        # op id -> ((block id, position), ...) from the body down
        stores: dict[int, list[Op]] = {}
        self._index(kernel.body, ())
        for op in walk(kernel.body):
            if op.result is not None:
                self.defs[op.result.id] = op
            if op.opcode == "for":
                self.counters[op.attrs["var"].id] = op
            elif op.opcode == "store_var":
                stores.setdefault(op.args[0].id, []).append(op)
        for var_id in stores:                    # a counter the body also assigns is no counter
            self.counters.pop(var_id, None)
        self.single_store = {v: ops[0] for v, ops in stores.items() if len(ops) == 1}
        self.memo: dict[int, bool] = {}

    def _index(self, block, path: tuple) -> None:
        for position, op in enumerate(block.ops):
            here = path + ((id(block), position),)
            self.where[id(op)] = here
            for inner in op.blocks:
                self._index(inner, here)

    def _before(self, first: Op, then: Op) -> bool:
        """Whether ``first`` runs before ``then`` on every path to it: it is earlier in a block
        that encloses ``then``."""
        a, b = self.where[id(first)], self.where[id(then)]
        k = len(a) - 1
        return len(b) > k and b[:k] == a[:k] and b[k][0] == a[k][0] and b[k][1] > a[k][1]

    def holds(self, value) -> bool:
        if not isinstance(value, Value) or self.levels.get(value.id, 0) <= PLANE:
            return True
        found = self.memo.get(value.id)
        if found is None:
            self.memo[value.id] = False           # a cycle through Vars is not shared
            found = self.memo[value.id] = self._holds(self.defs.get(value.id))
        return found

    def _holds(self, op: Op | None) -> bool:
        if op is None:
            return False
        if op.opcode == "load_var":
            var = op.args[0]
            if not isinstance(var, Var):
                return False
            loop = self.counters.get(var.id)
            if loop is not None:
                return self.holds(loop.args[0]) and self.holds(loop.args[2])
            store = self.single_store.get(var.id)
            return store is not None and self._before(store, op) and self.holds(store.args[1])
        return op.opcode in PURE and all(self.holds(a) for a in op.args)
