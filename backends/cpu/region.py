"""Inside a region: the ops, values, variables and unit builtins of every lane, at any lane width.

A region runs one unit at a time (unit.py: scalar values, real branches) or as gangs of VF units
(gang.py: ``<VF x T>`` vectors under an active-lane mask). Both lower their ops through the one
emitter here, which takes the width from ``self.lanes`` (lanes.py). ``self.mask`` is a gang's
active lanes, and None for one unit, whose control flow keeps inactive units away (so its stores
need no blend). Only buffer accesses and control flow are lowered apart: `_region_op` hands them
to `_unit_flow` or `_gang_flow`.
"""

from __future__ import annotations

from cubepy.ir.nodes import Const, Op, Value, Var
from cubepy.ir.opcodes import PURE
from cubepy.ir.types import Type

from .common import CpuCompileError
from .lanes import Lanes
from .llvmtext import const, ltype


class RegionMixin:
    lanes = Lanes.unit(None)         # the lanes being emitted (cube-level code: one lane, no unit)
    mask: str | None = None          # a gang's active lanes (an <n x i1>); None for one unit

    # --- values ---------------------------------------------------------------------------

    def _get_cube(self, v) -> str:
        """A constant or cube-invariant value, at cube level."""
        if isinstance(v, Const):
            return const(v.type, v.value)
        return self.inv[v.id]

    def _pure_or_leaf(self, op: Op) -> str:
        """An invariant op, emitted once per cube."""
        code = op.opcode
        if code == "param":
            return f"%p{op.attrs['index']}"
        if code == "shape":
            return f"%s{op.args[0].param_index}_{op.attrs['dim']}"
        if code == "builtin":
            name = op.attrs["name"]
            if name in self.cube_pos:
                return self.cube_pos[name]
            if name.startswith("cube_dim"):
                return str(self.dims["xyz".index(name[-1])])
            if name.startswith("cube_count"):
                return f"%cc{name[-1]}"
            if name == "plane_dim":
                return str(self.P)
            raise CpuCompileError(f"unknown builtin {name!r}", self.k.name, op.loc)
        saved = self.regs
        self.regs = {}
        r = self._pure(op, [self._get_cube(a) for a in op.args])
        self.regs = saved
        return r

    def _get(self, v) -> str:
        """``v`` on every lane: the register defining it, a constant, a cube-invariant value (a
        splat in a gang), a unit builtin or a slot load (each made on first use, then kept)."""
        if v.id in self.regs:
            return self.regs[v.id]
        if isinstance(v, Const):
            r = const(self.lanes.of(v.type), v.value)
        elif v.id in self.inv:
            r = self.lanes.splat(self.fn, self.inv[v.id], ltype(v.type))
        elif v.id in self.remat:
            r = self._builtin(self.remat[v.id])
        elif v.id in self.slot_off:
            r = self._load_lanes(self._slot_ptr(v.id, self.lanes.first), v.type)
        else:
            raise self._internal(v)
        self.regs[v.id] = r
        return r

    def _define(self, v: Value, r: str) -> None:
        self.regs[v.id] = r
        if v.id in self.slot_off:
            self._store_lanes(self._slot_ptr(v.id, self.lanes.first), v.type, r)

    def _internal(self, v) -> CpuCompileError:
        return CpuCompileError(f"internal: value {v!r} used outside its region", self.k.name, None)

    def _builtin(self, name: str) -> str:
        """A unit builtin of every lane, from its unit index."""
        fn, lanes = self.fn, self.lanes
        u, vt = lanes.units, lanes.vector("i32")
        dx, dy, _ = self.dims
        if self.unit_pos is not None and lanes.n == 1 and name in self.unit_pos:
            return self.unit_pos[name]        # in a unit loop nest over rows (`_unit_loop`)

        def c(n: int) -> str:
            return lanes.splat(fn, str(n), "i32")
        if name == "unit_pos_plane":
            return fn.op(f"and {vt} {u}, {c(self.P - 1)}")
        if name == "unit_pos_x":
            return u if dx == self.U else fn.op(f"urem {vt} {u}, {c(dx)}")
        if name == "unit_pos_y":
            return fn.op(f"urem {vt} {fn.op(f'udiv {vt} {u}, {c(dx)}')}, {c(dy)}")
        return fn.op(f"udiv {vt} {u}, {c(dx * dy)}")

    # --- per-unit memory: slots and variables ---------------------------------------------

    def _slot_ptr(self, key: int, u: str) -> str:
        """Where the slot of value or variable ``key`` holds unit ``u``'s element (the first of
        the lanes' consecutive elements)."""
        off, mty = self.slot_off[key]
        return self.fn.op(f"getelementptr {mty}, ptr {self._ws(off)}, i32 {u}")

    def _store_slot(self, v: Value, u: str, r: str) -> None:
        self._store_lanes(self._slot_ptr(v.id, u), v.type, r)

    def _load_lanes(self, p: str, t: Type) -> str:
        """The lanes' consecutive elements of IR type ``t`` at ``p``."""
        lt = self.lanes.of(t)
        return self._from_mem(self.fn.op(f"load {ltype(lt, True)}, ptr {p}, align {t.dtype.itemsize}"), lt)

    def _store_lanes(self, p: str, t: Type, r: str) -> None:
        """Store ``r`` to the lanes' consecutive elements at ``p``; in a gang only the active
        lanes change (a blend with the old contents)."""
        fn, lt = self.fn, self.lanes.of(t)
        mty, al = ltype(lt, True), t.dtype.itemsize
        if self.mask is None:
            fn.emit(f"store {mty} {self._to_mem(r, lt)}, ptr {p}, align {al}")
            return
        old = fn.op(f"load {mty}, ptr {p}, align {al}")
        new = fn.op(f"select {self.lanes.vector('i1')} {self.mask}, {mty} {self._to_mem(r, lt)}, {mty} {old}")
        fn.emit(f"store {mty} {new}, ptr {p}, align {al}")

    def _from_mem(self, r: str, t: Type) -> str:
        if t.dtype.is_bool:
            zero = "zeroinitializer" if t.width > 1 else "0"
            return self.fn.op(f"icmp ne {ltype(t, True)} {r}, {zero}")
        return r

    def _to_mem(self, r: str, t: Type) -> str:
        if t.dtype.is_bool:
            return self.fn.op(f"zext {ltype(t)} {r} to {ltype(t, True)}")
        return r

    def _var_ptr(self, var: Var) -> str:
        """A variable's lanes: its slot, the gang's register copy of its slot, or a stack slot."""
        if var.id in self.slot_local:
            return self.slot_local[var.id]
        if var.id in self.slot_off:
            return self._slot_ptr(var.id, self.lanes.first)
        key = (var.id, self.lanes.n)
        if key not in self.var_alloca:
            self.var_alloca[key] = self.fn.alloca(ltype(self.lanes.of(var.type), True), self.lanes.align)
        return self.var_alloca[key]

    def _load_var(self, var: Var) -> str:
        return self._load_lanes(self._var_ptr(var), var.type)

    def _store_var(self, var: Var, r: str) -> None:
        self._store_lanes(self._var_ptr(var), var.type, r)

    # --- for loops ------------------------------------------------------------------------

    def _for_start(self, op: Op) -> tuple[Var | None, str | None]:
        """Before a ``for``: its counter variable = start; stop and step in registers, where the
        loop's head and latch find them (self.regs). Returns (counter, stop), or Nones for a ``loop``."""
        if op.opcode != "for":
            return None, None
        var, (start, stop, step) = op.attrs["var"], op.args
        self._store_var(var, self._get(start))
        stop_v = self._get(stop)
        self._get(step)
        return var, stop_v

    def _for_cond(self, i: str, stop: str, step) -> str:
        """Does counter ``i`` still run (before ``stop``, in the direction of ``step``)?"""
        fn, vt, mt = self.fn, self.lanes.vector("i32"), self.lanes.vector("i1")
        if isinstance(step, Const):
            return fn.op(f"icmp {'slt' if step.value > 0 else 'sgt'} {vt} {i}, {stop}")
        pos = fn.op(f"icmp sgt {vt} {self._get(step)}, {self.lanes.zero}")
        return fn.op(f"select {mt} {pos}, {mt} {fn.op(f'icmp slt {vt} {i}, {stop}')}, "
                     f"{mt} {fn.op(f'icmp sgt {vt} {i}, {stop}')}")

    def _for_next(self, var: Var, step) -> None:
        """The counter ``var`` += ``step``."""
        i = self._load_var(var)
        self._store_var(var, self.fn.op(f"add {self.lanes.vector('i32')} {i}, {self._get(step)}"))

    # --- ops ------------------------------------------------------------------------------

    def _region_op(self, op: Op) -> None:
        """One op of the region on every lane. Buffer accesses and control flow go to the lowering
        of this width: real branches for one unit (no mask), the active-lane mask for a gang."""
        code = op.opcode
        if op.result is not None and (op.result.id in self.invariant or op.result.id in self.remat):
            return
        if code in PURE:
            self._define(op.result, self._pure(op, [self._get(a) for a in op.args]))
        elif code == "load_var":
            self._define(op.result, self._load_var(op.args[0]))
        elif code == "store_var":
            self._store_var(op.args[0], self._get(op.args[1]))
        elif code == "report_oob":
            self._report_oob(op)
        elif self.mask is None:
            self._unit_flow(op)
        else:
            self._gang_flow(op)
