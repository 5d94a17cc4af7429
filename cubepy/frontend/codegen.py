"""Python AST -> IR: the statement and expression visitor.

The function's AST is walked once per specialization. Python values (numbers, Comptime
parameters, CubeDim, PlaneDim) are evaluated on the spot, so ``if``/``for``/``while`` on them
fold away; traced values build IR. A name assigned at the top level of the kernel is bound to
its SSA value; a name assigned under traced control flow becomes a mutable local (`Var`).
"""

from __future__ import annotations

import ast
import builtins
import operator
from contextlib import contextmanager

from ..errors import (
    CubeIndexError,
    CubeNameError,
    CubeSyntaxError,
    CubeTypeError,
    CubeValueError,
)
from ..ir.nodes import Block, Value, Var
from ..ir.types import INDEX, DType, Type, bool_, f32
from ..lang.builtins import Builtin, Intrinsic
from .intrinsics import HANDLERS, builtin_value
from .operators import is_number, is_traced
from .source import FunctionSource
from .values import ArrayRef, RangeSpec, RegionRef, Unroll

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
           ast.LShift: "shl", ast.RShift: "shr"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_STATIC_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
                   ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
                   ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_UNARYOPS = {ast.USub: "neg", ast.Not: "not", ast.Invert: "invert"}
_MAX_STATIC_ITERATIONS = 100_000


class _Poisoned:
    """A name last assigned a compile-time value under a runtime condition."""

    def __init__(self, name: str):
        self.name = name


class _KernelReturn(Exception):
    pass


class _FuncReturn(Exception):
    def __init__(self, value):
        self.value = value


class _StaticBreak(Exception):
    pass


class _StaticContinue(Exception):
    pass


class Retrace(Exception):
    """A variable needs a wider type than its first assignment gave it; trace again."""


class Frame:
    """One function being traced (the kernel, or an inlined @cb.func)."""

    def __init__(self, source: FunctionSource, scope: dict, traced_depth: int):
        self.source = source
        self.scope = scope
        self.globals = source.fn.__globals__
        self.closure = _closure_vars(source.fn)
        self.base_depth = traced_depth
        self.loops: list[tuple[str, int]] = []   # ("traced" | "static", depth at entry), innermost last


def _closure_vars(fn) -> dict:
    if not fn.__closure__:
        return {}
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def assigned_names(nodes) -> set[str]:
    """Names a list of statements may assign (targets of assignments and for loops)."""
    names: set[str] = set()
    for stmt in nodes:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


