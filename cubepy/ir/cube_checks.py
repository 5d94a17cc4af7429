"""Bounds checks once per cube instead of once per access (devices with ``checks_per_cube``: the
CPU, which runs a cube's units in a loop on one thread, and the GPUs (CUDA, HIP, OpenCL), where
per-access branches stop the compiler from merging loads).

An index computed by adds, subtracts and multiplications by cube-uniform values (parameters,
shapes, cube positions, constants), and floor divisions and remainders by positive cube-uniform
values, from unit positions and loop counters ranges over an interval that is known when the cube
starts. `check_per_cube` computes every such interval once, at the top
of the kernel, and versions the body::

    if every interval lies inside its extent:  the body, those accesses unchecked
    else:                                      the body as it was, every access checked

so a cube whose accesses are all in bounds runs the unchecked code, which vectorizes, and any
other cube runs exactly the checked code it ran before: the same report, the same skipped access.
Guards narrow the intervals: under ``if i < n`` (or after ``if i >= n: return``) ``i`` is at most
``n - 1``, so ``y[i]`` tests ``n <= len(y)`` and the last cube of a ragged launch passes too.

Soundness. The intervals come from interval arithmetic in i64 on every op of an index's
computation, and the test also requires each op's interval to lie inside i32. Each op's inputs
are then inside i32, so nothing overflows i64, and by induction no op wraps: every value is the
exact one and lies in its interval. The fast side marks those ops ``nowrap`` (the CPU emits them
as ``nsw``, which lets LLVM see consecutive addresses). A loop counter lies in
``[least start, greatest stop - 1]`` while ``counter += step`` cannot wrap, which the test
requires (a positive constant step only). A guard's bound holds for the units past the guard,
and an op's own i32 test uses the guards where the op runs, which the uses of its value are
inside of.

Launches (``launch=True``, CUDA, HIP and OpenCL). On a GPU every unit evaluates the cube's test. The same
analysis with the cube positions ranging over the cube count gives a test of the whole launch
(`launch_test`) over parameters, extents and the launch shape: the host evaluates it
(`cubepy.runtime.launch_checks`) and the kernel evaluates the cube's test only where the host's
answer (the ``launch_in_bounds`` op) is no.

Guards (``guards=True``, the CPU). An ``if`` without an else whose condition compares a tracked
value with a cube-uniform one (``if i < n:``, ``if i >= n: return``) is decided for the whole
cube by the same test (``hi(i) < n``); the fast side then has the condition constant, so its
loads and stores need no mask, and the cube that straddles the bound runs the original.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .linear import LinearForms
from .nodes import Block, Const, Kernel, Op, Value, Var, walk
from .opcodes import COMPARE, CUBE_BUILTINS, ELEMENTWISE, UNIT_BUILTINS
from .semantics import floordiv
from .types import INDEX, Type, bool_, i64

_CHECKED = ("load", "store", "atomic")
_CHAIN = ("add", "sub", "neg", "mul", "shl", "cast")
_CUBE_POSITIONS = ("cube_pos_x", "cube_pos_y", "cube_pos_z")
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "floordiv": floordiv,
         "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def _i32(t: Type) -> bool:
    return t == Type(INDEX)


@dataclass
class _Loop:
    start: Value
    stop: Value
    step: int
    caps: tuple = ()             # the guards where the loop starts


@dataclass
class _Scope:
    vars: dict = field(default_factory=dict)        # var id -> the value of its last store on this path
    # guards on this path: value id -> (lower bounds, upper bounds), cube-uniform values v with
    # v <= value resp. value <= v for every unit that gets here ("if i < n" caps i at n - 1)
    caps: dict = field(default_factory=dict)

    def child(self) -> _Scope:
        return _Scope(dict(self.vars), dict(self.caps))

    def key(self) -> tuple:
        return tuple(sorted(self.caps.items()))

    def cap(self, v: Value, lower, upper) -> None:
        lo, hi = self.caps.get(v.id, ((), ()))
        self.caps[v.id] = (lo + ((lower,) if lower is not None else ()), hi + ((upper,) if upper is not None else ()))


class _Analysis:
    """Which i32 values have an interval over the cube, and the accesses whose indices all do.
    With ``launch``, over the whole launch: cube positions range over the cube count instead of
    being known (`launch_test`)."""

    def __init__(self, kernel: Kernel, launch: bool = False):
        self.kernel, self.launch = kernel, launch
        self.defs: dict[int, Op] = {op.result.id: op for op in walk(kernel.body) if op.result is not None}
        self.uniform: set[int] = set()
        self.sources: dict[int, tuple] = {}         # value id -> ("op", op) | ("unit", name) | ("counter", loop)
        self.hoisted: list[tuple[Op, list[int], tuple]] = []      # (access, dims, caps where it runs)
        self.def_caps: dict[int, tuple] = {}        # value id -> caps where it is computed
        self.stored_vars = {op.args[0].id for op in walk(kernel.body) if op.opcode == "store_var"}
        # guards a whole cube may pass alike: (if op, [(a, code, b)] that hold iff it goes the
        # expected way, caps where it is, the expected truth of its condition)
        self.guards: list[tuple[Op, list, tuple, bool]] = []

    def known(self, v) -> bool:
        if isinstance(v, Const):
            return isinstance(v.value, int) and not isinstance(v.value, bool) and _i32(v.type)
        return isinstance(v, Value) and (v.id in self.uniform or v.id in self.sources)

    def _uniform_op(self, op: Op) -> bool:
        code = op.opcode
        if code in ("param", "shape"):
            return True
        if code == "builtin":
            name = op.attrs.get("name")
            return name in CUBE_BUILTINS and not (self.launch and name in _CUBE_POSITIONS)
        return code in ELEMENTWISE and all(isinstance(a, Const) or (isinstance(a, Value) and a.id in self.uniform)
                                     for a in op.args)

    def value(self, op: Op, scope: _Scope) -> None:
        r = op.result
        if r is None:
            return
        if self._uniform_op(op):
            self.uniform.add(r.id)
            return
        if not _i32(r.type):
            return
        code, args = op.opcode, op.args
        if code == "builtin" and op.attrs.get("name") in UNIT_BUILTINS:
            self.sources[r.id] = ("unit", op.attrs["name"])
        elif code == "builtin" and op.attrs.get("name") in _CUBE_POSITIONS:     # a launch's analysis
            self.sources[r.id] = ("cube", op.attrs["name"])
        elif code == "load_var":
            stored = scope.vars.get(args[0].id)
            if stored is not None:
                self.sources[r.id] = ("alias", stored)
        elif code in ("floordiv", "mod") and self.known(args[0]) and self._divisor(args[1]):
            self.sources[r.id] = ("op", op)
            self.def_caps[r.id] = scope.key()
        elif code in _CHAIN and all(self.known(a) for a in args):
            uniform_operand = any(isinstance(a, Const) or a.id in self.uniform for a in args)
            if code == "mul" and not uniform_operand:
                return
            if code == "shl" and not (isinstance(args[1], Const) and 0 <= args[1].value < 31):
                return
            if code == "cast" and not _i32(args[0].type):
                return
            self.sources[r.id] = ("op", op)
            self.def_caps[r.id] = scope.key()

    def _divisor(self, v) -> bool:
        """A divisor the intervals take: a positive constant or a cube-uniform i32 value (the
        test then requires it to be at least 1)."""
        if isinstance(v, Const):
            return self.known(v) and v.value > 0
        return isinstance(v, Value) and v.id in self.uniform and _i32(v.type)

    # --- guards -------------------------------------------------------------------------------

    _FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
    _NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}

    def assume(self, cond, truth: bool, scope: _Scope) -> None:
        """Caps that hold where ``cond`` is ``truth``: from compares of a tracked i32 value with a
        cube-uniform one, through ``and`` (true) and ``not``."""
        op = self.defs.get(cond.id) if isinstance(cond, Value) and not isinstance(cond, Const) else None
        if op is None:
            return
        code = op.opcode
        if code == "not":
            self.assume(op.args[0], not truth, scope)
        elif code == "and" and truth:
            self.assume(op.args[0], True, scope)
            self.assume(op.args[1], True, scope)
        elif code == "or" and not truth:
            self.assume(op.args[0], False, scope)
            self.assume(op.args[1], False, scope)
        elif code in self._FLIP and all(_i32(a.type) for a in op.args):
            a, b = op.args
            if not truth:
                code = self._NEGATE[code]
            if self.uniform_operand(a) and self.known(b) and not self.uniform_operand(b):
                a, b, code = b, a, self._FLIP[code]
            if not (self.uniform_operand(b) and self.known(a) and not self.uniform_operand(a)):
                return
            # a <code> b, b cube-uniform: store bounds as (value, offset): a <= b - 1 for "lt"
            if code == "lt":
                scope.cap(a, None, (b, -1))
            elif code == "le":
                scope.cap(a, None, (b, 0))
            elif code == "gt":
                scope.cap(a, (b, 1), None)
            else:
                scope.cap(a, (b, 0), None)

    def compares(self, cond, truth: bool) -> list | None:
        """``[(a, code, b)]``, ``a`` tracked and ``b`` cube-uniform, that all hold exactly where
        ``cond`` is ``truth`` (through ``and``, ``or`` and ``not``); None if there are none such."""
        op = self.defs.get(cond.id) if isinstance(cond, Value) and not isinstance(cond, Const) else None
        if op is None:
            return None
        code = op.opcode
        if code == "not":
            return self.compares(op.args[0], not truth)
        if (code == "and" and truth) or (code == "or" and not truth):
            left, right = self.compares(op.args[0], truth), self.compares(op.args[1], truth)
            return left + right if left is not None and right is not None else None
        if code not in self._FLIP or not all(_i32(a.type) for a in op.args):
            return None
        a, b = op.args
        if not truth:
            code = self._NEGATE[code]
        if self.uniform_operand(a) and self.known(b) and not self.uniform_operand(b):
            a, b, code = b, a, self._FLIP[code]
        if not (self.uniform_operand(b) and self.known(a) and not self.uniform_operand(a)):
            return None
        return [(a, code, b)]

    def _guard(self, op: Op, scope: _Scope) -> None:
        """Record an ``if`` without an else (``if i < n: ...``, ``if i >= n: return``) whose
        condition a cube's units may all decide alike."""
        if len(op.blocks) > 1 and op.blocks[1].ops:
            return
        expected = not _always_leaves(op.blocks[0])
        found = self.compares(op.args[0], expected)
        if found:
            self.guards.append((op, found, scope.key(), expected))

    def uniform_operand(self, v) -> bool:
        return isinstance(v, Const) or (isinstance(v, Value) and v.id in self.uniform)

    # --- walking ------------------------------------------------------------------------------

    def block(self, block: Block, scope: _Scope) -> None:
        for op in block.ops:
            code = op.opcode
            if code == "store_var":
                if self.known(op.args[1]):
                    scope.vars[op.args[0].id] = op.args[1]
                else:
                    scope.vars.pop(op.args[0].id, None)
            elif code == "if":
                self._guard(op, scope)
                for truth, b in zip((True, False), op.blocks):
                    inner = scope.child()
                    self.assume(op.args[0], truth, inner)
                    self.block(b, inner)
                _forget_stored(op, scope)
                if _always_leaves(op.blocks[0]) and (len(op.blocks) < 2 or not op.blocks[1].ops):
                    self.assume(op.args[0], False, scope)     # "if i >= n: return" guards the rest
            elif code == "for":
                self._for(op, scope)
            elif code == "loop":
                inner = scope.child()
                _forget_stored(op, inner)
                self.block(op.blocks[0], inner)
                _forget_stored(op, scope)
            else:
                self.value(op, scope)
                if code in _CHECKED and op.attrs.get("checked"):
                    self._access(op, scope)

    def _for(self, op: Op, scope: _Scope) -> None:
        start, stop, step = op.args[:3]
        counter = op.attrs["var"]
        inner = scope.child()
        _forget_stored(op, inner)
        if (self.known(start) and self.known(stop) and isinstance(step, Const) and isinstance(step.value, int)
                and step.value > 0 and counter.id not in self.stored_vars):
            marker = Value(Type(INDEX), f"{counter.name}_in_cube")
            self.sources[marker.id] = ("counter", _Loop(start, stop, step.value, scope.key()))
            inner.vars[counter.id] = marker
        self.block(op.blocks[0], inner)
        _forget_stored(op, scope)

    def _access(self, op: Op, scope: _Scope) -> None:
        buf = op.args[0]
        ndim = buf.rank
        proven = op.attrs.get("proven", ())
        dims = [dim for dim, index in enumerate(op.args[1:1 + ndim])
                if dim not in proven and _i32(index.type) and self.known(index)]
        if dims:
            self.hoisted.append((op, dims, scope.key()))


