"""Accesses proven in bounds at compile time, so checked mode need not test them at run time.

`prove_in_bounds(kernel)` marks, on every checked load, store and atomic, the dimensions whose
index is known to lie in ``[0, extent)``; `passes.lower_bounds_checks` then tests only the others.
A dimension is proven when, where the access runs:

- its index is at least 0: a non-negative constant, a topology value (unit, cube and absolute
  positions, counts) or a sum or product of such values whose every intermediate is bounded
  (below), a constant minus a value at most that constant (``CUBE_DIM - 1 - UNIT_POS``), a
  ``range`` counter whose start is at least 0 and whose step is positive, or a ``shape``;
- and it is below the extent: the access sits in the then-branch of ``if index < extent`` (also
  ``and`` of such tests, ``extent > index``, and the rest of a block after ``if index >= extent:
  return``), or it is a ``range`` counter whose stop is the extent, or its upper bound is below a
  static extent (shared or local memory of a compile-time size). A ``range`` counter with a
  constant stop is at most ``stop - 1``, and ``i // c`` (``i >= 0``, ``c`` a positive constant) at
  most ``i``'s bound ``// c``: ``tile[f // nd, f % nd]`` for ``f in range(u, rows * nd, step)``.

An index ``i % n`` with ``n`` an extent is at least 0 and below ``n`` unless ``n`` is 0 (then it is
0): such a dimension is marked ``nonempty`` and tested only for ``n > 0``; ``i % c`` for a positive
constant ``c`` is below ``c``.

Topology bounds are polynomials in the cube counts (``unit_pos_x <= dim_x - 1``, ``cube_pos_x <=
count_x - 1``, ...). A value built from them is proven to stay within ``[0, units]`` (``units``: the
launch's total unit count) when its bound is, as a polynomial, at most ``units`` for every count
>= 1; the kernel then records ``units_fit_index = True`` and the runtime refuses its launches of
more than ``INDEX_MAX`` units, so that such values never wrap. Everything else is left to the
run-time check: a wrong proof would let a kernel touch memory outside an array, so each rule is
conservative.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .nodes import Block, Const, Kernel, Op, Value, walk
from .types import INDEX_MAX, MAX_PROVEN_STEP

_CHECKED = ("load", "store", "atomic")
_AXES = "xyz"


# --- polynomial upper bounds in the cube counts ---------------------------------------------------

Poly = dict          # exponents of (count_x, count_y, count_z, dim_x, dim_y, dim_z) -> integer coefficient
_ONE = (0,) * 6      # the exponents of a constant term


def _const(n: int) -> Poly:
    return {_ONE: n} if n else {}


def _add(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v}


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ka, va in a.items():
        for kb, vb in b.items():
            k = tuple(x + y for x, y in zip(ka, kb))
            out[k] = out.get(k, 0) + va * vb
    return {k: v for k, v in out.items() if v}


def _variable(index: int) -> Poly:
    exps = [0] * 6
    exps[index] = 1
    return {tuple(exps): 1}


def _count(axis: int) -> Poly:
    return _variable(axis)


def _dim(axis: int) -> Poly:
    """A cube extent read at run time (shape-generic kernels)."""
    return _variable(3 + axis)


def _nonneg_for_counts_at_least_1(p: Poly) -> bool:
    """Whether ``p >= 0`` for all integer counts (and run-time cube extents) >= 1: every
    coefficient of ``p(1 + u, ...)`` is >= 0 (sufficient, since every u >= 0)."""
    return _nonneg_shifted(frozenset(p.items()))


@functools.lru_cache(maxsize=4096)
def _nonneg_shifted(terms: frozenset) -> bool:
    # kernels ask about the same few polynomials (the unit count minus a position's bound) in
    # every trace: the expansion is kept per polynomial
    p = dict(terms)
    shifted: Poly = {}
    for exps, coeff in p.items():
        term: Poly = {_ONE: coeff}
        for index, e in enumerate(exps):
            one_plus = _add(_const(1), _variable(index))
            for _ in range(e):
                term = _mul(term, one_plus)
        shifted = _add(shifted, term)
    return all(v >= 0 for v in shifted.values())


# --- facts ------------------------------------------------------------------------------------

@dataclass
class _Facts:
    """What holds for a value: at least 0, below which extents, bounded by which polynomial."""

    nonneg: bool = False
    below: frozenset = frozenset()     # extent keys: ("shape", buffer id, dim) or ("const", n)
    bound: Poly | None = None          # an upper bound in the cube counts (topology values only)
    uses_units: bool = False           # proven only if the launch has at most INDEX_MAX units
    below_if_nonempty: frozenset = frozenset()   # extents it is below when they are not 0 (then it is 0)


@dataclass
class _Scope:
    """Facts of SSA values (by value number) and of variables, along one path of the kernel."""

    values: dict = field(default_factory=dict)
    vars: dict = field(default_factory=dict)          # var id -> value number of its last store

    def child(self) -> _Scope:
        return _Scope(dict(self.values), dict(self.vars))


class _Prover:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.dims = kernel.cube_dim
        # an extent read at run time (None: shape-generic) is a variable, like the counts
        self.extents = [_dim(axis) if d is None else _const(d) for axis, d in enumerate(self.dims)]
        self.units = _mul(_mul(_mul(_mul(_mul(_count(0), _count(1)), _count(2)), self.extents[0]), self.extents[1]),
                          self.extents[2])
        self.numbers: dict[tuple, int] = {}     # structural key of a pure op -> value number
        self.number_of: dict[int, int] = {}     # value id -> value number
        self.defs: dict[int, Op] = {}           # value number -> the op that first defined it
        self.used_units = False

    # value numbering: equal pure computations are one value
    def number(self, v) -> int | tuple:
        if isinstance(v, Const):
            return ("const", v.value, v.type.dtype.name)
        if isinstance(v, Value):
            return self.number_of.get(v.id, v.id)
        return ("buffer", id(v))

    def define(self, op: Op) -> None:
        if op.result is None:
            return
        if op.opcode in ("load", "load_var", "atomic", "param") or op.blocks:
            self.number_of[op.result.id] = op.result.id
            self.defs.setdefault(op.result.id, op)
            return
        key = (op.opcode, tuple(self.number(a) for a in op.args), tuple(sorted((k, repr(v)) for k, v in
                                                                             op.attrs.items())), op.result.type)
        found = self.numbers.setdefault(key, op.result.id)
        self.number_of[op.result.id] = found
        self.defs.setdefault(found, op)

    def facts(self, v, scope: _Scope) -> _Facts:
        if isinstance(v, Const):
            if isinstance(v.value, int) and not isinstance(v.value, bool) and v.value >= 0:
                return _Facts(True, frozenset(), _const(v.value))
            return _Facts()
        n = self.number(v)
        found = scope.values.get(n)
        return found if found is not None else _Facts()

    # --- what an op's result is known to be ---------------------------------------------------

    def derive(self, op: Op, scope: _Scope) -> None:
        if op.result is None or not op.result.type.dtype.is_int or op.result.type.width != 1:
            return
        n = self.number(op.result)
        known = scope.values.get(n)
        found = self._derived(op, scope)
        if found is not None and (known is None or not known.nonneg):
            scope.values[n] = found

    def _derived(self, op: Op, scope: _Scope) -> _Facts | None:
        code = op.opcode
        if code == "builtin":
            name = op.attrs.get("name", "")
            axis = _AXES.index(name[-1]) if name[-2:-1] == "_" and name[-1] in _AXES else None
            if name.startswith("unit_pos_") and axis is not None:
                below = frozenset() if self.dims[axis] is None else frozenset({("const", self.dims[axis])})
                return _Facts(True, below, _add(self.extents[axis], _const(-1)))
            if name.startswith("cube_dim_") and axis is not None:
                return _Facts(True, frozenset(), self.extents[axis])
            if name.startswith("cube_pos_") and axis is not None:
                return _Facts(True, frozenset(), _add(_count(axis), _const(-1)))
            if name.startswith("cube_count_") and axis is not None:
                return _Facts(True, frozenset(), _count(axis))
            if name == "unit_pos_plane":
                plane = self.kernel.plane_dim
                return _Facts(True, frozenset({("const", plane)}), _const(plane - 1))
            return None
        if code == "shape":
            return _Facts(True)
        if code == "mod":
            # cubepy's % floors and gives 0 for a divisor of 0, so ``i % n`` for an extent n lies in
            # [0, n) and is 0 where n is 0 (``x[(i + 1) % len(x)]``: only ``len(x) > 0`` is left)
            key = self.extent_key(op.args[1])
            if key is None:
                return None
            if key[0] == "const":
                return _Facts(True, frozenset({key}), _const(key[1] - 1)) if key[1] > 0 else None
            return _Facts(True, below_if_nonempty=frozenset({key}))
        if code == "floordiv":
            # ``i // c`` for ``i >= 0`` and a positive constant ``c``: at least 0, and at most
            # ``bound // c`` (``f // nd`` of a counter below a constant stop: a row of a tile)
            a, divisor = self.facts(op.args[0], scope), op.args[1]
            if not (a.nonneg and isinstance(divisor, Const) and isinstance(divisor.value, int)
                    and divisor.value > 0):
                return None
            bound = _constant(a.bound)
            if bound is None:
                return _Facts(True, uses_units=a.uses_units)
            return _Facts(True, frozenset({("const", bound // divisor.value + 1)}), _const(bound // divisor.value),
                          uses_units=a.uses_units)
        if code in ("add", "mul"):
            a, b = (self.facts(x, scope) for x in op.args)
            if not (a.nonneg and b.nonneg and a.bound is not None and b.bound is not None):
                return None
            bound = _add(a.bound, b.bound) if code == "add" else _mul(a.bound, b.bound)
            if _constant(bound) is not None:          # a constant
                value = _constant(bound)
                if value > INDEX_MAX:
                    return None
                return _Facts(True, frozenset({("const", value + 1)}), bound)
            if not _nonneg_for_counts_at_least_1(_add(self.units, _neg(bound))):     # bound <= units
                return None
            return _Facts(True, frozenset(), bound, uses_units=True)
        if code == "sub":
            # a constant minus a value at most that constant (CUBE_DIM - 1 - UNIT_POS): in [0, constant]
            first, b = op.args[0], self.facts(op.args[1], scope)
            if not (isinstance(first, Const) and isinstance(first.value, int)):   # a bound of it would not do
                return None
            ca, cb_ = first.value, _constant(b.bound)
            if b.nonneg and cb_ is not None and 0 <= cb_ <= ca:
                return _Facts(True, frozenset({("const", ca + 1)}), _const(ca))
            return None
        if code == "cast" and op.args and isinstance(op.args[0], Value):
            source = self.facts(op.args[0], scope)
            src, dst = op.args[0].type.dtype, op.result.type.dtype
            widening = dst.bits >= src.bits and dst.bits >= 32
            # a narrowing keeps the facts only of a value below an extent (so it fits i32)
            fits = dst.bits >= 32 and bool(source.below)
            fits = fits or dst.bits >= 32 and bool(source.below_if_nonempty)
            if source.nonneg and src.is_int and dst.is_int and (widening or fits):
                return source if widening else _Facts(True, source.below,
                                                      below_if_nonempty=source.below_if_nonempty)
        return None

    # --- conditions ---------------------------------------------------------------------------

    def extent_key(self, v) -> tuple | None:
        if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
            return ("const", v.value)
        op = self.defs.get(self.number(v)) if isinstance(v, Value) else None
        if op is not None and op.opcode == "shape":
            return ("shape", id(op.args[0]), op.attrs["dim"])
        if op is not None and op.opcode == "cast" and isinstance(op.args[0], Value):
            # an extent widened (``i64(len(x))``, as ``i64 % len(x)`` promotes it) is the same number
            src, dst = op.args[0].type.dtype, op.result.type.dtype
            if src.is_int and dst.is_int and dst.bits >= src.bits and op.result.type.width == 1:
                key = self.extent_key(op.args[0])
                return key if key is not None and key[0] == "shape" else None
        return None

    def comparisons(self, cond, truth: bool) -> list[tuple]:
        """``(index value, extent key)`` pairs that hold where ``cond`` is ``truth``."""
        op = self.defs.get(self.number(cond)) if isinstance(cond, Value) else None
        if op is None:
            return []
        code = op.opcode
        if code == "and" and truth or code == "or" and not truth:
            return [c for a in op.args for c in self.comparisons(a, truth)]
        if code == "not":
            return self.comparisons(op.args[0], not truth)
        pairs = {"lt": (0, 1, True), "gt": (1, 0, True), "ge": (0, 1, False), "le": (1, 0, False)}
        if code not in pairs:
            return []
        i, e, holds_when = pairs[code]
        if truth != holds_when:
            return []
        key = self.extent_key(op.args[e])
        return [(op.args[i], key)] if key is not None else []

    def assume(self, cond, truth: bool, scope: _Scope) -> None:
        for index, key in self.comparisons(cond, truth):
            n = self.number(index)
            known = scope.values.get(n) or _Facts()
            scope.values[n] = _Facts(known.nonneg, known.below | {key}, known.bound, known.uses_units)

    # --- walking the kernel -------------------------------------------------------------------

    def block(self, block: Block, scope: _Scope) -> None:
        for op in block.ops:
            self.define(op)
            code = op.opcode
            if code == "load_var":
                last = scope.vars.get(op.args[0].id)
                if last is not None:
                    self.number_of[op.result.id] = last
                else:
                    self.derive(op, scope)
            elif code == "store_var":
                scope.vars[op.args[0].id] = self.number(op.args[1])
            elif code == "if":
                then, other = scope.child(), scope.child()
                self.assume(op.args[0], True, then)
                self.block(op.blocks[0], then)
                if len(op.blocks) > 1:
                    self.assume(op.args[0], False, other)
                    self.block(op.blocks[1], other)
                self._forget_stored(op, scope)
                if _always_leaves(op.blocks[0]) and (len(op.blocks) < 2 or not op.blocks[1].ops):
                    self.assume(op.args[0], False, scope)     # "if index >= n: return" guards the rest
            elif code == "for":
                self._for(op, scope)
            elif code == "loop":
                inner = scope.child()
                self._forget_stored(op, inner)
                self.block(op.blocks[0], inner)
                self._forget_stored(op, scope)
            else:
                self.derive(op, scope)
                if code in _CHECKED and op.attrs.get("checked"):
                    self.mark(op, scope)

    def _for(self, op: Op, scope: _Scope) -> None:
        start, stop, step = op.args[:3]
        counter = op.attrs["var"]
        inner = scope.child()
        self._forget_stored(op, inner)
        start_facts, step_facts = self.facts(start, scope), self.facts(step, scope)
        positive_step = isinstance(step, Const) and isinstance(step.value, int) and step.value > 0
        key = self.extent_key(stop)
        if positive_step or step_facts.nonneg:
            marker = ("counter", counter.id)
            below = frozenset({key}) if key is not None and positive_step else frozenset()
            # the counter stays at least its start unless ``counter += step`` wraps past INDEX_MAX:
            # never with step 1 (counter < stop <= INDEX_MAX), nor with a step up to MAX_PROVEN_STEP
            # towards an extent (at most ARRAY_MAX), nor below a constant stop far enough from it
            no_wrap = positive_step and (
                step.value == 1 or (key is not None and key[0] == "shape" and step.value <= MAX_PROVEN_STEP)
                or (isinstance(stop, Const) and isinstance(stop.value, int)
                    and stop.value <= INDEX_MAX - step.value + 1))
            # with a positive step the body runs where ``counter < stop``: a constant stop bounds it
            # (``for f in range(u, 1600, 128)``); a step that may be 0 runs where counter > stop
            # (such a counter is not known non-negative either, so no proof uses it)
            bound = _const(stop.value - 1) if positive_step and isinstance(stop, Const) \
                and isinstance(stop.value, int) and 1 <= stop.value <= INDEX_MAX + 1 else None
            inner.values[marker] = _Facts(start_facts.nonneg and no_wrap, below, bound,
                                          start_facts.uses_units)
            inner.vars[counter.id] = marker
        self.block(op.blocks[0], inner)
        self._forget_stored(op, scope)

    def _forget_stored(self, op: Op, scope: _Scope) -> None:
        for b in op.blocks:
            for inner in walk(b):
                if inner.opcode == "store_var":
                    scope.vars.pop(inner.args[0].id, None)

    def mark(self, op: Op, scope: _Scope) -> None:
        buf = op.args[0]
        ndim = buf.rank
        proven, nonneg, nonempty = [], [], []
        for dim, index in enumerate(op.args[1:1 + ndim]):
            facts = self.facts(index, scope)
            if not facts.nonneg:
                continue
            nonneg.append(dim)
            self.used_units |= facts.uses_units
            key = ("const", buf.shape[dim]) if buf.shape is not None else ("shape", id(buf), dim)
            bound = _constant(facts.bound)
            within = key in facts.below or (key[0] == "const" and bound is not None and bound < key[1])
            if within:
                proven.append(dim)
            elif key in facts.below_if_nonempty:
                nonempty.append(dim)
        if proven:
            op.attrs["proven"] = tuple(proven)
        if nonneg:
            op.attrs["nonneg"] = tuple(nonneg)
        if nonempty:
            op.attrs["nonempty"] = tuple(nonempty)


def _constant(p: Poly | None) -> int | None:
    """The value of a bound that is a constant (no cube count in it), else None."""
    if p is None or any(k != _ONE for k in p):
        return None
    return p.get(_ONE, 0)


def _neg(p: Poly) -> Poly:
    return {k: -v for k, v in p.items()}


def _always_leaves(block: Block) -> bool:
    """Whether a block always ends in ``return`` (so code after its ``if`` runs only when the
    condition was false)."""
    return bool(block.ops) and block.ops[-1].opcode == "return"


def prove_in_bounds(kernel: Kernel) -> None:
    """Mark the dimensions of checked accesses proven in bounds (attr ``proven``) or at least 0
    (attr ``nonneg``: only the upper bound is tested then), and record
    whether a proof needs launches of at most INDEX_MAX units (``kernel.units_fit_index``)."""
    prover = _Prover(kernel)
    prover.block(kernel.body, _Scope())
    kernel.units_fit_index = prover.used_units
