"""Random valid kernels: every construct cubepy has, in a mix, and nothing whose result may differ
between correct devices.

Valid means: no access out of bounds (indices are ``expr % len(array)``), no data race (each unit
stores only its own output slots; shared memory is written at the unit's own element between two
``sync_cube()``; atomics only combine order-independently), no read of uninitialized memory,
plane ops and barriers only where every unit involved reaches them, and no value whose bits
depend on the device: transcendental functions (approximate everywhere) only flow into stores,
compared with a tolerance, and float sums over planes or atomics only of small integers.
"""

from __future__ import annotations

import random

from cubepy.ir.types import DTYPES_BY_NAME, PromotionError, promote

from .program import E, Func, Param, Program, S

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "f32", "f64"]
BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}
CUBE_DIMS = [(32, 1, 1), (64, 1, 1), (48, 1, 1), (8, 4, 1), (4, 4, 4), (16, 2, 1), (7, 3, 1), (20, 1, 1),
             (128, 1, 1), (2, 1, 1)]
CUBE_COUNTS = [(1, 1, 1), (2, 1, 1), (3, 1, 1), (1, 2, 1), (2, 1, 2)]
APPROX_FUNCS = ["exp", "log", "sin", "cos", "tanh", "erf", "rsqrt", "pow"]
PLANE_VALUE_OPS = ["plane_sum", "plane_min", "plane_max", "plane_prod", "plane_inclusive_sum",
                   "plane_exclusive_sum", "plane_broadcast", "plane_shuffle", "plane_shuffle_xor",
                   "plane_shuffle_up", "plane_shuffle_down"]


def _promote(a: str, b: str) -> str | None:
    try:
        return promote(DTYPES_BY_NAME[a], DTYPES_BY_NAME[b]).name
    except PromotionError:
        return None


class Scope:
    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.vars: dict[str, tuple[str, bool]] = {}      # name -> (dtype, uniform)

    def all(self) -> dict:
        out = dict(self.parent.all()) if self.parent else {}
        out.update(self.vars)
        return out


