"""Runs a kernel's IR with every unit of every cube in lockstep.

Each IR value is one NumPy array over the launch's N units (unit ``g`` is unit ``g % U`` of cube
``g // U``, U units per cube). Control flow keeps a mask of the units still running: ``if``
splits it, loops iterate while any unit is in, ``break``/``continue``/``return`` take units out
until their loop ends, their iteration ends, or for good.
"""

from __future__ import annotations

import math

import numpy as np

from cubepy.errors import OutOfBoundsError, RaceError, out_of_bounds
from cubepy.ir.nodes import PLANE_OPS, Block, Buffer, Const, Kernel, Op, Var, walk
from cubepy.runtime.launch_checks import launch_in_bounds

from .atomics import atomic
from .memory import Memory
from .ops import evaluate
from .planes import Planes
from .races import Conflict, Tracker
from .values import const_value, fit, np_dtype, per_unit, poison, unit_shape


def _coord(i, dims, axis: int):
    """Coordinate ``axis`` of linear index ``i`` (an int or array) in a grid of ``dims``."""
    if axis == 0:
        return i % dims[0]
    if axis == 1:
        return i // dims[0] % dims[1]
    return i // (dims[0] * dims[1])


def _coords(i: int, dims) -> tuple[int, int, int]:
    return tuple(int(_coord(i, dims, axis)) for axis in range(3))


