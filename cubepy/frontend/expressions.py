"""Expressions: names, operators, calls, indexing (see `codegen.py` for the model)."""

from __future__ import annotations

import ast
import builtins

from ..errors import CubeIndexError, CubeNameError, CubeSyntaxError, CubeTypeError, CubeValueError
from ..ir.nodes import Block, Value, Var
from ..ir.types import INDEX, DType, Type, bool_, f32
from ..lang.builtins import Builtin, Intrinsic
from . import dependencies
from .hints import not_a_cubepy_function_hint
from .intrinsics import HANDLERS, builtin_value
from .operators import is_number, is_traced
from .printing import format_string, trace_print
from .purity import describe_call, is_pure
from .scope import BINOPS, CMPOPS, STATIC_COMPARE, UNARYOPS, MaybeUnbound, Poisoned, describe, join_types
from .values import ArrayRef, RangeSpec, RegionRef


class Expressions:
    """Mixin of the tracing context: expression visitors and indexing."""

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

    def expr_JoinedStr(self, node):
        return format_string(self, node)

    def expr_Name(self, node):
        return self.load_name(node.id, node)

    def load_name(self, name, node):
        frame = self.frame
        if name in frame.scope:
            value = frame.scope[name]
        else:
            if name in frame.closure:
                value = frame.closure[name]
            elif name in frame.globals:
                value = frame.globals[name]
            elif hasattr(builtins, name):
                value = getattr(builtins, name)
            else:
                self.error(CubeNameError, f"name '{name}' is not defined")
            recorder = dependencies.current()
            if recorder is not None:
                recorder.read(frame.path, name, value)
        if isinstance(value, Var):
            return self.builder.load_var(value)
        if isinstance(value, MaybeUnbound):
            where = (f"only on some paths through the if at line {value.line}" if value.construct == "if" else
                     f"only inside the loop at line {value.line}, which may run zero times")
            self.error(CubeNameError, f"'{name}' may be unbound here: it is assigned {where}, and Python would "
                       f"raise UnboundLocalError where it is not; give it a value before line {value.line} "
                       f"(e.g. {name} = 0) or assign it on every path")
        if isinstance(value, Poisoned):
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
            if attr == "global_index" and isinstance(base, RegionRef):
                return RegionMethod(base, attr)
            extra = ", and a Region .global_index(j)" if isinstance(base, RegionRef) else ""
            self.error(CubeTypeError, f"arrays in kernels have .shape, .ndim and .dtype{extra}, not .{attr}")
        if is_traced(base):
            if attr == "dtype":
                return base.type.dtype
            if attr == "width":
                return base.type.width
            self.error(CubeTypeError, f"a {base.type} value has no attribute '{attr}'")
        try:
            value = getattr(base, attr)
        except AttributeError:
            self.error(CubeNameError, f"{describe(base)} has no attribute '{attr}'")
        if isinstance(value, Builtin):
            return builtin_value(self, value.name)
        return value

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_BinOp(self, node):
        return self.binary(BINOPS[type(node.op)], self.expr(node.left), self.expr(node.right))

    def binary(self, opname, a, b):
        for v in (a, b):
            if not (is_traced(v) or is_number(v)):
                self.error(CubeTypeError, f"unsupported operand {describe(v)} for an arithmetic operator")
        return self.ops.binary(opname, a, b)

    def expr_UnaryOp(self, node):
        operand = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        return self.ops.unary(UNARYOPS[type(node.op)], operand)

    def expr_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, comparator in zip(node.ops, node.comparators):
            right = self.expr(comparator)
            if not (is_traced(left) or is_traced(right)):   # compile-time values: Python decides
                for v in (left, right):
                    if isinstance(v, (ArrayRef, RegionRef)):
                        self.error(CubeTypeError, f"cannot compare {describe(v)} (an array); compare its "
                                   "elements, e.g. x[i] < 1.0")
                try:
                    this = STATIC_COMPARE[type(op)](left, right)
                except TypeError as e:
                    self.error(CubeTypeError, f"cannot compare these compile-time values: {e}")
                result = this if result is None else self.ops.binary("and", result, this) if is_traced(
                    result) else (result and this)
                left = right
                continue
            if type(op) not in CMPOPS:
                self.error(CubeSyntaxError, f"'{type(op).__name__}' comparisons of runtime values are not supported")
            for v in (left, right):
                if not (is_traced(v) or is_number(v)):
                    self.error(CubeTypeError, f"cannot compare {describe(v)}")
            this = self.ops.compare(CMPOPS[type(op)], left, right)
            result = this if result is None else self.ops.binary("and", result, this)
            left = right
        return result

    def expr_BoolOp(self, node):
        # Python's meaning: `a or b` is a if a is true, else b (and `a and b` the other way), and
        # the right side runs only where it is needed (it may index an array the left guards).
        is_and = isinstance(node.op, ast.And)
        value = self.expr(node.values[0])
        for value_node in node.values[1:]:
            cond = self.ops.truth(value)
            if not is_traced(cond):
                if cond != is_and:
                    return value
                value = self.expr(value_node)
                continue
            value = self._short_circuit(is_and, value, cond, value_node)
        return value

    def _short_circuit(self, is_and: bool, left, cond, right_node):
        """The runtime `left and right` / `left or right`, ``cond`` the truth of ``left``."""
        var = None
        if left.type.dtype.is_bool:     # the usual `i < n and x[i] > 0`: a bool variable
            var = self.builder.new_var("and" if is_and else "or", Type(bool_))
            self.builder.store_var(var, left)
        inner, other = Block(), Block()
        self.builder.op("if", (cond if is_and else self.ops.unary("not", cond),), blocks=(inner, other))
        self.traced_depth += 1
        try:
            with self.builder.at(inner):
                right = self.expr(right_node)
                both_bool = var is not None and (is_traced(right) and right.type.dtype.is_bool
                                                 or isinstance(right, bool))
                if both_bool:
                    self.builder.store_var(var, self.ops.lift(right))
        finally:
            self.traced_depth -= 1
        if both_bool:
            return self.builder.load_var(var)
        if not (is_traced(right) or is_number(right)):
            self.error(CubeTypeError, f"the right side of '{'and' if is_and else 'or'}' must be a number or a "
                       f"traced value, got {describe(right)}")
        joined = join_types(left.type, self.ops.lift(right, left.type).type)
        if joined is None:
            self.error(CubeTypeError, f"the two sides of '{'and' if is_and else 'or'}' have incompatible types "
                       f"{left.type} and {self.ops.lift(right, left.type).type}")
        result = self.builder.new_var("and" if is_and else "or", joined)
        with self.builder.at(inner):
            self.builder.store_var(result, self.ops.coerce(right, joined, f"the '{'and' if is_and else 'or'}'"))
        with self.builder.at(other):
            self.builder.store_var(result, self.ops.coerce(left, joined, f"the '{'and' if is_and else 'or'}'"))
        return self.builder.load_var(result)

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
            result_type = join_types(la.type, lb.type)
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
        if isinstance(func, RegionMethod):
            if kwargs:
                self.error(CubeTypeError, f"{func.name}() takes the local indices by position")
            return self.region_global_index(func.region, args)
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
        if func is builtins.print:
            return trace_print(self, args, kwargs)
        if any(is_traced(a) or isinstance(a, (ArrayRef, RegionRef)) for a in list(args) + list(kwargs.values())):
            self.error(CubeTypeError, f"{describe_call(func)} is not a cubepy function, so it cannot take runtime "
                       "values; " + not_a_cubepy_function_hint(func))
        if not is_pure(func):
            self.error(CubeTypeError, f"{describe_call(func)} is called while the kernel is compiled, and cubepy "
                       "calls only functions known to be pure at that time (the math module, Python's "
                       "numeric builtins, cubepy's own): its result would be frozen into the kernel for every "
                       "unit and launch. Compute it on the host and pass it as a parameter, or make it a "
                       "@cb.func")
        try:
            return func(*args, **kwargs)
        except Exception as e:  # a compile-time call failed: show where
            self.error(CubeValueError, f"calling {describe(func)} at compile time raised {type(e).__name__}: {e}")

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
        self.error(CubeTypeError, f"{describe(container)} cannot be indexed")

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
        self.error(CubeTypeError, f"{describe(container)} does not support item assignment")

    def line_index(self, line: Value, index):
        if not isinstance(index, int) or isinstance(index, bool):
            self.error(CubeTypeError, "a Line element index must be a compile-time int")
        if not 0 <= index < line.type.width:
            self.error(CubeIndexError, f"Line element {index} is out of range for a Line of width {line.type.width}")
        return index


class RegionMethod:
    """``part.global_index`` in a kernel, before it is called."""

    def __init__(self, region: RegionRef, name: str):
        self.region, self.name = region, name
