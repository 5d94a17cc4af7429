"""Statements: assignment, control flow, loops, returns (see `codegen.py` for the model)."""

from __future__ import annotations

import ast
from contextlib import contextmanager

from ..errors import CubeSyntaxError, CubeTypeError, CubeValueError
from ..ir.nodes import Block, Var
from ..ir.types import INDEX, DType, Type, u32
from .operators import is_number, is_traced
from .scope import (
    BINOPS,
    MAX_STATIC_ITERATIONS,
    MISSING,
    Branches,
    Frame,
    FuncReturn,
    KernelReturn,
    MaybeUnbound,
    Poisoned,
    Retrace,
    StaticBreak,
    StaticContinue,
    assigned_names,
    join_types,
)
from .values import RangeSpec, Unroll


class Statements:
    """Mixin of the tracing context: statement visitors and variables."""

    # provided by the tracer: builder, ops, spec, kernel, widen, frames, traced_depth, error(),
    # set_loc(), entry_builtin(), entry_cached(), require_mutable(), index_values(), inline()

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    # --- statements -------------------------------------------------------------------------
    def visit_block(self, stmts) -> None:
        for stmt in stmts:
            self.set_loc(stmt)
            method = getattr(self, f"stmt_{type(stmt).__name__}", None)
            if method is None:
                self.error(CubeSyntaxError, f"'{type(stmt).__name__}' statements are not supported in kernels")
            if method(stmt) == "terminated":
                return "terminated"
        return None

    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.expr(node.value)

    def stmt_Assign(self, node):
        single = node.targets[0] if len(node.targets) == 1 else None
        self.pending_name = single.id if isinstance(single, ast.Name) else None
        try:
            value = self.expr(node.value)
        finally:
            self.pending_name = None
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self, node):
        annotation = self.static_eval(node.annotation)
        if not isinstance(node.target, ast.Name) or not isinstance(annotation, DType):
            self.error(CubeSyntaxError, "an annotated assignment in a kernel declares a variable: name: dtype = value")
        if node.value is None:
            self.error(CubeSyntaxError, f"variable '{node.target.id}' must be given a value")
        name = node.target.id
        raw = self.expr(node.value)
        width = raw.type.width if is_traced(raw) else 1
        value = self.ops.coerce(raw, Type(annotation, width), f"variable '{name}'")
        current = self.frame.scope.get(name)
        if isinstance(current, Var):
            self.builder.store_var(current, self.ops.coerce(value, current.type, f"variable '{name}'"))
        elif self.traced_depth > 0:
            var = self.builder.new_var(name, value.type)
            self.builder.store_var(var, value)
            self.frame.scope[name] = var
        else:
            self.frame.scope[name] = value

    def stmt_AugAssign(self, node):
        opname = BINOPS.get(type(node.op))
        target = node.target
        if isinstance(target, ast.Name):
            current = self.load_name(target.id, target)
            self.assign(target, self.binary(opname, current, self.expr(node.value)), node)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            index = self.expr(target.slice)
            current = self.subscript_load(container, index, target)
            self.subscript_store(container, index, self.binary(opname, current, self.expr(node.value)), target)
        else:
            self.error(CubeSyntaxError, "augmented assignment needs a name or an array element")

    def stmt_If(self, node):
        cond = self.ops.truth(self.expr(node.test))
        if not is_traced(cond):
            return self.visit_block(node.body if cond else node.orelse)
        then_block, else_block = Block(), Block()
        with self.traced_region(node, node.body + node.orelse) as branches:
            self.builder.op("if", (cond,), blocks=(then_block, else_block))
            entry_scope = dict(self.frame.scope)
            with self.builder.at(then_block):
                branches.ended.append(self.visit_block(node.body) == "terminated")
            branches.scopes.append(dict(self.frame.scope))
            self.frame.scope.clear()
            self.frame.scope.update(entry_scope)
            with self.builder.at(else_block):
                branches.ended.append(self.visit_block(node.orelse) == "terminated")
        return "terminated" if all(branches.ended) else None

    def stmt_For(self, node):
        if node.orelse:
            self.error(CubeSyntaxError, "for ... else is not supported in kernels")
        iterable = self.expr(node.iter)
        if isinstance(iterable, Unroll):
            r = iterable.range
            return self._static_loop(node, range(r.start, r.stop, r.step))
        if isinstance(iterable, (tuple, list)):
            return self._static_loop(node, iterable)
        if not isinstance(iterable, RangeSpec):
            self.error(CubeTypeError, "kernels loop over range(...), cb.unroll(range(...)) or a tuple, "
                       f"not {type(iterable).__name__}")
        if not isinstance(node.target, ast.Name):
            self.error(CubeSyntaxError, "a range loop needs a single loop variable")
        if is_number(iterable.step) and iterable.step == 0:
            self.error(CubeValueError, "range() step must not be zero")
        start, stop, step = (self._range_bound(v) for v in (iterable.start, iterable.stop, iterable.step))
        counter = self.builder.new_var(f"{node.target.id}_counter", Type(INDEX))
        body = Block()
        with self.traced_region(node, node.body, extra=[node.target.id]):
            user_var = self.frame.scope.get(node.target.id)
            if not isinstance(user_var, Var) or user_var.type != Type(INDEX):
                user_var = self.new_user_var(node.target.id, id(node), Type(INDEX))
                self.frame.scope[node.target.id] = user_var
            self.builder.op("for", (start, stop, step), blocks=(body,), var=counter)
            self.frame.loops.append(("traced", self.traced_depth, node))
            try:
                with self.builder.at(body):
                    self.builder.store_var(user_var, self.builder.load_var(counter))
                    self.visit_block(node.body)
            finally:
                self.frame.loops.pop()

    def _range_bound(self, v):
        """A range bound as the i32 loop counter takes it; a traced bound must be an integer of
        at most 32 bits (wider ones would be cut), a literal must fit i32."""
        v = self._int_operand(v, "range bound")
        if is_traced(v):
            if v.type.dtype.bits > 32 or v.type.dtype == u32:
                self.error(CubeTypeError, f"range() bounds must fit the i32 loop counter, but this bound is "
                           f"{v.type}; convert it explicitly, e.g. range(i32(n)), if its values fit")
            return self.ops.cast(v, INDEX)
        return self.ops.lift(v, Type(INDEX), "a range bound (loop counters are i32)")

    def _int_operand(self, v, what):
        if is_traced(v) and not v.type.dtype.is_int:
            self.error(CubeTypeError, f"{what} must be an integer, got {v.type}")
        if is_number(v) and not isinstance(v, int):
            self.error(CubeTypeError, f"{what} must be an integer, got {v!r}")
        return v

    def _static_loop(self, node, values):
        self.frame.loops.append(("static", self.traced_depth, None))
        try:
            for value in values:
                self.assign(node.target, value, node)
                try:
                    self.visit_block(node.body)
                except StaticContinue:
                    continue
                except StaticBreak:
                    break
        finally:
            self.frame.loops.pop()

    def stmt_While(self, node):
        if node.orelse:
            self.error(CubeSyntaxError, "while ... else is not supported in kernels")
        scratch = Block()
        with self.builder.at(scratch):
            first = self.ops.truth(self.expr(node.test))
        if not is_traced(first) and ("runtime_while", id(node)) not in self.widen:
            self._static_while(node)
            return
        body = Block()
        with self.traced_region(node, node.body + [node.test]):
            self.builder.op("loop", blocks=(body,))
            self.frame.loops.append(("traced", self.traced_depth, node))
            try:
                with self.builder.at(body):
                    self.set_loc(node.test)
                    cond = self.ops.truth(self.expr(node.test))
                    exit_block = Block()
                    if is_traced(cond):
                        self.builder.op("if", (self.ops.unary("not", cond),), blocks=(exit_block, Block()))
                        with self.builder.at(exit_block):
                            self.builder.op("break")
                    elif not cond:
                        self.builder.op("break")
                    self.visit_block(node.body)
            finally:
                self.frame.loops.pop()

    def _static_while(self, node):
        self.frame.loops.append(("static", self.traced_depth, node))
        try:
            for _ in range(MAX_STATIC_ITERATIONS):
                cond = self.ops.truth(self.expr(node.test))
                if is_traced(cond):
                    # The body made the condition a runtime value (`done = False; while not done:`):
                    # trace again with this loop as a runtime loop from the start.
                    self.widen[("runtime_while", id(node))] = True
                    raise Retrace()
                if not cond:
                    return
                try:
                    self.visit_block(node.body)
                except StaticContinue:
                    continue
                except StaticBreak:
                    return
            self.error(CubeValueError, f"a while loop on compile-time values ran over {MAX_STATIC_ITERATIONS} "
                       "iterations while tracing")
        finally:
            self.frame.loops.pop()

    def stmt_Break(self, node):
        return self._loop_exit("break", StaticBreak)

    def stmt_Continue(self, node):
        return self._loop_exit("continue", StaticContinue)

    def _loop_exit(self, opcode, static_exc):
        loops = self.frame.loops
        if not loops:
            self.error(CubeSyntaxError, f"'{opcode}' outside a loop")
        kind, depth, loop_node = loops[-1]
        if kind == "traced":
            self.builder.op(opcode)
            return "terminated"
        if self.traced_depth > depth and isinstance(loop_node, ast.While):
            # `while True: ... if runtime_condition: break`: trace it again as a runtime loop.
            self.widen[("runtime_while", id(loop_node))] = True
            raise Retrace()
        if self.traced_depth > depth:
            self.error(CubeSyntaxError, f"'{opcode}' in an unrolled loop must not depend on a runtime condition")
        raise static_exc()

    def stmt_Return(self, node):
        frame = self.frame
        if len(self.frames) == 1:
            if node.value is not None:
                self.error(CubeSyntaxError, "kernels return nothing; write results into a Mut[Array] parameter")
            self.builder.op("return")
            if self.traced_depth > 0:
                return "terminated"
            raise KernelReturn()
        value = self.expr(node.value) if node.value is not None else None
        if self.traced_depth > frame.base_depth:
            self.error(CubeSyntaxError, "a @cb.func may return only at its end or under compile-time conditions; "
                       "assign the result to a variable under the runtime condition and return it at the end")
        raise FuncReturn(value)

    def stmt_Assert(self, node):
        cond = self.ops.truth(self.expr(node.test))
        if is_traced(cond):
            self.error(CubeSyntaxError, "assert on runtime values is not supported in kernels")
        if not cond:
            self.error(CubeValueError, "compile-time assertion failed")

    # --- assignment -------------------------------------------------------------------------
    def assign(self, target, value, node):
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                self.error(CubeTypeError, f"cannot unpack {type(value).__name__} into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v, node)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            index = self.expr(target.slice)
            self.subscript_store(container, index, value, target)
        else:
            self.error(CubeSyntaxError, f"cannot assign to {type(target).__name__} in a kernel")

    def assign_name(self, name, value, node):
        scope = self.frame.scope
        current = scope.get(name)
        if isinstance(current, Var):
            if not (is_traced(value) or is_number(value)):
                self.error(CubeTypeError, f"'{name}' holds a {current.type}; cannot assign {type(value).__name__}")
            self.builder.store_var(current, self.fit_var(current, value, name))
            return
        if is_traced(value) and self.traced_depth > 0:
            var = self.new_user_var(name, id(node), value.type)
            self.builder.store_var(var, self.fit_var(var, value, name))
            scope[name] = var
            return
        if self.traced_depth > 0 and name in scope and not is_number(value) and scope[name] is not value:
            self.error(CubeTypeError, f"'{name}' is rebound to a different {type(value).__name__} under a runtime "
                       "condition; only numbers can change under runtime control flow")
        scope[name] = value

    def fit_var(self, var: Var, value, name: str):
        """``value`` converted to ``var``'s type, or a Retrace if the variable must widen."""
        v = self.ops.lift(value, var.type)
        joined = join_types(var.type, v.type)
        if joined is None:
            self.error(CubeTypeError, f"variable '{name}' holds {var.type}; cannot assign a {v.type}")
        if joined != var.type:
            key = self.var_keys.get(var.id)
            if key is None:
                self.error(CubeTypeError, f"'{name}' holds {var.type}; cannot assign a {v.type}")
            self.widen[key] = joined
            raise Retrace()
        return self.ops.coerce(v, var.type, f"variable '{name}'")

    def new_user_var(self, name: str, site: int, type_: Type) -> Var:
        """A Var for a user's name; its type is widened if an earlier trace asked for it."""
        key = (name, site)
        want = self.widen.get(key)
        var = self.builder.new_var(name, (join_types(type_, want) or type_) if want else type_)
        self.var_keys[var.id] = key
        return var

    @contextmanager
    def traced_region(self, node, stmts, extra=()):
        """Enter runtime control flow (an ``if`` or a loop at ``node``).

        Names the region assigns that hold numbers become Vars first, so every path stores into
        one variable. A name first bound inside the region, and read outside it, also needs a
        Var declared before the region: that is learned while tracing, so it triggers a retrace
        with the Var pre-declared. Yields a list for ``if`` to add its then-branch scope to.
        """
        scope = self.frame.scope
        site = id(node)
        for name in sorted(self.names_assigned_in(node, stmts) | set(extra)):
            current = scope.get(name)
            forced = self.widen.get(("force", site, name))
            if is_traced(current) or is_number(current):
                lifted = self.ops.lift(current)
                var = self.new_user_var(name, site, join_types(lifted.type, forced) if forced else lifted.type)
                self.builder.store_var(var, self.fit_var(var, lifted, name))
                scope[name] = var
            elif forced is not None and not isinstance(current, Var):
                scope[name] = self.new_user_var(name, site, forced)
        before = dict(scope)
        branches = Branches()
        self.traced_depth += 1
        try:
            yield branches
        finally:
            self.traced_depth -= 1
        outside = None
        final = dict(scope)
        sides = branches.scopes + [final]
        # the scopes whose bindings reach past the region: a loop may run zero times (then
        # nothing it binds is bound), an if's sides count unless they ended in return/break
        reaching = [sc for sc, ended in zip(sides, branches.ended) if not ended] if branches.ended else []
        for candidate in sides:
            for name, value in candidate.items():
                if value is before.get(name, MISSING):
                    continue
                if outside is None:
                    outside = self.names_read_outside(node)
                if name not in outside:
                    if not isinstance(value, Var):
                        scope[name] = Poisoned(name)
                    continue
                if name not in before and not (reaching and all(
                        name in sc and not isinstance(sc[name], MaybeUnbound) for sc in reaching)):
                    scope[name] = MaybeUnbound(name, "if" if branches.ended else "loop",
                                               self.frame.source.loc(node).line)
                    continue
                if is_number(value) or isinstance(value, Var):
                    type_ = value.type if isinstance(value, Var) else self.ops.lift(value).type
                    self.widen[("force", site, name)] = type_
                    raise Retrace()
                scope[name] = Poisoned(name)

    def names_assigned_in(self, node, stmts) -> set[str]:
        """`assigned_names` of the statements of ``node`` (cached with the function's source: an
        ``if`` inside loops is entered on every trace and retrace)."""
        cache = self.frame.source.__dict__.setdefault("assigned", {})
        found = cache.get(id(node))
        if found is None:
            found = cache[id(node)] = frozenset(assigned_names(stmts))
        return found

    def names_read_outside(self, node) -> set[str]:
        """Names the current function reads outside the statement ``node`` (cached with the
        function's source, so later traces and specializations reuse it)."""
        source = self.frame.source
        cache = source.__dict__.setdefault("outside_reads", {})
        if id(node) not in cache:
            found = source.__dict__.get("name_reads")
            if found is None:
                found = source.__dict__["name_reads"] = _name_reads_by_region(source.tree)
            total, regions = found
            inside = regions.get(id(node))
            if inside is None:
                inside = _name_reads(node)
            cache[id(node)] = {name for name, count in total.items() if count > inside.get(name, 0)}
        return cache[id(node)]

    # --- expressions ------------------------------------------------------------------------


def _name_reads_by_region(tree) -> tuple[dict[str, int], dict[int, dict[str, int]]]:
    """How often each name is read in ``tree``, and in each statement with a body (by id), in one
    walk: each read counts for every such statement around it (a walk per region walked nested
    regions again, a tenth of a fuzz kernel's first trace)."""
    total: dict[str, int] = {}
    regions: dict[int, dict[str, int]] = {}

    stack = [(tree, ())]
    while stack:
        node, around = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            name = node.id
            total[name] = total.get(name, 0) + 1
            for counts in around:
                counts[name] = counts.get(name, 0) + 1
        elif isinstance(node, ast.stmt) and hasattr(node, "body"):
            counts = regions[id(node)] = {}
            around = (*around, counts)
        stack.extend((child, around) for child in ast.iter_child_nodes(node))
    return total, regions


def _name_reads(tree) -> dict[str, int]:
    """How often each name is read in ``tree``."""
    counts: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts
