"""Which op belongs to which region, and which values and variables live across regions."""

from __future__ import annotations

from cubepy.ir.nodes import (
    PLANE_OPS,
    Block,
    Const,
    Op,
    Value,
    Var,
    walk,
)
from cubepy.ir.opcodes import PURE, UNIT_BUILTINS


class AnalysisMixin:
    def barrier(self, op: Op) -> bool:
        key = id(op)
        if key not in self._barrier:
            # the version switch of cube-level checks runs at cube level: each side is its own unit loops
            self._barrier[key] = op.opcode == "sync_cube" or op.opcode in PLANE_OPS or op.attrs.get(
                "cube_checks", False) or any(
                self.barrier(o) for b in op.blocks for o in b.ops)
        return self._barrier[key]

    def analyze(self) -> None:
        self.invariant: set[int] = set()
        self.remat: dict[int, str] = {}
        for op in walk(self.k.body):
            r = op.result
            if r is None:
                continue
            code = op.opcode
            if code == "builtin" and op.attrs["name"] in UNIT_BUILTINS:
                self.remat[r.id] = op.attrs["name"]
            elif code in ("param", "shape", "builtin") or (code in PURE and all(
                    isinstance(a, Const) or (isinstance(a, Value) and a.id in self.invariant) for a in op.args)):
                self.invariant.add(r.id)
        self.def_region: dict[int, int] = {}
        self.use_regions: dict[int, set] = {}
        self.var_regions: dict[int, set] = {}
        self.forced: set[int] = set()
        self.loop_regions: set[int] = set()
        self.n_regions = 0
        self.cube_constructs = 0
        self.has_return = any(op.opcode == "return" for op in walk(self.k.body))
        self._scan_cube(self.k.body, False)
        self.slot_values = {vid for vid, rid in self.def_region.items()
                            if vid in self.forced or any(u != rid for u in self.use_regions.get(vid, ()))}
        self.slot_vars = {vid for vid, rs in self.var_regions.items()
                          if len(rs) > 1 or any(r in self.loop_regions or r < 0 for r in rs)}
        self.need_status = self.cube_constructs > 0 or (self.n_regions > 1 and self.has_return)

    def _uniform(self, v) -> bool:
        return isinstance(v, Const) or v.id in self.invariant or self.levels.get(v.id, 2) == 0

    def _new_region(self, in_loop: bool) -> int:
        self.n_regions += 1
        if in_loop:
            self.loop_regions.add(self.n_regions)
        return self.n_regions

    def _use(self, a, rid: int) -> None:
        if isinstance(a, Var):
            self.var_regions.setdefault(a.id, set()).add(rid)
        elif isinstance(a, Value) and not isinstance(a, Const) and a.id not in self.invariant \
                and a.id not in self.remat:
            self.use_regions.setdefault(a.id, set()).add(rid)

    def _scan_cube(self, block: Block, in_loop: bool) -> None:
        seg = None
        for op in block.ops:
            if not self.barrier(op):
                if seg is None:
                    seg = self._new_region(in_loop)
                self._scan_unit(op, seg)
                continue
            seg = None
            rid = self._new_region(in_loop)
            for a in op.args:
                self._use(a, rid)
            if op.opcode in PLANE_OPS:
                self.def_region[op.result.id] = rid
                self.forced.add(op.result.id)
            elif op.opcode in ("if", "for", "loop"):
                self.cube_constructs += op.opcode != "if" or not self._uniform(op.args[0])
                if op.opcode == "for":
                    self._use(op.attrs["var"], -1)
                for b in op.blocks:
                    self._scan_cube(b, in_loop or op.opcode != "if")

    def _scan_unit(self, op: Op, rid: int) -> None:
        for a in op.args:
            self._use(a, rid)
        if op.opcode == "for":
            self._use(op.attrs["var"], rid)
        if op.result is not None and op.result.id not in self.invariant and op.result.id not in self.remat:
            self.def_region[op.result.id] = rid
        for b in op.blocks:
            for o in b.ops:
                self._scan_unit(o, rid)