class Generator:
    """One random program per seed; ``features`` switches constructs off (all on by default)."""

    def __init__(self, seed: int, features: frozenset | None = None, size: int = 40, straight: bool | None = None,
                 exclude: frozenset = frozenset()):
        self.FLOATS = [f for f in FLOATS if f not in exclude]
        self.rng = random.Random(seed)
        self.seed = seed
        self.features = features
        self.budget = size
        self.names = 0
        r = self.rng
        self.straight = r.random() < 0.2 if straight is None else straight
        self.cube_dim = r.choice(CUBE_DIMS)
        self.cube_count = r.choice(CUBE_COUNTS)
        self.units = self.cube_dim[0] * self.cube_dim[1] * self.cube_dim[2]
        total = self.units * self.cube_count[0] * self.cube_count[1] * self.cube_count[2]
        self.total = total
        self.active = total - (r.randrange(min(self.units, total)) if r.random() < 0.7 else 0)
        self.slots = 12
        self.one_d = self.cube_dim[1] == self.cube_dim[2] == 1
        self.inputs: list[Param] = []
        self.scalars: list[Param] = []
        self.outputs: dict[str, Param] = {}
        self.accs: dict[str, Param] = {}
        self.next_slot: dict[str, int] = {}
        self.approx: set = set()
        self.funcs: list[Func] = []
        self.prologue: list[S] = []
        self.shared: list[tuple[str, str]] = []
        self.locals: list[tuple[str, str]] = []
        self.lines: list[Param] = []
        self.comptime = r.randrange(5)
        # control state
        self.scope = Scope()
        self.uniform_ctl = True       # every unit of the cube reaches this point
        self.plane_ctl = True         # every unit of each plane reaches this point
        self.loop_depth = 0
        self.unrolled = 0
        self.in_func = False
        self.varying_exits = False
        self.diverged = False
        self.python_ints: set[str] = set()
        self.in_plane_if = False

    def on(self, feature: str) -> bool:
        if self.straight and feature in ("if", "loop", "while", "return", "plane", "sync", "atomic", "local",
                                         "lines", "func", "comptime", "approx", "break"):
            return False
        return self.features is None or feature in self.features

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    # --- the program --------------------------------------------------------------------------
    def program(self) -> Program:
        r = self.rng
        for dt in r.sample(INTS + self.FLOATS + INTS[2:4] + ["f32"], r.randrange(3, 7)):
            self.inputs.append(Param(self.name("x"), "array", dt, r.randrange(8, 120)))
        for dt in r.sample(INTS + self.FLOATS, r.randrange(1, 4)):
            self.scalars.append(Param(self.name("s"), "scalar", dt))
        self.scalars.append(Param("nu", "scalar", "i32"))
        if self.on("func") and r.random() < 0.5:
            for _ in range(r.randrange(1, 3)):
                self.funcs.append(self.func())
        if self.on("lines") and r.random() < 0.25:
            dt = r.choice(["f32", "i32", "f64", "u8"])
            self.lines.append(Param(self.name("xl"), "lines", dt, r.randrange(4, 40), 4))
        body = self.block(self.budget)
        self.comptime_used = True
        params = self.inputs + [p for p in self.lines] + list(self.outputs.values()) + list(self.accs.values())
        params += self.scalars + [Param("K", "comptime", "int")]
        return Program(self.seed, params, self.funcs, self.prologue, body, self.cube_dim, self.cube_count,
                       self.active, self.slots, self.approx, self.comptime, self.straight)

    def func(self) -> Func:
        """A @cb.func of one or two numbers returning an expression of them."""
        r = self.rng
        name = self.name("helper")
        params = [(self.name("a"), r.choice(INTS + self.FLOATS)) for _ in range(r.randrange(1, 3))]
        saved = self.scope, self.in_func
        self.scope, self.in_func = Scope(), True
        for n, dt in params:
            self.scope.vars[n] = (dt, False)
        body = []
        for _ in range(r.randrange(0, 3)):
            dt = r.choice(INTS + self.FLOATS)
            v = self.name("w")
            body.append(S("assign", target=v, value=self.expr(dt, 2)))
            self.scope.vars[v] = (dt, False)
        result_dt = r.choice(INTS + self.FLOATS)
        result = self.expr(result_dt, 3)
        self.scope, self.in_func = saved
        return Func(name, params, body, result, result_dt)

    # --- statements ---------------------------------------------------------------------------
    def block(self, budget: int) -> list:
        out: list[S] = []
        while budget > 0:
            made = self.statement(budget)
            budget -= max(1, sum(_weight(s) for s in made))
            out.extend(made)
            if made and made[-1].kind in ("break", "continue"):
                break
        return out

    def statement(self, budget: int) -> list:
        r = self.rng
        choices = [("assign", 6), ("store", 6), ("reassign", 3)]
        if self.on("if") and budget > 3:
            choices.append(("if", 4))
        if self.on("loop") and budget > 4 and self.loop_depth < 2:
            choices += [("for", 2), ("while", 1)]
        if self.on("loop") and budget > 4 and self.unrolled == 0:
            choices.append(("unroll", 1))
        if self.on("break") and self.loop_depth and not self.unrolled:
            choices.append(("exit", 1))
        if self.on("return") and not self.loop_depth:
            choices.append(("return", 1))
        if self.on("plane") and self.plane_ctl:
            choices.append(("plane", 3))
        if self.on("sync") and self.uniform_ctl:
            choices.append(("sync", 2))
        if self.on("atomic"):
            choices.append(("atomic", 2))
        if self.on("local"):
            choices.append(("local", 1))
        if self.lines:
            choices.append(("lines", 2))
        if self.on("comptime") and budget > 3:
            choices.append(("static_if", 1))
        if self.on("approx"):
            choices.append(("approx", 2))
        kind = _pick(r, choices)
        return getattr(self, f"stmt_{kind}")(budget)

    def stmt_assign(self, budget):
        dt = self.rng.choice(INTS + self.FLOATS + ["bool_"])
        v = self.name("v")
        value = self.expr(dt, 3)
        decl = dt if self.rng.random() < 0.15 and dt != "bool_" else ""
        self.scope.vars[v] = (dt, value.uniform and self.uniform_ctl)
        return [S("assign", target=v, value=value, decl=decl)]

    def stmt_reassign(self, budget):
        names = [(n, d) for n, (d, _) in self.scope.all().items() if n.startswith("v")]
        if not names:
            return self.stmt_assign(budget)
        n, dt = self.rng.choice(names)
        value = self.expr(dt, 3)
        uniform = value.uniform and self.uniform_ctl
        if not uniform and self.scope.all()[n][1]:
            # the uniformity analysis is flow-insensitive for variables (a variable is as varying
            # as anything ever stored into it), so a uniform variable stays uniform
            return self.stmt_assign(budget)
        self._mark(n, dt, uniform)
        return [S("assign", target=n, value=value)]

    def _mark(self, name, dt, uniform):
        scope = self.scope
        while scope is not None:
            if name in scope.vars:
                scope.vars[name] = (dt, scope.vars[name][1] and uniform)
                return
            scope = scope.parent

    def _slot(self, dt: str) -> tuple[Param, int] | None:
        out = self.outputs.get(dt)
        if out is None:
            out = self.outputs[dt] = Param(f"out_{dt}", "out", dt, self.total * self.slots)
            self.next_slot[dt] = 0
        j = self.next_slot[dt]
        if j >= self.slots:
            return None
        self.next_slot[dt] = j + 1
        return out, j

    def store(self, value: E, dt: str) -> list:
        got = self._slot(dt)
        if got is None:
            return []
        out, j = got
        if not value.exact:
            self.approx.add((out.name, j))
        index = E(f"g * {self.slots} + {j}", "i32", op="slot", value=j)
        st = S("store", target=out.name, index=index, value=value)
        if self.rng.random() < 0.8:
            return [S("if", cond=E("g < nu", "bool_", op="active"), body=[st])]
        return [st]

    def stmt_store(self, budget):
        dt = self.rng.choice(INTS + self.FLOATS + ["bool_"])
        names = [(n, d) for n, (d, _) in self.scope.all().items() if d == dt]
        value = E(names[-1][0], dt, op="var", value=names[-1][0]) if names and self.rng.random() < 0.5 \
            else self.expr(dt, 3)
        return self.store(value, dt)

    def stmt_approx(self, budget):
        dt = self.rng.choice(self.FLOATS)
        return self.store(self.approx_expr(dt), dt)

    def stmt_if(self, budget):
        r = self.rng
        cond = self.cond()
        inner = budget // 2
        saved = self.uniform_ctl, self.plane_ctl
        plane_only = False
        if not cond.uniform and self.one_d and self.plane_ctl and self.on("plane") and r.random() < 0.3:
            # the block-reduce idiom: a condition that is the same on every unit of a plane
            cond = E(f"t // cb.PLANE_DIM == {r.randrange(3)}", "bool_")
            plane_only = True
        saved_plane_if = self.in_plane_if
        if not cond.uniform:
            self.uniform_ctl = False
            self.plane_ctl = plane_only and self.plane_ctl
            self.in_plane_if = self.in_plane_if or plane_only
        body = self.sub_block(max(1, inner))
        orelse = self.sub_block(max(1, budget - inner)) if r.random() < 0.5 else []
        op = "elif" if orelse and len(orelse) == 1 and orelse[0].kind == "if" else ""
        self.uniform_ctl, self.plane_ctl = saved
        self.in_plane_if = saved_plane_if
        if self.diverged:
            self.uniform_ctl = self.plane_ctl = False
        return [S("if", cond=cond, body=body, orelse=orelse, op=op)]

    def stmt_static_if(self, budget):
        cond = E(f"K > {self.rng.randrange(4)}", "bool_", uniform=True)
        return [S("if", cond=cond, body=self.sub_block(budget // 2), orelse=self.sub_block(2))]

    def sub_block(self, budget) -> list:
        saved = self.scope
        self.scope = Scope(saved)
        try:
            return self.block(budget)
        finally:
            self.scope = saved

    def _bound(self) -> E:
        r = self.rng
        choice = r.randrange(4)
        if choice == 0:
            return E(str(r.randrange(0, 5)), "i32", uniform=True)
        if choice == 1:
            return E("K", "i32", uniform=True)
        if choice == 2:
            s = [p for p in self.scalars if p.dtype in ("i8", "i16", "i32", "u8", "u16")]
            if s:
                return E(f"i32({s[0].name}) % 4", "i32", uniform=True)
        e = self.expr("i32", 2)
        return E("({0}) % 5", "i32", (e,), uniform=e.uniform)

    def _loop(self, budget, make):
        bound = self._bound()
        saved = self.uniform_ctl, self.plane_ctl, self.varying_exits
        # a loop that some units leave early (non-uniform trip count or exit) is non-uniform
        # control all through its body, before the exit too: decide it up front
        self.varying_exits = self.rng.random() < 0.5
        if not bound.uniform or self.varying_exits:
            self.uniform_ctl = self.plane_ctl = False
        if self.in_plane_if:
            # planes would run different numbers of iterations of a loop under a plane-uniform
            # condition: where plane ops are barriers (OpenCL's emulation) that cannot be lowered
            self.plane_ctl = False
        self.loop_depth += 1
        body_scope = Scope(self.scope)
        saved_scope, self.scope = self.scope, body_scope
        try:
            return make(bound)
        finally:
            self.scope = saved_scope
            self.loop_depth -= 1
            self.uniform_ctl, self.plane_ctl, self.varying_exits = saved
            if self.diverged:
                self.uniform_ctl = self.plane_ctl = False

    def stmt_for(self, budget):
        def make(bound):
            k = self.name("k")
            self.scope.vars[k] = ("i32", bound.uniform and self.uniform_ctl)
            return [S("for", target=k, bound=bound, body=self.block(max(2, budget // 2)))]
        return self._loop(budget, make)

    def stmt_while(self, budget):
        def make(bound):
            w = self.name("w")
            self.python_ints.add(w)
            self.scope.vars[w] = ("i32", bound.uniform and self.uniform_ctl)
            body = self.block(max(2, budget // 2))
            if self.rng.random() < 0.3 and (self.varying_exits or self.uniform_ctl):
                # a trailing `if c: continue` (PoCL ran one extra iteration)
                cond = self.cond() if self.varying_exits else self.uniform_cond()
                body.append(S("if", cond=cond, body=[S("continue")]))
            return [S("while", target=w, bound=bound, body=body, op="runtime" if self.rng.random() < 0.6 else "")]
        return self._loop(budget, make)

    def stmt_unroll(self, budget):
        k = self.name("k")
        self.python_ints.add(k)
        self.unrolled += 1
        saved = self.scope
        self.scope = Scope(saved)
        self.scope.vars[k] = ("i32", self.uniform_ctl)
        try:
            body = self.block(max(2, budget // 3))
        finally:
            self.scope = saved
            self.unrolled -= 1
        bound = E(self.rng.choice(["3", "K", "2"]), "i32", uniform=True)
        return [S("for", target=k, bound=bound, body=body, op="unroll")]

    def uniform_cond(self) -> E:
        r = self.rng
        if r.random() < 0.5:
            return E(f"(i32(K) > {r.randrange(4)})", "bool_", uniform=True)
        a = self.expr(r.choice(INTS), 1)
        while not a.uniform:
            a = self.leaf(a.dtype) if r.random() < 0.7 else self.literal(a.dtype)
        return E(f"({{0}} > {a.dtype}(3))", "bool_", (a,), uniform=True)

    def stmt_exit(self, budget):
        if not self.varying_exits and not self.uniform_ctl:   # it would make the loop's exits varying
            return self.stmt_assign(budget)
        cond = self.cond() if self.varying_exits else self.uniform_cond()
        return [S("if", cond=cond, body=[S(self.rng.choice(["break", "continue"]))])]

    def stmt_return(self, budget):
        # an unrolled body repeats: a return under a varying condition would come before the
        # barriers of the later copies
        if self.unrolled and not self.uniform_ctl:
            return self.stmt_assign(budget)
        cond = self.cond() if not self.unrolled else self.uniform_cond()
        if not (cond.uniform and self.uniform_ctl):   # from here on, for good: some units have left
            self.diverged = True
            self.uniform_ctl = self.plane_ctl = False
        return [S("return", cond=cond)]

    def stmt_plane(self, budget):
        r = self.rng
        op = r.choice(PLANE_VALUE_OPS + ["plane_all", "plane_any", "plane_ballot", "plane_elect"])
        v = self.name("p")
        if op in ("plane_all", "plane_any", "plane_ballot"):
            value = E(f"cb.{op}({{0}})", "u64" if op == "plane_ballot" else "bool_", (self.cond(),))
        elif op == "plane_elect":
            value = E("cb.plane_elect()", "bool_")
        else:
            dt = r.choice(INTS + self.FLOATS)
            x = self.expr(dt, 2)
            if op in ("plane_sum", "plane_inclusive_sum", "plane_exclusive_sum", "plane_prod") and dt in self.FLOATS:
                # float sums round in lane order, which differs between devices: small integers only
                x = E(f"{dt}(i32({{0}}) % {8 if op == 'plane_prod' else 31})", dt, (self.expr("i16", 2),))
                if op == "plane_prod":
                    x = E(f"{dt}(i32({{0}}) % 3)", dt, (self.expr("i16", 2),))
            if op in ("plane_broadcast", "plane_shuffle", "plane_shuffle_xor", "plane_shuffle_up",
                      "plane_shuffle_down"):
                lane = E(str(r.randrange(0, 70)), "i32") if r.random() < 0.5 else self.expr("i32", 1)
                value = E(f"cb.{op}({{0}}, {{1}})", dt, (x, lane))
            else:
                value = E(f"cb.{op}({{0}})", dt, (x,))
        self.scope.vars[v] = (value.dtype, False)
        return [S("assign", target=v, value=value)]

    def stmt_sync(self, budget):
        r = self.rng
        dt = r.choice(INTS + self.FLOATS)
        name = self.name("sm")
        self.prologue.append(S("assign", target=name, value=E(f"cb.SharedMemory({dt}, {self.units})", dt)))
        v = self.name("v")
        offset = r.randrange(1, self.units + 3)
        read = E(f"{name}[(t + {offset}) % {self.units}]", dt) if r.random() < 0.6 else \
            E(f"{name}[({{0}}) % {self.units}]", dt, (self.expr("i32", 2),))
        value = self.expr(dt, 2)
        self.scope.vars[v] = (dt, False)
        return [S("store", target=name, index=E("t", "i32"), value=value), S("sync"),
                S("assign", target=v, value=read), S("sync")]

    def stmt_atomic(self, budget):
        r = self.rng
        dt = r.choice(["i32", "u32", "i64", "u64", "f32"])
        ops = ["add", "min", "max"] if dt == "f32" else ["add", "sub", "min", "max", "and", "or", "xor"]
        op = r.choice(ops)
        # atomics of one kind commute; of two kinds (max then xor) they do not: an array per kind
        kind = "add" if op in ("add", "sub") else op
        acc = self.accs.get((dt, kind))
        if acc is None:
            acc = self.accs[(dt, kind)] = Param(f"acc_{kind}_{dt}", "acc", dt, r.randrange(1, 9))
        if dt == "f32" and op == "add":     # float sums round in arrival order: small integers only
            value = E("f32(i32({0}) % 16)", "f32", (self.expr("i16", 2),))
        else:
            value = self.expr(dt, 2)
        index = E(f"({{0}}) % {acc.length}", "i32", (self.expr("i32", 2),))
        st = S("atomic", target=acc.name, index=index, value=value, op=op)
        return [S("if", cond=E("g < nu", "bool_", op="active"), body=[st])] if r.random() < 0.5 else [st]

    def stmt_local(self, budget):
        r = self.rng
        if not self.locals or r.random() < 0.3:
            dt = r.choice(INTS + self.FLOATS)
            name = self.name("la")
            self.prologue.append(S("assign", target=name, value=E(f"cb.LocalArray({dt}, 4)", dt)))
            q = self.name("q")
            self.prologue.append(S("for", target=q, bound=E("4", "i32"), op="unroll",
                                   body=[S("store", target=name, index=E(q, "i32"), value=E(f"{dt}(0)", dt))]))
            self.locals.append((name, dt))
        name, dt = r.choice(self.locals)
        index = E("({0}) % 4", "i32", (self.expr("i32", 2),))
        return [S("store", target=name, index=index, value=self.expr(dt, 2))]

    def stmt_lines(self, budget):
        r = self.rng
        xl = self.lines[0]
        dt = xl.dtype
        out = self.outputs.get("lines")
        if out is None:
            out = self.outputs["lines"] = Param("out_lines", "outlines", dt, self.total, 4)
        a = E(f"{xl.name}[({{0}}) % len({xl.name})]", dt, (self.expr("i32", 2),), width=4)
        b = E(f"{xl.name}[({{0}}) % len({xl.name})]", dt, (self.expr("i32", 1),), width=4)
        scalar = self.expr(dt, 1)
        op = r.choice(["+", "-", "*"])
        value = E(f"({{0}} {op} {{1}}) * {{2}}", dt, (a, b, scalar), width=4) if r.random() < 0.5 else \
            E("cb.max({0}, {1})", dt, (a, scalar), width=4)
        v = self.name("vl")
        st = S("assign", target=v, value=value)
        if r.random() < 0.5:
            st2 = S("assign", target=v, value=E(f"{v}", dt, width=4))
            elem = r.randrange(4)
            upd = S("raw", target=f"{v}[{elem}] = {self.expr(dt, 1).render()}")
            body = [st, st2, upd]
        else:
            body = [st]
        return body + [S("if", cond=E("g < nu", "bool_", op="active"),
                         body=[S("store", target=out.name, index=E("g", "i32"), value=E(v, dt, width=4))])]

    # --- expressions --------------------------------------------------------------------------
    def cond(self) -> E:
        r = self.rng
        dt = r.choice(INTS + self.FLOATS)
        a, b = self.expr(dt, 2), self.expr(dt, 2)
        sym = r.choice(["<", "<=", ">", ">=", "==", "!="])
        c = E(f"({{0}} {sym} {{1}})", "bool_", (a, b), uniform=a.uniform and b.uniform, op="cmp", value=sym)
        if r.random() < 0.2:
            d = self.cond_simple()
            word = r.choice(["and", "or"])
            c = E(f"({{0}} {word} {{1}})", "bool_", (c, d), uniform=c.uniform and d.uniform, op=f"bool{word}")
        if r.random() < 0.1:
            c = E("(not {0})", "bool_", (c,), uniform=c.uniform, op="not")
        return c

    def cond_simple(self) -> E:
        dt = self.rng.choice(INTS)
        a, b = self.expr(dt, 1), self.expr(dt, 1)
        return E("({0} < {1})", "bool_", (a, b), uniform=a.uniform and b.uniform, op="cmp", value="<")

    def literal(self, dt: str) -> E:
        r = self.rng
        if dt == "bool_":
            v = r.random() < 0.5
            return E(str(v), dt, uniform=True, op="lit", value=v)
        if dt in self.FLOATS:
            v = r.choice([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.25, -7.5, 100.0, 1e-3, 65504.0 if dt != "f16" else 3.0])
            return E(f"{dt}({v!r})", dt, uniform=True, op="lit", value=v)
        signed = dt.startswith("i")
        v = r.choice([0, 1, 2, 3, 7, 100, 127]) if not signed or r.random() < 0.6 else r.choice([-1, -2, -100, -128])
        if r.random() < 0.1:
            bits = BITS[dt]
            v = r.choice([(1 << (bits - 1)) - 1, -(1 << (bits - 1))] if signed else [(1 << bits) - 1])
        return E(f"{dt}({v})", dt, uniform=True, op="lit", value=v)

    def leaf(self, dt: str) -> E:
        r = self.rng
        options = [0, 1, 2, 3]
        k = r.choice(options + [0, 1])
        names = [n for n, (d, _) in self.scope.all().items() if d == dt]
        if k == 0 and names:
            n = r.choice(names)
            if n in self.python_ints:    # an unrolled or static loop's counter is a Python int: type it
                return E(f"i32({n})", dt, uniform=self.scope.all()[n][1])
            return E(n, dt, uniform=self.scope.all()[n][1], op="var", value=n)
        if self.in_func:
            return self.literal(dt)
        if k == 1 and self.inputs:
            x = r.choice(self.inputs)
            index = self.expr("i64" if r.random() < 0.1 else "i32", 1)
            load = E(f"{x.name}[({{0}}) % len({x.name})]", x.dtype, (index,), uniform=index.uniform, op="load",
                     value=x.name)
            return load if x.dtype == dt else self.cast(load, dt)
        if k == 2 and not self.in_func:
            sc = [p for p in self.scalars if p.dtype == dt]
            if sc:
                p = r.choice(sc)
                return E(p.name, dt, uniform=True, op="param", value=p.name)
            topo = r.choice(["g", "t", "cb.UNIT_POS_X", "cb.UNIT_POS_Y", "cb.UNIT_POS_Z", "cb.CUBE_POS",
                             "cb.CUBE_POS_X", "cb.PLANE_DIM", "cb.UNIT_POS_PLANE", "cb.CUBE_DIM", "cb.CUBE_COUNT",
                             "cb.ABSOLUTE_POS_Y", "i32(K)"])
            uniform = topo.startswith(("cb.CUBE", "cb.PLANE_DIM")) or topo == "i32(K)"
            e = E(topo, "i32", uniform=uniform, op="topo", value=topo)
            return e if dt == "i32" else self.cast(e, dt)
        if k == 3 and self.locals and r.random() < 0.5 and not self.straight:
            name, ldt = r.choice(self.locals)
            e = E(f"{name}[({{0}}) % 4]", ldt, (self.expr("i32", 1),))
            return e if ldt == dt else self.cast(e, dt)
        return self.literal(dt)

    def cast(self, e: E, dt: str) -> E:
        return E(f"{dt}({{0}})", dt, (e,), exact=e.exact, uniform=e.uniform, op="cast")

    def expr(self, dt: str, depth: int) -> E:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(dt)
        if dt == "bool_":
            return self.cond() if depth > 1 else self.cond_simple()
        k = r.random()
        d = depth - 1
        if k < 0.40:
            return self.binary(dt, d)
        if k < 0.50:
            return self.unary(dt, d)
        if k < 0.62:
            src = r.choice(INTS + self.FLOATS + ["bool_"])
            return self.cast(self.expr(src, d), dt)
        if k < 0.70:
            a, b = self.expr(dt, d), self.expr(dt, d)
            fn = r.choice(["min", "max"])
            return E(f"cb.{fn}({{0}}, {{1}})", dt, (a, b), uniform=a.uniform and b.uniform, op=fn)
        if k < 0.76:
            c, a, b = self.cond_simple(), self.expr(dt, d), self.expr(dt, d)
            form = "cb.select({0}, {1}, {2})" if r.random() < 0.5 else "({1} if {0} else {2})"
            return E(form, dt, (c, a, b), uniform=c.uniform and a.uniform and b.uniform, op="select")
        if k < 0.81:
            a = self.expr(dt, d)
            n = r.randrange(0, 10 if dt in INTS else 9)
            return E(f"({{0}} ** {n})", dt, (a,), uniform=a.uniform, op="pow", value=n)
        if k < 0.85 and self.funcs and not self.in_func:
            f = r.choice(self.funcs)
            args = tuple(self.expr(pdt, d) for _, pdt in f.params)
            holes = ", ".join("{" + str(i) + "}" for i in range(len(args)))
            call = E(f"{f.name}({holes})", f.result_dtype, args,
                     uniform=all(a.uniform for a in args))
            return call if f.result_dtype == dt else self.cast(call, dt)
        if k < 0.90 and dt in INTS:
            a, b = self.expr(dt, d), self.expr(dt, d)
            word = r.choice(["or", "and"])          # Python's meaning: an operand
            return E(f"({{0}} {word} {{1}})", dt, (a, b), uniform=a.uniform and b.uniform, op=f"val{word}")
        if k < 0.95 and dt in self.FLOATS:
            fn = r.choice(["sqrt", "floor", "ceil", "fma", "div"])
            if fn == "fma" and dt == "f16":     # f16 fma rounds twice on some devices: not exact
                fn = "div"
            a = self.expr(dt, d)
            if fn == "fma":
                b, c = self.expr(dt, d), self.expr(dt, d)
                return E("cb.fma({0}, {1}, {2})", dt, (a, b, c), uniform=a.uniform and b.uniform and c.uniform,
                         op="fma")
            if fn == "div":
                b = self.expr(dt, d)
                return E("({0} / {1})", dt, (a, b), uniform=a.uniform and b.uniform, op="div")
            return E(f"cb.{fn}({{0}})", dt, (a,), uniform=a.uniform, op=fn)
        return self.binary(dt, d)

    def binary(self, dt: str, d: int) -> E:
        r = self.rng
        if dt in self.FLOATS:
            sym = r.choice(["+", "-", "*", "+", "*"])
        else:
            sym = r.choice(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "+", "*"])
        a = self.expr(dt, d)
        if r.random() < 0.3:        # a narrower operand of the same kind, or a literal: promotion
            other = r.choice([o for o in (INTS if dt in INTS else self.FLOATS) if _promote(o, dt) == dt])
            b = self.expr(other, d) if r.random() < 0.6 else self.literal(other)
            if b.op == "lit" and b.dtype != dt:
                b = self.literal(dt)
                b = E(repr(b.value), dt, uniform=True, op="weaklit", value=b.value) if not (
                    dt.startswith("u") and isinstance(b.value, int) and b.value < 0) else b
        else:
            b = self.expr(dt, d)
        return E(f"({{0}} {sym} {{1}})", dt, (a, b), uniform=a.uniform and b.uniform, op="bin", value=sym)

    def unary(self, dt: str, d: int) -> E:
        r = self.rng
        a = self.expr(dt, d)
        choices = ["-", "abs"] + (["~"] if dt in INTS else [])
        sym = r.choice(choices)
        if sym == "abs":
            return E("cb.abs({0})", dt, (a,), uniform=a.uniform, op="abs")
        return E(f"({sym}{{0}})", dt, (a,), uniform=a.uniform, op="neg" if sym == "-" else "invert")

    def approx_expr(self, dt: str) -> E:
        """A transcendental function of an exact value, on a domain where it is well conditioned."""
        r = self.rng
        fn = r.choice(APPROX_FUNCS)
        a = self.expr(dt, 2)
        arg = {"exp": f"cb.clamp({{0}}, {dt}(-8.0), {dt}(8.0))", "log": f"(cb.abs({{0}}) + {dt}(0.5))",
               "sin": f"cb.clamp({{0}}, {dt}(-30.0), {dt}(30.0))", "cos": f"cb.clamp({{0}}, {dt}(-30.0), {dt}(30.0))",
               "tanh": "{0}", "erf": "{0}", "rsqrt": f"(cb.abs({{0}}) + {dt}(0.5))",
               "pow": f"(cb.clamp(cb.abs({{0}}), {dt}(0.5), {dt}(4.0)))"}[fn]
        if fn == "pow":
            return E(f"({arg} ** {r.choice(['2.5', '0.5', '1.5'])})", dt, (a,), exact=False)
        return E(f"cb.{fn}({arg})", dt, (a,), exact=False)


def _weight(s: S) -> int:
    return 1 + sum(_weight(b) for b in s.body) + sum(_weight(b) for b in s.orelse)


def _pick(r: random.Random, choices):
    total = sum(w for _, w in choices)
    x = r.uniform(0, total)
    for name, w in choices:
        x -= w
        if x <= 0:
            return name
    return choices[-1][0]


def generate(seed: int, **kwargs) -> Program:
    return Generator(seed, **kwargs).program()