class Launch:
    def __init__(self, kernel: Kernel, cube_count, cube_dim, args: list, plane_dim: int, races: bool):
        self.kernel, self.args, self.P = kernel, args, plane_dim
        self.cube_count, self.cube_dim = tuple(map(int, cube_count)), tuple(map(int, cube_dim))
        self.U, self.C = math.prod(self.cube_dim), math.prod(self.cube_count)
        self.N = n = self.U * self.C
        self.units = np.arange(n)
        self.planes = Planes(self.C, self.U, plane_dim)
        self.env: dict[int, np.ndarray] = {}
        self.consts: dict[int, np.ndarray] = {}
        self.builtins: dict[str, np.ndarray] = {}
        self.vars = {v.id: poison(unit_shape(n, v.type), np_dtype(v.type)) for v in kernel.vars}
        self.mem: dict[int, Memory] = {}
        for i, p in enumerate(kernel.params):
            if isinstance(p, Buffer):
                self.mem[p.id] = Memory.global_(p, args[i])
        for b in kernel.buffers:
            self.mem[b.id] = Memory.private(b, self.C if b.kind == "shared" else n)
        self.returned = np.zeros(n, bool)
        self.continues: list[np.ndarray] = []               # per enclosing loop: units that continued
        self.oob: OutOfBoundsError | None = None
        self.ops = list(walk(kernel.body))
        self.op_index = {id(op): i for i, op in enumerate(self.ops)}
        shared = {b.id for b in kernel.buffers if b.kind == "shared"}
        self.trackers = {bid: Tracker(len(m.flat), unwritten_reads=bid in shared) for bid, m in self.mem.items()
                         if races and m.copies != "unit"}

    def run(self) -> None:
        if self.N:
            with np.errstate(all="ignore"):
                self.block(self.kernel.body, np.ones(self.N, bool))
        if self.oob is not None:
            raise self.oob

    # --- values ---------------------------------------------------------------------------

    def value(self, a) -> np.ndarray:
        if isinstance(a, Const):
            if a.id not in self.consts:
                self.consts[a.id] = const_value(a)
            return self.consts[a.id]
        return self.env[a.id]

    def where(self, unit: int) -> str:
        lin, cube = self.unit_and_cube(unit)
        return f"unit {lin} of cube {cube}"

    def unit_and_cube(self, unit: int) -> tuple[tuple, tuple]:
        cube, lin = divmod(unit, self.U)
        return _coords(lin, self.cube_dim), _coords(cube, self.cube_count)

    # --- blocks and control flow ----------------------------------------------------------

    def block(self, block: Block, mask: np.ndarray) -> np.ndarray:
        """Run ``block`` for the units in ``mask``; return those that reach its end."""
        if not mask.any():
            return mask
        for op in block.ops:
            code = op.opcode
            if code in CONTROL:
                mask = CONTROL[code](self, op, mask)
                if not mask.any():
                    return mask
                continue
            handler = HANDLERS.get(code)
            r = handler(self, op, mask) if handler else evaluate(op, [self.value(a) for a in op.args])
            if op.attrs.get("nowrap"):
                self._check_nowrap(op, mask)
            if op.result is not None:
                self.env[op.result.id] = r
        return mask

    def _check_nowrap(self, op: Op, mask) -> None:
        """An op marked nowrap (ir/cube_checks.py) must not overflow i32 on any running unit."""
        a, b = (np.broadcast_to(np.asarray(self.value(x), np.int64), mask.shape)[mask] for x in op.args[:2])
        exact = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op.opcode](a, b)
        if exact.size and (exact.min() < -2**31 or exact.max() > 2**31 - 1):
            raise AssertionError(f"kernel '{self.kernel.name}': {op.opcode} marked nowrap overflows i32 "
                                 f"({int(exact.min())}..{int(exact.max())}): an unsound cube-level test")

    def _if(self, op: Op, mask):
        cond = self.value(op.args[0])
        then = self.block(op.blocks[0], mask & cond)
        other = mask & ~cond
        if len(op.blocks) > 1:
            other = self.block(op.blocks[1], other)
        return then | other

    def _loop(self, op: Op, mask, var: Var | None = None, stop=None, step=None):
        live = mask
        self.continues.append(np.zeros(self.N, bool))
        while True:
            if var is not None:
                i = self.vars[var.id]
                live = live & np.where(step > 0, i < stop, i > stop)
            if not live.any():
                break
            live = self.block(op.blocks[0], live) | self.continues[-1]
            self.continues[-1] = np.zeros(self.N, bool)
            if var is not None:
                self._store_var(var, fit(self.vars[var.id] + step, var.type), live)
        self.continues.pop()
        return mask & ~self.returned          # units that broke out or finished rejoin

    def _for(self, op: Op, mask):
        start, stop, step = (self.value(a) for a in op.args)
        var = op.attrs["var"]
        self._store_var(var, start, mask)
        return self._loop(op, mask, var, stop, step)

    def _break(self, op: Op, mask):
        return np.zeros(self.N, bool)

    def _continue(self, op: Op, mask):
        self.continues[-1] = self.continues[-1] | mask
        return np.zeros(self.N, bool)

    def _return(self, op: Op, mask):
        self.returned |= mask
        return np.zeros(self.N, bool)

    # --- builtins, parameters, variables --------------------------------------------------

    def _builtin(self, op: Op, mask):
        name = op.attrs["name"]
        if name not in self.builtins:
            axis = "xyz".find(name[-1])
            lin = self.units % self.U if name.startswith("unit_pos") else None
            cube = self.units // self.U if name.startswith("cube_pos") else None
            if name == "plane_dim":
                v = self.P
            elif name == "unit_pos_plane":
                v = lin % self.P
            elif name.startswith("unit_pos"):
                v = _coord(lin, self.cube_dim, axis)
            elif name.startswith("cube_pos"):
                v = _coord(cube, self.cube_count, axis)
            elif name.startswith("cube_dim"):
                v = self.cube_dim[axis]
            elif name.startswith("cube_count"):
                v = self.cube_count[axis]
            else:
                raise ValueError(f"unknown builtin {name!r}")
            self.builtins[name] = np.asarray(v, np.int32)
        return self.builtins[name]

    def _param(self, op: Op, mask):
        return np.asarray(self.args[op.attrs["index"]]).astype(np_dtype(op.result.type))

    def _launch_in_bounds(self, op: Op, mask):
        view = [self.mem[p.id] if isinstance(p, Buffer) else self.args[k] for k, p in enumerate(self.kernel.params)]
        return np.asarray(launch_in_bounds(self.kernel, self.cube_count, self.cube_dim, view))

    def _shape(self, op: Op, mask):
        return np.asarray(self.mem[op.args[0].id].shape[op.attrs["dim"]], np.int32)

    def _load_var(self, op: Op, mask):
        return self.vars[op.args[0].id]

    def _store_var(self, var: Var, value, mask) -> None:
        m = mask if var.type.width == 1 else mask[:, None]
        self.vars[var.id] = np.where(m, value, self.vars[var.id])

    def _store_var_op(self, op: Op, mask):
        self._store_var(op.args[0], self.value(op.args[1]), mask)

    # --- memory -----------------------------------------------------------------------------

    def _access(self, op: Op, mask, buf: Buffer, index_args):
        """Bounds-check the active units' indices: (selection, unit ids, flat addresses) of the
        in-bounds ones, or None if there are none. The first out-of-bounds access is recorded."""
        mem = self.mem[buf.id]
        sel = slice(None) if mask.all() else np.flatnonzero(mask)
        units = self.units[sel]
        idx = [np.broadcast_to(self.value(a), (self.N,))[sel] for a in index_args]
        ok = mem.in_bounds(idx)
        if ok is not None:
            bad = int(np.argmax(~ok))
            # the reference semantics doubles as the proofs' oracle ("nonempty": in bounds wherever
            # the extent is not 0)
            claimed = (*op.attrs.get("proven", ()), *(d for d in op.attrs.get("nonempty", ()) if mem.shape[d] > 0))
            if claimed:
                raise AssertionError(f"kernel '{self.kernel.name}': the access to '{buf.name}' at "
                                     f"{[int(i[bad]) for i in idx]} was proven in bounds (dimensions "
                                     f"{claimed}) but is not: an unsound bounds proof")
            self._record_oob(op, buf.name, [int(i[bad]) for i in idx], mem.shape, int(units[bad]))
            sel = units = units[ok]
            idx = [i[ok] for i in idx]
            if not len(units):
                return None
        copy = None if mem.copies is None else (units // self.U if mem.copies == "cube" else units)
        return sel, units, mem.address(idx, copy)

    def _record_oob(self, op: Op, name: str, index, shape, unit: int) -> None:
        if self.oob is None:  # the first one of the launch is reported after it
            self.oob = out_of_bounds(self.kernel.name, name, index, shape, *self.unit_and_cube(unit), op.loc)

    def _report_oob(self, op: Op, mask):
        """args (*indices, *extents): the units in ``mask`` skipped an out-of-bounds access."""
        if self.oob is None:
            unit = int(np.argmax(mask))
            vals = [int(np.broadcast_to(self.value(a), (self.N,))[unit]) for a in op.args]
            k = len(vals) // 2
            self._record_oob(op, op.attrs.get("array", "?"), vals[:k], vals[k:], unit)

    def _track(self, op: Op, buf: Buffer, addr, units, write: bool) -> None:
        tracker = self.trackers.get(buf.id)
        if tracker is None:
            return
        addr = np.broadcast_to(np.asarray(addr, np.int64), units.shape)
        k = self.op_index[id(op)]
        found = tracker.write(addr, units, k) if write else tracker.read(addr, units, k)
        if found is not None:
            raise RaceError(self._race_message(buf, found, op), self.kernel.name, op.loc)

    def _same_step_writes(self, op: Op, buf: Buffer, addr, units, values) -> None:
        """Without race tracking, still refuse the race every GPU resolves differently: units of
        one step of one store writing different values to one element (``y[0] = f(i)`` from every
        unit). Costs a pass over the addresses when they increase, which is the common case."""
        if len(units) < 2:
            return
        addr = np.broadcast_to(np.asarray(addr, np.int64), units.shape)
        if addr.ndim == 1 and (addr[1:] > addr[:-1]).all():
            return
        order = np.argsort(addr, kind="stable")
        a, v = addr[order], values[order]
        same_addr = a[1:] == a[:-1]
        if not same_addr.any():
            return
        equal = v[1:] == v[:-1]
        if v.dtype.kind in "fc":
            equal |= np.isnan(v[1:]) & np.isnan(v[:-1])
        if equal.ndim > 1:                                       # Lines: every lane the same
            equal = equal.all(axis=tuple(range(1, equal.ndim)))
        clash = np.flatnonzero(same_addr & ~equal)
        if len(clash):
            k = int(clash[0])
            first, second = int(units[order[k]]), int(units[order[k + 1]])
            index, _ = self.mem[buf.id].index_of(int(a[k]))
            line = f" (line {op.loc.line})" if op.loc is not None else ""
            raise RaceError(
                f"data race on {buf.kind} array '{buf.name}' element {index}: {self.where(first)} and "
                f"{self.where(second)} wrote different values to it in the same store{line}; which one "
                "lands differs between devices. Write from one unit (if cb.UNIT_POS == 0: ...), or use an "
                "atomic; races=True reports every race, reads included", self.kernel.name, op.loc)

    def _race_message(self, buf: Buffer, c: Conflict, op: Op) -> str:
        mem = self.mem[buf.id]
        index, _ = mem.index_of(c.addr)
        if c.first_did == "never wrote":
            line = f" (line {op.loc.line})" if op.loc is not None else ""
            return (f"{self.where(c.second_unit)} read {buf.kind} array '{buf.name}' element {index}{line}, "
                    "which no unit of its cube wrote: shared memory starts undefined (NaN on the interpreter, "
                    "0 or old data on other devices); write it before the sync_cube() that precedes the read")

        def line(o: Op) -> str:
            return f" (line {o.loc.line})" if o.loc is not None else ""

        order = "atomic or sync_cube()" if buf.kind == "shared" else "atomic"
        return (f"data race on {buf.kind} array '{buf.name}' element {index}: "
                f"{self.where(c.first_unit)} {c.first_did} it{line(self.ops[c.first_op])} and "
                f"{self.where(c.second_unit)} {c.second_did} it{line(op)}, with no {order} between")

    def _load(self, op: Op, mask):
        buf = op.args[0]
        out_shape, dtype = unit_shape(self.N, op.result.type), np_dtype(op.result.type)
        acc = self._access(op, mask, buf, op.args[1:])
        if acc is None:
            return np.zeros(out_shape, dtype)
        sel, units, addr = acc
        self._track(op, buf, addr, units, write=False)
        data = self.mem[buf.id].flat[addr]
        if isinstance(sel, slice):
            return data
        out = np.zeros(out_shape, dtype)
        out[sel] = data
        return out

    def _store(self, op: Op, mask):
        buf = op.args[0]
        acc = self._access(op, mask, buf, op.args[1:-1])
        if acc is not None:
            sel, units, addr = acc
            self._track(op, buf, addr, units, write=True)
            values = per_unit(self.value(op.args[-1]), self.N, buf.type)[sel]
            if buf.id not in self.trackers and self.mem[buf.id].copies != "unit":
                self._same_step_writes(op, buf, addr, units, values)
            self.mem[buf.id].flat[addr] = values

    def _atomic(self, op: Op, mask):
        buf, kind = op.args[0], op.attrs["op"]
        nvals = 2 if kind == "cas" else 1
        out = np.zeros(unit_shape(self.N, op.result.type), np_dtype(op.result.type))
        acc = self._access(op, mask, buf, op.args[1:-nvals])
        if acc is not None:
            sel, _, addr = acc
            vals = [per_unit(self.value(a), self.N, buf.type)[sel] for a in op.args[-nvals:]]
            addr = np.broadcast_to(np.asarray(addr, np.int64), vals[0].shape)
            if buf.id in self.trackers:              # atomics are not races, but they do write
                self.trackers[buf.id].written[addr] = True
            out[sel] = atomic(kind, self.mem[buf.id].flat, addr, vals[-1], vals[0] if nvals == 2 else None)
        return out

    def _sync_cube(self, op: Op, mask):
        cubes = mask.reshape(self.C, self.U).any(axis=1)
        for bid, tracker in self.trackers.items():
            mem = self.mem[bid]
            if mem.copies == "cube":
                tracker.reset(cubes, mem.size)        # a new epoch for the cubes that synced

    def _plane(self, op: Op, mask):
        x = per_unit(self.value(op.args[0]), self.N, op.args[0].type) if op.args else None
        arg = self.value(op.args[1]) if len(op.args) > 1 else None
        dtype = op.args[0].type.dtype if op.args else None
        return fit(self.planes.apply(op.opcode, mask, x, arg, dtype), op.result.type)


CONTROL = {"if": Launch._if, "for": Launch._for, "loop": Launch._loop, "break": Launch._break,
           "continue": Launch._continue, "return": Launch._return}
HANDLERS = {
    "builtin": Launch._builtin, "param": Launch._param, "shape": Launch._shape,
    "launch_in_bounds": Launch._launch_in_bounds,
    "load_var": Launch._load_var, "store_var": Launch._store_var_op,
    "load": Launch._load, "store": Launch._store, "atomic": Launch._atomic,
    "sync_cube": Launch._sync_cube, "report_oob": Launch._report_oob,
    **{code: Launch._plane for code in PLANE_OPS},
}