class CodeGen:
    """Mixin of the tracing context: statement and expression visitors."""

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
                return

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
        opname = _BINOPS.get(type(node.op))
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
            self.visit_block(node.body if cond else node.orelse)
            return
        then_block, else_block = Block(), Block()
        with self.traced_region(node, node.body + node.orelse) as branch_scopes:
            self.builder.op("if", (cond,), blocks=(then_block, else_block))
            entry_scope = dict(self.frame.scope)
            with self.builder.at(then_block):
                self.visit_block(node.body)
            branch_scopes.append(dict(self.frame.scope))
            self.frame.scope.clear()
            self.frame.scope.update(entry_scope)
            with self.builder.at(else_block):
                self.visit_block(node.orelse)

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
        start, stop, step = (self.ops.cast(self._int_operand(v, "range bound"), INDEX)
                             for v in (iterable.start, iterable.stop, iterable.step))
        counter = self.builder.new_var(f"{node.target.id}_counter", Type(INDEX))
        body = Block()
        with self.traced_region(node, node.body, extra=[node.target.id]):
            user_var = self.frame.scope.get(node.target.id)
            if not isinstance(user_var, Var) or user_var.type != Type(INDEX):
                user_var = self.new_user_var(node.target.id, id(node), Type(INDEX))
                self.frame.scope[node.target.id] = user_var
            self.builder.op("for", (start, stop, step), blocks=(body,), var=counter)
            self.frame.loops.append(("traced", self.traced_depth))
            try:
                with self.builder.at(body):
                    self.builder.store_var(user_var, self.builder.load_var(counter))
                    self.visit_block(node.body)
            finally:
                self.frame.loops.pop()

    def _int_operand(self, v, what):
        if is_traced(v) and not v.type.dtype.is_int:
            self.error(CubeTypeError, f"{what} must be an integer, got {v.type}")
        if is_number(v) and not isinstance(v, int):
            self.error(CubeTypeError, f"{what} must be an integer, got {v!r}")
        return v

    def _static_loop(self, node, values):
        self.frame.loops.append(("static", self.traced_depth))
        try:
            for value in values:
                self.assign(node.target, value, node)
                try:
                    self.visit_block(node.body)
                except _StaticContinue:
                    continue
                except _StaticBreak:
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
            self.frame.loops.append(("traced", self.traced_depth))
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
        self.frame.loops.append(("static", self.traced_depth))
        try:
            for _ in range(_MAX_STATIC_ITERATIONS):
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
                except _StaticContinue:
                    continue
                except _StaticBreak:
                    return
            self.error(CubeValueError, f"a while loop on compile-time values ran over {_MAX_STATIC_ITERATIONS} "
                       "iterations while tracing")
        finally:
            self.frame.loops.pop()

    def stmt_Break(self, node):
        return self._loop_exit("break", _StaticBreak)

    def stmt_Continue(self, node):
        return self._loop_exit("continue", _StaticContinue)

    def _loop_exit(self, opcode, static_exc):
        loops = self.frame.loops
        if not loops:
            self.error(CubeSyntaxError, f"'{opcode}' outside a loop")
        kind, depth = loops[-1]
        if kind == "traced":
            self.builder.op(opcode)
            return "terminated"
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
            raise _KernelReturn()
        value = self.expr(node.value) if node.value is not None else None
        if self.traced_depth > frame.base_depth:
            self.error(CubeSyntaxError, "a @cb.func may return only at its end or under compile-time conditions; "
                       "assign the result to a variable under the runtime condition and return it at the end")
        raise _FuncReturn(value)

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
        joined = _join(var.type, v.type)
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
        var = self.builder.new_var(name, (_join(type_, want) or type_) if want else type_)
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
        for name in sorted(assigned_names(stmts) | set(extra)):
            current = scope.get(name)
            forced = self.widen.get(("force", site, name))
            if is_traced(current) or is_number(current):
                lifted = self.ops.lift(current)
                var = self.new_user_var(name, site, _join(lifted.type, forced) if forced else lifted.type)
                self.builder.store_var(var, self.fit_var(var, lifted, name))
                scope[name] = var
            elif forced is not None and not isinstance(current, Var):
                scope[name] = self.new_user_var(name, site, forced)
        before = dict(scope)
        branch_scopes: list[dict] = []
        self.traced_depth += 1
        try:
            yield branch_scopes
        finally:
            self.traced_depth -= 1
        outside = None
        for candidate in branch_scopes + [dict(scope)]:
            for name, value in candidate.items():
                if value is before.get(name, _MISSING):
                    continue
                if outside is None:
                    outside = self.names_read_outside(node)
                if name not in outside:
                    if not isinstance(value, Var):
                        scope[name] = _Poisoned(name)
                    continue
                if is_number(value) or isinstance(value, Var):
                    type_ = value.type if isinstance(value, Var) else self.ops.lift(value).type
                    self.widen[("force", site, name)] = type_
                    raise Retrace()
                scope[name] = _Poisoned(name)

    def names_read_outside(self, node) -> set[str]:
        """Names the current function reads outside the statement ``node`` (cached per node)."""
        cache = self.__dict__.setdefault("_outside_cache", {})
        key = (id(self.frame.source), id(node))
        if key not in cache:
            inside = {id(n) for n in ast.walk(node)}
            cache[key] = {n.id for n in ast.walk(self.frame.source.tree)
                          if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in inside}
        return cache[key]

    # --- expressions ------------------------------------------------------------------------
    def expr(self, node):
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            self.error(CubeSyntaxError, f"'{type(node).__name__}' expressions are not supported in kernels")
        saved = self.builder.loc
        self.builder.loc = self.frame.source.loc(node)
        try:
            return method(node)
        finally:
            self.builder.loc = saved

    def static_eval(self, node):
        value = self.expr(node)
        if is_traced(value):
            self.error(CubeTypeError, "this must be known at compile time")
        return value

    def expr_Constant(self, node):
        return node.value

    def expr_Name(self, node):
        return self.load_name(node.id, node)

    def load_name(self, name, node):
        frame = self.frame
        if name in frame.scope:
            value = frame.scope[name]
        elif name in frame.closure:
            value = frame.closure[name]
        elif name in frame.globals:
            value = frame.globals[name]
        elif hasattr(builtins, name):
            value = getattr(builtins, name)
        else:
            self.error(CubeNameError, f"name '{name}' is not defined")
        if isinstance(value, Var):
            return self.builder.load_var(value)
        if isinstance(value, _Poisoned):
            self.error(CubeNameError, f"'{name}' was given a compile-time value under a runtime condition, so its "
                       "value here depends on the path taken; give it a runtime value before the condition "
                       "(e.g. declare it as name: i32 = 0)")
        if isinstance(value, Builtin):
            return builtin_value(self, value.name)
        return value

    def expr_Attribute(self, node):
        base = self.expr(node.value)
        attr = node.attr
        if isinstance(base, (ArrayRef, RegionRef)):
            if attr == "shape":
                return base.shape
            if attr == "ndim":
                return len(base.shape)
            if attr == "dtype":
                return base.array.buffer.type.dtype if isinstance(base, RegionRef) else base.buffer.type.dtype
            self.error(CubeTypeError, f"arrays in kernels have .shape, .ndim and .dtype, not .{attr}")
        if is_traced(base):
            if attr == "dtype":
                return base.type.dtype
            if attr == "width":
                return base.type.width
            self.error(CubeTypeError, f"a {base.type} value has no attribute '{attr}'")
        try:
            value = getattr(base, attr)
        except AttributeError:
            self.error(CubeNameError, f"{_short(base)} has no attribute '{attr}'")
        if isinstance(value, Builtin):
            return builtin_value(self, value.name)
        return value

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_BinOp(self, node):
        return self.binary(_BINOPS[type(node.op)], self.expr(node.left), self.expr(node.right))

    def binary(self, opname, a, b):
        for v in (a, b):
            if not (is_traced(v) or is_number(v)):
                self.error(CubeTypeError, f"unsupported operand {_short(v)} for an arithmetic operator")
        return self.ops.binary(opname, a, b)

    def expr_UnaryOp(self, node):
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        return self.ops.unary(_UNARYOPS[type(node.op)], operand)

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, comparator in zip(node.ops, node.comparators):
            right = self.expr(comparator)
            if not (is_traced(left) or is_traced(right)):   # compile-time values: Python decides
                this = _STATIC_COMPARE[type(op)](left, right)
                result = this if result is None else self.ops.binary("and", result, this) if is_traced(
                    result) else (result and this)
                left = right
                continue
            if type(op) not in _CMPOPS:
                self.error(CubeSyntaxError, f"'{type(op).__name__}' comparisons of runtime values are not supported")
            for v in (left, right):
                if not (is_traced(v) or is_number(v)):
                    self.error(CubeTypeError, f"cannot compare {_short(v)}")
            this = self.ops.compare(_CMPOPS[type(op)], left, right)
            result = this if result is None else self.ops.binary("and", result, this)
            left = right
        return result

    def expr_BoolOp(self, node):
        # Short-circuit like Python: the right side runs only where needed (it may index
        # an array that the left side guards).
        is_and = isinstance(node.op, ast.And)
        result = self.ops.truth(self.expr(node.values[0]))
        for value_node in node.values[1:]:
            if not is_traced(result):
                if result != is_and:
                    return result
                result = self.ops.truth(self.expr(value_node))
                continue
            var = self.builder.new_var("and" if is_and else "or", Type(bool_))
            self.builder.store_var(var, result)
            inner = Block()
            cond = result if is_and else self.ops.unary("not", result)
            self.builder.op("if", (cond,), blocks=(inner, Block()))
            self.traced_depth += 1
            try:
                with self.builder.at(inner):
                    rhs = self.ops.lift(self.ops.truth(self.expr(value_node)))
                    self.builder.store_var(var, rhs)
            finally:
                self.traced_depth -= 1
            result = self.builder.load_var(var)
        return result

    def expr_IfExp(self, node):
        cond = self.ops.truth(self.expr(node.test))
        if not is_traced(cond):
            return self.expr(node.body if cond else node.orelse)
        then_block, else_block = Block(), Block()
        self.builder.op("if", (cond,), blocks=(then_block, else_block))
        self.traced_depth += 1
        try:
            with self.builder.at(then_block):
                a = self.expr(node.body)
            with self.builder.at(else_block):
                b = self.expr(node.orelse)
            for v in (a, b):
                if not (is_traced(v) or is_number(v)):
                    self.error(CubeTypeError, "both sides of a runtime conditional expression must be numbers")
            # Lifting a number makes a constant (no op), so it is safe outside the branch blocks.
            la = self.ops.lift(a, b.type if is_traced(b) else None)
            lb = self.ops.lift(b, la.type)
            result_type = _join(la.type, lb.type)
            if result_type is None:
                self.error(CubeTypeError, f"the two sides have incompatible types {la.type} and {lb.type}")
            var = self.builder.new_var("ifexp", result_type)
            with self.builder.at(then_block):
                self.builder.store_var(var, self.ops.coerce(a, result_type, "the conditional expression"))
            with self.builder.at(else_block):
                self.builder.store_var(var, self.ops.coerce(b, result_type, "the conditional expression"))
        finally:
            self.traced_depth -= 1
        return self.builder.load_var(var)

    def expr_Subscript(self, node):
        container = self.expr(node.value)
        index = self.expr(node.slice)
        return self.subscript_load(container, index, node)

    def expr_Slice(self, node):
        self.error(CubeSyntaxError, "slices are not supported in kernels; index one element at a time")

    def expr_Call(self, node):
        func = self.expr(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.error(CubeSyntaxError, "*args calls are not supported in kernels")
            args.append(self.expr(a))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                self.error(CubeSyntaxError, "**kwargs calls are not supported in kernels")
            kwargs[kw.arg] = self.expr(kw.value)
        return self.call(func, args, kwargs, node)

    def call(self, func, args, kwargs, node):
        if isinstance(func, Intrinsic):
            return HANDLERS[func.name](self, args, kwargs)
        if isinstance(func, DType):
            if len(args) != 1:
                self.error(CubeTypeError, f"{func}(value) takes one argument")
            return self.ops.cast(args[0], func) if (is_traced(args[0]) or func != bool_) else \
                self.ops.cast(self.ops.truth(args[0]), func)
        if func is range:
            return self.make_range(args)
        if func is len:
            return self.length(args)
        if func in (min, max):
            return HANDLERS[func.__name__](self, args, kwargs)
        if func is abs:
            return HANDLERS["abs"](self, args, kwargs)
        if func in (int, float, bool) and args and is_traced(args[0]):
            target = {int: INDEX, float: f32, bool: bool_}[func]
            if func is bool:
                return self.ops.truth(args[0])
            return self.ops.cast(args[0], target)
        inline = getattr(func, "__cubepy_func__", None)
        if inline is not None:
            return self.inline(inline, args, kwargs)
        if getattr(func, "__cubepy_kernel__", None) is not None:
            self.error(CubeTypeError, f"a kernel cannot call the kernel '{func.__name__}'; "
                       "make the shared code a @cb.func")
        if any(is_traced(a) or isinstance(a, (ArrayRef, RegionRef)) for a in list(args) + list(kwargs.values())):
            self.error(CubeTypeError, f"{_short(func)} is not a cubepy function, so it cannot take runtime values; "
                       "decorate it with @cb.func to call it from kernels")
        try:
            return func(*args, **kwargs)
        except Exception as e:  # a compile-time call failed: show where
            self.error(CubeValueError, f"calling {_short(func)} at compile time raised {type(e).__name__}: {e}")

    def make_range(self, args):
        if not 1 <= len(args) <= 3:
            self.error(CubeTypeError, "range() takes 1 to 3 arguments")
        for a in args:
            self._int_operand(a, "range bound")
        if len(args) == 1:
            return RangeSpec(0, args[0], 1)
        if len(args) == 2:
            return RangeSpec(args[0], args[1], 1)
        return RangeSpec(*args)

    def length(self, args):
        (obj,) = args
        if isinstance(obj, ArrayRef):
            return obj.shape[0]
        if isinstance(obj, RegionRef):
            return obj.shape[0]
        if is_traced(obj):
            return obj.type.width
        return len(obj)

    # --- indexing ---------------------------------------------------------------------------
    def subscript_load(self, container, index, node):
        if isinstance(container, ArrayRef):
            indices = self.index_values(container, index)
            return self.builder.op("load", (container.buffer, *indices), container.buffer.type,
                                   checked=self.spec.checked, array=container.name)
        if isinstance(container, RegionRef):
            return self.region_access(container, index, None)
        if is_traced(container) and container.type.is_line:
            k = self.line_index(container, index)
            return self.builder.op("extract", (container,), Type(container.type.dtype), index=k)
        if isinstance(container, (tuple, list)):
            if is_traced(index):
                self.error(CubeTypeError, "a tuple can only be indexed by a compile-time int")
            return container[index]
        self.error(CubeTypeError, f"{_short(container)} cannot be indexed")

    def subscript_store(self, container, index, value, node):
        if isinstance(container, ArrayRef):
            self.require_mutable(container, "assignment")
            indices = self.index_values(container, index)
            v = self.ops.coerce(value, container.buffer.type, f"array '{container.name}'")
            self.builder.op("store", (container.buffer, *indices, v), checked=self.spec.checked,
                            array=container.name)
            return
        if isinstance(container, RegionRef):
            self.region_access(container, index, value)
            return
        if is_traced(container) and container.type.is_line and isinstance(node.value, ast.Name):
            k = self.line_index(container, index)
            scalar = self.ops.coerce(value, Type(container.type.dtype), "a Line element")
            updated = self.builder.op("insert", (container, scalar), container.type, index=k)
            self.assign_name(node.value.id, updated, node)
            return
        self.error(CubeTypeError, f"{_short(container)} does not support item assignment")

    def line_index(self, line: Value, index):
        if not isinstance(index, int) or isinstance(index, bool):
            self.error(CubeTypeError, "a Line element index must be a compile-time int")
        if not 0 <= index < line.type.width:
            self.error(CubeIndexError, f"Line element {index} is out of range for a Line of width {line.type.width}")
        return index


_MISSING = object()


def _join(a: Type, b: Type) -> Type | None:
    """The type a variable needs to hold values of both types, or None."""
    from ..ir.types import PromotionError, promote

    if a.width != b.width and 1 not in (a.width, b.width):
        return None
    try:
        dtype = promote(a.dtype, b.dtype)
    except PromotionError:
        return None
    return Type(dtype, max(a.width, b.width))


def _short(x) -> str:
    name = getattr(x, "__qualname__", None) or getattr(x, "__name__", None)
    return f"'{name}'" if name else type(x).__name__