def _always_leaves(block: Block) -> bool:
    """Whether every unit running ``block`` leaves the kernel at its end (it ends in a return)."""
    return bool(block.ops) and block.ops[-1].opcode == "return"


def _forget_stored(op: Op, scope: _Scope) -> None:
    for b in op.blocks:
        for inner in walk(b):
            if inner.opcode == "store_var":
                scope.vars.pop(inner.args[0].id, None)


# --- the test at the top of the kernel ----------------------------------------------------------

class _Emitter:
    """Builds the test as IR ops: i64 interval arithmetic on clones of the cube-uniform values."""

    def __init__(self, analysis: _Analysis):
        self.a = analysis
        self.ops: list[Op] = []
        self.cloned: dict[int, Value] = {}
        self.intervals: dict[int, tuple] = {}
        self.memo: dict = {}
        self.conds: list[Value] = []
        self.nowrap: set[int] = set()               # ids of ops the test shows never wrap
        self.fitted: set[int] = set()
        self.wide = Type(i64)

    def emit(self, opcode: str, args: tuple, type_: Type, **attrs) -> Value:
        key = (opcode, tuple(map(_key, args)), _attrs_key(attrs) if attrs else (), type_)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = Value(type_)
            self.ops.append(Op(opcode, args, found, attrs))
        return found

    def clone(self, v):
        """The cube-uniform value ``v``, recomputed at the top of the kernel."""
        if isinstance(v, Const):
            return v
        if v.id not in self.cloned:
            op = self.a.defs[v.id]
            args = tuple(self.clone(x) if isinstance(x, Value) else x for x in op.args)
            self.cloned[v.id] = self.emit(op.opcode, args, op.result.type, **op.attrs)
        return self.cloned[v.id]

    def wide_const(self, n: int) -> Const:
        return Const(n, self.wide)

    def binary(self, code: str, a: Value, b: Value) -> Value:
        if code in ("add", "sub") and isinstance(b, Const) and b.value == 0:
            return a
        if code == "mul" and isinstance(b, Const) and b.value == 1:
            return a
        if isinstance(a, Const) and isinstance(b, Const) and code in _FOLD:
            value = _FOLD[code](a.value, b.value)
            return Const(value, Type(bool_) if isinstance(value, bool) else self.wide)
        return self.emit(code, (a, b), Type(bool_) if code in COMPARE or code == "and" else self.wide)

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        if isinstance(cond, Const):
            return a if cond.value else b
        return self.emit("select", (cond, a, b), self.wide)

    def ordered(self, p: Value, q: Value) -> tuple[Value, Value]:
        smaller = self.binary("le", p, q)
        return self.select(smaller, p, q), self.select(smaller, q, p)

    def inside_i32(self, lo: Value, hi: Value) -> None:
        self.conds += [self.binary("ge", lo, self.wide_const(_INT32_MIN)),
                       self.binary("le", hi, self.wide_const(_INT32_MAX))]

    def interval(self, v, caps: tuple) -> tuple[Value, Value]:
        """Least and greatest value of ``v`` for the units of the cube that pass the guards
        ``caps`` (the tests this needs are appended to ``conds``)."""
        if isinstance(v, Const):
            exact = self.wide_const(v.value)
            return exact, exact
        if v.id in self.a.uniform:
            exact = self.emit("cast", (self.clone(v),), self.wide)
            return exact, exact
        key = (v.id, caps)
        if key not in self.intervals:
            source = self.a.sources[v.id]
            if source[0] == "op":
                self.fits(source[1])
            lo, hi = self._interval(source, caps)
            lowers, uppers = dict(caps).get(v.id, ((), ()))
            for bound, offset in lowers:
                lo = self.extreme("max", lo, self.binary("add", self.interval(bound, ())[0], self.wide_const(offset)))
            for bound, offset in uppers:
                hi = self.extreme("min", hi, self.binary("add", self.interval(bound, ())[0], self.wide_const(offset)))
            self.intervals[key] = lo, hi
        return self.intervals[key]

    def extreme(self, which: str, a: Value, b: Value) -> Value:
        first = self.binary("le" if which == "min" else "ge", a, b)
        return self.select(first, a, b)

    def fits(self, op: Op) -> None:
        """Test once that ``op`` stays inside i32 wherever it runs; then it is marked nowrap."""
        if id(op) in self.fitted:
            return
        self.fitted.add(id(op))
        lo, hi = self.interval(op.result, self.a.def_caps[op.result.id])
        self.inside_i32(lo, hi)
        if op.opcode in ("add", "sub", "mul"):
            self.nowrap.add(id(op))

    def _interval(self, source: tuple, caps: tuple) -> tuple[Value, Value]:
        kind = source[0]
        if kind == "alias":
            return self.interval(source[1], caps)
        if kind == "unit":
            name = source[1]
            extent = None if name == "unit_pos_plane" else self.a.kernel.cube_dim["xyz".index(name[-1])]
            if name == "unit_pos_plane" or extent is not None:
                last = self.a.kernel.plane_dim - 1 if name == "unit_pos_plane" else extent - 1
                return self.wide_const(0), self.wide_const(last)
            extent = self.emit("builtin", (), Type(INDEX), name=f"cube_dim_{name[-1]}")     # read at run time
            return self.wide_const(0), self.binary("sub", self.emit("cast", (extent,), self.wide), self.wide_const(1))
        if kind == "cube":          # over a launch: 0 to the cube count - 1
            count = self.emit("builtin", (), Type(INDEX), name=f"cube_count_{source[1][-1]}")
            return self.wide_const(0), self.binary("sub", self.emit("cast", (count,), self.wide), self.wide_const(1))
        if kind == "counter":
            loop = source[1]
            start_lo, _ = self.interval(loop.start, loop.caps)
            _, stop_hi = self.interval(loop.stop, loop.caps)
            # counter += step never wraps: every unit's stop is at most INT32_MAX - step + 1
            self.conds.append(self.binary("le", stop_hi, self.wide_const(_INT32_MAX - loop.step + 1)))
            return start_lo, self.binary("sub", stop_hi, self.wide_const(1))
        op = source[1]
        code, args = op.opcode, op.args
        if code == "cast":
            return self.interval(args[0], caps)
        if code == "neg":
            lo, hi = self.interval(args[0], caps)
            return self.binary("sub", self.wide_const(0), hi), self.binary("sub", self.wide_const(0), lo)
        if code == "shl":
            lo, hi = self.interval(args[0], caps)
            scale = self.wide_const(1 << args[1].value)
            return self.binary("mul", lo, scale), self.binary("mul", hi, scale)
        if code in ("floordiv", "mod"):
            # a divisor d >= 1 (tested): floor division is monotone, and cubepy's % lies in [0, d)
            divisor, _ = self.interval(args[1], caps)
            self.conds.append(self.binary("ge", divisor, self.wide_const(1)))
            if code == "mod":
                return self.wide_const(0), self.binary("sub", divisor, self.wide_const(1))
            lo, hi = self.interval(args[0], caps)
            return self.binary("floordiv", lo, divisor), self.binary("floordiv", hi, divisor)
        (alo, ahi), (blo, bhi) = self.interval(args[0], caps), self.interval(args[1], caps)
        if code == "add":
            return self.binary("add", alo, blo), self.binary("add", ahi, bhi)
        if code == "sub":
            return self.binary("sub", alo, bhi), self.binary("sub", ahi, blo)
        # mul, one side cube-uniform (its interval is one value)
        (vlo, vhi), c = ((alo, ahi), blo) if self.a.uniform_operand(args[1]) else ((blo, bhi), alo)
        return self.ordered(self.binary("mul", vlo, c), self.binary("mul", vhi, c))

    def extent(self, buf, dim: int) -> Value:
        if buf.shape is not None:
            return self.wide_const(buf.shape[dim])
        shape = self.emit("shape", (buf,), Type(INDEX), dim=dim)
        return self.emit("cast", (shape,), self.wide)

    def all_of(self) -> Value:
        """The conjunction of the tests, each once, leaving out an i32 bound that a range test
        of the same value implies (``v >= 0`` implies ``v >= INT32_MIN``, ``v < extent`` implies
        ``v <= INT32_MAX``): on GPUs every unit evaluates the test, so its size matters."""
        defs = {op.result.id: op for op in self.ops if op.result is not None}

        def form(c):
            op = defs.get(c.id)
            return (op.opcode, op.args[0].id, op.args[1]) if op is not None and op.opcode in ("ge", "le", "lt") \
                else None
        forms = [form(c) for c in self.conds if not isinstance(c, Const)]
        nonneg = {f[1] for f in forms if f and f[0] == "ge" and isinstance(f[2], Const) and f[2].value >= 0}
        below = {f[1] for f in forms if f and f[0] == "lt" and self._at_most_int32_max(f[2])}
        # an i32 value widened to i64 lies inside i32: nothing to test
        widened = {v for v, op in defs.items() if op.opcode == "cast" and _i32(op.args[0].type)}
        kept, seen = [], set()
        for c in self.conds:
            if isinstance(c, Const):
                if not c.value:
                    return c
                continue
            f = form(c)
            implied = f is not None and isinstance(f[2], Const) and (
                (f[0] == "ge" and f[2].value == _INT32_MIN and (f[1] in nonneg or f[1] in widened))
                or (f[0] == "le" and f[2].value == _INT32_MAX and (f[1] in below or f[1] in widened)))
            if c.id in seen or implied:
                continue
            seen.add(c.id)
            kept.append(c)
        out = Const(True, Type(bool_))
        for c in self._merged(kept, defs):
            out = c if isinstance(out, Const) else self.emit("and", (out, c), Type(bool_))
        return out

    def _merged(self, conds: list, defs: dict) -> list:
        """``conds`` with the bounds of neighbours merged: of ``t + c >= b`` for several constants
        ``c`` only the least ``c`` is kept, of ``t + c < b`` only the greatest (the values are
        exact in i64, see Soundness), and ``v < n1 and v < n2`` becomes ``v < min(n1, n2)``:
        the three arrays of a stencil over ``x[i]``, ``x[i + 1]``, ``y[i + 1]`` ... need two
        compares, not one per access and side."""
        forms = LinearForms(defs)
        best: dict[tuple, tuple] = {}          # (compare, terms, bound) -> (offset, cond)
        others = []
        for c in conds:
            op = defs.get(c.id)
            if op is None or op.opcode not in ("ge", "gt", "le", "lt"):
                others.append(c)
                continue
            terms, offset = forms.of(op.args[0])
            key = (op.opcode, terms, forms.key(op.args[1]))
            kept = best.get(key)
            lower = op.opcode in ("ge", "gt")
            if kept is None or (offset < kept[0] if lower else offset > kept[0]):
                best[key] = (offset, c)
        below: dict[int, list] = {}            # value id -> the extents it must lie below
        for (code, _, _), (_, c) in best.items():
            op = defs[c.id]
            if code == "lt" and not isinstance(op.args[1], Const):
                below.setdefault(op.args[0].id, []).append(c)
            else:
                others.append(c)
        least: dict[tuple, Value] = {}
        for tests in below.values():
            if len(tests) == 1:
                others.append(tests[0])
                continue
            bounds = sorted((defs[c.id].args[1] for c in tests), key=lambda b: repr(forms.key(b)))
            key = tuple(forms.key(b) for b in bounds)
            if key not in least:
                n = bounds[0]
                for b in bounds[1:]:
                    n = self.extreme("min", n, b)
                least[key] = n
            others.append(self.binary("lt", defs[tests[0].id].args[0], least[key]))
        return others

    def _at_most_int32_max(self, v) -> bool:
        """An extent: a constant or a widened i32 shape."""
        if isinstance(v, Const):
            return v.value <= _INT32_MAX
        op = next((o for o in self.ops if o.result is v), None)
        return op is not None and op.opcode == "cast" and op.args[0].type == Type(INDEX)


def _attrs_key(attrs: dict):
    items = tuple(attrs.items())      # in insertion order: ops made alike share it
    try:
        hash(items)
    except TypeError:             # an attribute that is a list or a dict: its text
        return repr(items)
    return items


def _key(a):
    if isinstance(a, Const):
        return ("const", a.value, a.type)
    if isinstance(a, Value):
        return ("value", a.id)
    return ("other", id(a))


def _clone_block(block: Block, mapping: dict[int, Value], var_map: dict[int, Var]) -> Block:
    """A copy of ``block`` with fresh values, and fresh Vars (``var_map``: old id -> new Var): the
    two versions share no local, so a backend keeps each side's locals in registers (the CPU would
    otherwise keep a local that two unit loops use in a per-unit array)."""
    def fresh(v):
        if isinstance(v, Var):
            if v.id not in var_map:
                var_map[v.id] = Var(v.name, v.type)
            return var_map[v.id]
        if isinstance(v, Value) and not isinstance(v, Const):
            return mapping.get(v.id, v)
        return v

    out = []
    for op in block.ops:
        args = tuple(fresh(a) for a in op.args)
        result = None
        if op.result is not None:
            result = Value(op.result.type, op.result.name)
            mapping[op.result.id] = result
        attrs = {k: fresh(v) if isinstance(v, Var) else v for k, v in op.attrs.items()}
        blocks = tuple(_clone_block(b, mapping, var_map) for b in op.blocks)
        out.append(Op(op.opcode, args, result, attrs, blocks, op.loc))
    return Block(out)


def _mark(op: Op, dims: tuple, nowrap: bool) -> None:
    if dims:
        op.attrs["proven"] = tuple(sorted(set(op.attrs.get("proven", ())) | set(dims)))
    if nowrap:
        op.attrs["nowrap"] = True


def check_per_cube(kernel: Kernel, guards: bool = False, launch: bool = False) -> int:
    """Version ``kernel``'s body on one range test per cube (see the module docstring). Run after
    `cubepy.ir.bounds.prove_in_bounds` and before `cubepy.ir.passes.lower_bounds_checks`.
    With ``guards``, the fast version also drops the guards every unit of the cube passes
    (`_Analysis.guards`), checked or not. With ``launch`` (and no guards decided), a test of the
    whole launch that implies the cube's, where one exists, goes to ``kernel.launch_test`` for
    the host, and the cube's test runs only where the host's answer was no. Returns how many
    access dimensions the fast version leaves unchecked."""
    analysis = _Analysis(kernel)
    analysis.block(kernel.body, _Scope())
    if not guards:
        analysis.guards = []
    if not analysis.hoisted and not analysis.guards:
        return 0
    emitter = _Emitter(analysis)
    hoisted: dict[int, tuple] = {}
    for op, dims, caps in analysis.hoisted:
        buf, nonneg = op.args[0], op.attrs.get("nonneg", ())
        for dim in dims:
            lo, hi = emitter.interval(op.args[1 + dim], caps)
            if dim not in nonneg:
                emitter.conds.append(emitter.binary("ge", lo, emitter.wide_const(0)))
            emitter.conds.append(emitter.binary("lt", hi, emitter.extent(buf, dim)))
        hoisted[id(op)] = tuple(dims)
    # The fast side also drops the guards every unit of the cube passes (the CPU then loads and
    # stores whole vectors instead of masked ones); a cube that straddles a guard's bound, the
    # ragged last one, runs the original.
    decided = {id(op): expected for op, _, _, expected in analysis.guards}
    before = list(emitter.conds), set(emitter.nowrap), set(emitter.fitted)
    for _, found, caps, _ in analysis.guards:
        for a, code, b in found:
            lo, hi = emitter.interval(a, caps)
            bound, _ = emitter.interval(b, ())
            emitter.conds.append(emitter.binary(code, lo if code in ("gt", "ge") else hi, bound))
    ok = emitter.all_of()
    if isinstance(ok, Const) and not ok.value and decided:       # a guard no cube passes whole
        emitter.conds, emitter.nowrap, emitter.fitted = before
        decided = {}
        ok = emitter.all_of()
    count = sum(len(d) for d in hoisted.values())
    if decided and hoisted and _several_axes(kernel) and not isinstance(ok, Const) \
            and _guarded_version(kernel, emitter, before, hoisted, decided):
        return count
    if isinstance(ok, Const):            # decided at compile time: no version switch
        if not ok.value:
            return 0
        for op in walk(kernel.body):
            _mark(op, hoisted.get(id(op), ()), id(op) in emitter.nowrap)
            if id(op) in decided:
                op.args = (Const(decided[id(op)], Type(bool_)), *op.args[1:])
        return count
    test = launch_test(kernel, hoisted, emitter.nowrap) if launch and not decided else None
    fast = _fast_copy(kernel, hoisted, emitter.nowrap, decided)
    loc = kernel.body.ops[0].loc if kernel.body.ops else None
    if test is None:
        kernel.body = Block([*emitter.ops, Op("if", (ok,), None, {"cube_checks": True}, (fast, kernel.body), loc)])
        return count
    # the host decided the whole launch (`launch_test`): the cube's test runs only where it did not
    kernel.launch_test = test
    flag, unsure, in_bounds = Value(Type(bool_), "launch_in_bounds"), Value(Type(bool_)), Value(Type(bool_))
    decision = Var("cube_in_bounds", Type(bool_))
    kernel.vars.append(decision)
    kernel.body = Block([
        Op("launch_in_bounds", (), flag, loc=loc),
        Op("store_var", (decision, flag), loc=loc),
        Op("not", (flag,), unsure, loc=loc),
        Op("if", (unsure,), None, {}, (Block([*emitter.ops, Op("store_var", (decision, ok), loc=loc)]),), loc),
        Op("load_var", (decision,), in_bounds, loc=loc),
        Op("if", (in_bounds,), None, {"cube_checks": True}, (fast, kernel.body), loc)])
    return count


def _fast_copy(kernel: Kernel, hoisted: dict, nowrap: set, decided: dict) -> Block:
    """A copy of the body with its own locals: the ``hoisted`` access dimensions unchecked, the
    ``nowrap`` ops marked, the ``decided`` guards constant."""
    var_map: dict[int, Var] = {}
    copy_body = _clone_block(kernel.body, {}, var_map)
    kernel.vars.extend(var_map.values())
    for original, copy in zip(list(walk(kernel.body)), walk(copy_body)):
        _mark(copy, hoisted.get(id(original), ()), id(original) in nowrap)
        if id(original) in decided:
            copy.args = (Const(decided[id(original)], Type(bool_)), *copy.args[1:])
    return copy_body


def _several_axes(kernel: Kernel) -> bool:
    """Whether the cube extends along two axes or more, where every cube of a row can straddle a
    guard; along one, only the last cube of a launch does, not worth a third copy to compile."""
    return sum(d is None or d > 1 for d in kernel.cube_dim) >= 2


def _guarded_version(kernel: Kernel, emitter: _Emitter, before: tuple, hoisted: dict, decided: dict) -> bool:
    """Version the body three ways where guards were decided as well as accesses hoisted::

        if every access of the cube is inside:
            if every unit of the cube passes the guards:  the body, unchecked, guards dropped
            else:                                         the body, unchecked, guards kept
        else:                                             the body as it was

    A cube at a guard's edge then runs its accesses unchecked too: where the cube's extent does
    not divide the array's (LTIMES' 25 of 32 units in m) that is every cube, not the last one
    (so only cubes of two axes or more get it: `_several_axes`).
    False, changing nothing, where the guards' test alone is decided at compile time."""
    everything = emitter.conds
    emitter.conds = before[0]
    inside = emitter.all_of()
    emitter.conds = everything[len(before[0]):]
    passing = emitter.all_of()
    emitter.conds = everything
    if isinstance(passing, Const) or (isinstance(inside, Const) and not inside.value):
        return False
    loc = kernel.body.ops[0].loc if kernel.body.ops else None
    versions = (_fast_copy(kernel, hoisted, emitter.nowrap, decided), _fast_copy(kernel, hoisted, before[1], {}))
    # no cube_checks mark: both sides are unchecked, and a per-run pass versions both
    by_guards = Op("if", (passing,), None, {}, versions, loc)
    if isinstance(inside, Const):            # every access inside at compile time: no checked copy
        kernel.body = Block([*emitter.ops, by_guards])
    else:
        kernel.body = Block([*emitter.ops, Op("if", (inside,), None, {"cube_checks": True},
                                              (Block([by_guards]), kernel.body), loc)])
    return True


# --- the test of a whole launch, on the host -----------------------------------------------------

# ops of a kernel's own whose values a launch test may compute again on the host (integers only:
# `cubepy.runtime.launch_checks` evaluates them with the kernel's wrapping rules)
HOST_OPS = frozenset({"param", "shape", "builtin", "add", "sub", "mul", "neg", "floordiv", "mod", "min", "max",
                      "shl", "shr", "cast"})


@dataclass
class LaunchTest:
    """Whether every access a cube's test covers lies inside its extent for every unit of a launch,
    as IR ops over the kernel's scalar parameters, its arrays' extents and the launch's cube count
    and extents (``param``, ``shape`` and ``builtin`` ops): the host evaluates it before each
    launch (`cubepy.runtime.launch_checks`) and passes the kernel its answer, which the kernel's
    ``launch_in_bounds`` op reads. ``ops`` compute ``ok`` in i64 interval arithmetic (exact: see
    Soundness), except the ops in ``clones``, copies of the kernel's own ops, which wrap as the
    kernel's do."""

    ops: list
    ok: Value
    clones: frozenset


def launch_test(kernel: Kernel, hoisted: dict[int, tuple], nowrap: set[int]) -> LaunchTest | None:
    """The test of a whole launch that implies a cube's (``hoisted``: access op id -> its
    dimensions the cube's test covers; ``nowrap``: the ops the cube's test shows never wrap), or
    None where the launch's analysis cannot cover every one of them.

    It is the cube's analysis with the cube positions ranging over ``[0, cube count)`` instead of
    known: every access it covers for every cube, and every op it keeps inside i32 for every cube."""
    analysis = _Analysis(kernel, launch=True)
    analysis.block(kernel.body, _Scope())
    found = {id(op): (op, dims, caps) for op, dims, caps in analysis.hoisted}
    emitter = _Emitter(analysis)
    for op_id, dims in hoisted.items():
        entry = found.get(op_id)
        if entry is None or not set(dims) <= set(entry[1]):
            return None
        op, _, caps = entry
        nonneg = op.attrs.get("nonneg", ())
        for dim in dims:
            lo, hi = emitter.interval(op.args[1 + dim], caps)
            if dim not in nonneg:
                emitter.conds.append(emitter.binary("ge", lo, emitter.wide_const(0)))
            emitter.conds.append(emitter.binary("lt", hi, emitter.extent(op.args[0], dim)))
    if not nowrap <= emitter.nowrap:
        return None
    ok = emitter.all_of()
    clones = frozenset(v.id for v in emitter.cloned.values())
    ops = emitter.ops
    if isinstance(ok, Const):
        if not ok.value:          # no launch passes: the cube's test decides alone
            return None
        ok = _constant_op(ops, ok)
    defined = {op.result.id: op for op in ops}
    if any(defined[c].opcode not in HOST_OPS or not _integers(defined[c]) for c in clones):
        return None
    return LaunchTest(ops, ok, clones)


def _constant_op(ops: list, value: Const) -> Value:
    """``value`` as the result of an op (``ok`` is always an op's result)."""
    result = Value(Type(bool_))
    ops.append(Op("cast", (value,), result))
    return result


def _integers(op: Op) -> bool:
    types = [op.result.type] + [a.type for a in op.args if isinstance(a, Value)]
    return all(t.width == 1 and t.dtype.is_int and not t.dtype.is_bool for t in types)
