"""The host's test of a whole launch (`cubepy.ir.cube_checks.LaunchTest`), as Python.

A checked kernel on a device with ``checks_per_launch`` (CUDA, HIP, OpenCL) tests once per cube that its
affine accesses lie inside their arrays; on a GPU every unit evaluates that test. Before each
launch the host evaluates the kernel's launch test instead, from the arrays' extents, the scalar
arguments and the launch shape, and passes the answer (the ``launch_in_bounds`` op): where the
whole launch is inside, no unit evaluates the cube's test, and the kernel runs the code it runs
unchecked. Where it is not, or where a launch path passes nothing better than False, the cube's
test decides as before: False is always safe.

`LaunchCheck.evaluate` serves the full launch path (and the interpreter); the generated warm path
takes `LaunchCheck.function` with its launch shape folded in and remembers the answers per tuple of
the extents and scalars the test reads, so a warm launch pays a tuple and a dict lookup.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from typing import Any

from ..ir import semantics
from ..ir.nodes import Const, Kernel

# an input of the test: ("extent", param, axis) | ("scalar", param) | ("count", axis) | ("dim", axis)
Input = tuple

_COMPARE = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_AXES = "xyz"
_HELPERS = {"_floordiv": semantics.floordiv, "_mod": semantics.mod, "_shl": semantics.shift_left,
            "_shr": semantics.shift_right}


class LaunchCheck:
    """One kernel's launch test, ready to evaluate on the host."""

    def __init__(self, kernel: Kernel):
        test = kernel.launch_test
        self.kernel = kernel
        self.ops, self.ok, self.clones = test.ops, test.ok, test.clones
        self.inputs: tuple[Input, ...] = tuple(dict.fromkeys(
            i for op in self.ops if (i := self._input(op)) is not None))
        _, self._function = self.function({})
        self._answers: dict[tuple, bool] = {}

    def function(self, known: dict[Input, int]) -> tuple[str, Callable[..., bool]]:
        """``(source, ok)``: ``ok(*values)`` answers for the inputs not in ``known``, in the order
        of `inputs`, with those in ``known`` folded in."""
        left = [i for i in self.inputs if i not in known]
        lines, result = self.lines({i: f"x{k}" for k, i in enumerate(left)}, known)
        source = "def ok(" + ", ".join(f"x{k}" for k in range(len(left))) + "):\n"
        source += "".join(f"    {line}\n" for line in lines) + f"    return bool({result})\n"
        namespace = dict(_HELPERS)
        exec(compile(source, f"<cubepy launch test of {self.kernel.name}>", "exec"), namespace)
        return source, namespace["ok"]

    def _input(self, op) -> Input | None:
        code = op.opcode
        if code == "param":
            return ("scalar", op.attrs["index"])
        if code == "shape":
            return ("extent", _param_index(self.kernel, op.args[0]), op.attrs.get("dim", 0))
        if code == "builtin":
            name = op.attrs["name"]
            if name.startswith("cube_count_"):
                return ("count", _AXES.index(name[-1]))
            if name.startswith("cube_dim_"):
                return ("dim", _AXES.index(name[-1]))
            if name != "plane_dim":
                raise AssertionError(f"launch test of {self.kernel.name}: builtin {name} varies in a launch")
        return None

    def evaluate(self, count: tuple, dim: tuple, args: list) -> bool:
        """The answer for a launch of ``count`` cubes of ``dim`` units with ``args`` (following
        ``kernel.params``: arrays with a ``shape`` as the kernel sees it, then scalars)."""
        values = []
        for kind, a, *rest in self.inputs:
            if kind == "extent":
                values.append(int(args[a].shape[rest[0]]))
            elif kind == "scalar":
                values.append(int(args[a]))
            else:
                values.append((count if kind == "count" else dim)[a])
        key = tuple(values)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._function(*values)
            if len(self._answers) < 256:
                self._answers[key] = answer
        return answer

    def lines(self, names: dict[Input, str], known: dict[Input, int]) -> tuple[list[str], str]:
        """Python lines computing the test and the expression of its answer, given a plain name
        for each input (``names``: substituted as they are, so no compound expressions) or its
        value (``known``, folded in)."""
        values: dict[int, Any] = {}      # value id -> an int/bool constant, or a name (str)
        lines: list[str] = []

        def arg(v) -> Any:
            if isinstance(v, Const):
                return v.value
            return values[v.id]

        def text(v) -> str:
            return v if isinstance(v, str) else repr(v)

        for k, op in enumerate(self.ops):
            inp = self._input(op)
            if inp is not None:
                values[op.result.id] = known[inp] if inp in known else names[inp]
                continue
            if op.opcode == "builtin":          # plane_dim
                values[op.result.id] = self.kernel.plane_dim
                continue
            args = [arg(a) for a in op.args]
            simple = _simplified(op, args) if op.result.id not in self.clones else None
            if simple is not None:
                values[op.result.id] = simple
                continue
            expr = self._expression(op, [text(a) for a in args])
            if not any(isinstance(a, str) for a in args):
                values[op.result.id] = eval(expr, dict(_HELPERS))     # constants: folded
                continue
            name = f"t{k}"
            lines.append((name, expr))
            values[op.result.id] = name
        result = text(values[self.ok.id])
        return _used(lines, result), result

    def _expression(self, op, a: list[str]) -> str:
        code, t = op.opcode, op.result.type
        if op.result.id in self.clones:       # the kernel's own op: its wrapping rules
            dtype = t.dtype
            if code in _ARITH:
                exact = f"({a[0]} {_ARITH[code]} {a[1]})"
            elif code == "neg":
                exact = f"(-{a[0]})"
            elif code in ("floordiv", "mod"):
                exact = f"_{code}({a[0]}, {a[1]})"
            elif code in ("min", "max"):
                return f"{code}({a[0]}, {a[1]})"
            elif code in ("shl", "shr"):
                exact = f"_{code}({a[0]}, {a[1]}, {op.args[0].type.dtype.bits})"
            elif code == "cast":
                exact = a[0]
            else:
                raise AssertionError(f"launch test of {self.kernel.name}: no host form of {code}")
            return _wrapped(exact, dtype)
        if code in _ARITH:
            return f"({a[0]} {_ARITH[code]} {a[1]})"
        if code == "floordiv":           # by a divisor the test also requires to be at least 1
            return f"_floordiv({a[0]}, {a[1]})"
        if code in _COMPARE:
            return f"({a[0]} {_COMPARE[code]} {a[1]})"
        if code == "select":
            return f"({a[1]} if {a[0]} else {a[2]})"
        if code == "and":
            return f"({a[0]} and {a[1]})"
        raise AssertionError(f"launch test of {self.kernel.name}: no host form of {code}")


def _used(lines: list[tuple[str, str]], result: str) -> list[str]:
    """The lines ``result`` needs, as ``name = expr``: the emitter keeps compares it merged."""
    needed, kept = {result}, []
    for name, expr in reversed(lines):
        if name in needed:
            kept.append(f"{name} = {expr}")
            needed.update(re.findall(r"\bt\d+\b", expr))
    return kept[::-1]


def _simplified(op, args: list) -> Any:
    """The value of an exact op with a neutral or absorbing constant operand, or None (a cast of
    the test's own is a widening to i64, or the constant answer: its operand)."""
    code = op.opcode
    if code == "cast":
        return args[0]
    if code == "select" and not isinstance(args[0], str):
        return args[1] if args[0] else args[2]
    if code == "and" and any(a is False for a in args):
        return False
    if code == "and" and args[0] is True:
        return args[1]
    if code == "and" and args[1] is True:
        return args[0]
    if len(args) != 2 or code not in ("add", "sub", "mul"):
        return None
    a, b = args
    if code == "mul" and (a == 0 or b == 0) and not (isinstance(a, str) and isinstance(b, str)):
        return 0
    if (code == "add" and a == 0) or (code == "mul" and a == 1):
        return b
    if (code in ("add", "sub") and b == 0) or (code == "mul" and b == 1):
        return a
    return None


def _wrapped(expr: str, dtype) -> str:
    bits = dtype.bits
    mask = (1 << bits) - 1
    if not dtype.is_signed:
        return f"({expr} & {mask})"
    half = 1 << (bits - 1)
    return f"(((({expr}) + {half}) & {mask}) - {half})"


def _param_index(kernel: Kernel, buf) -> int:
    for k, p in enumerate(kernel.params):
        if p is buf:
            return k
    raise AssertionError(f"launch test of {kernel.name}: shape of {buf.name}, which is not a parameter")


_CHECKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def launch_check(kernel: Kernel) -> LaunchCheck | None:
    """The launch test of ``kernel`` ready to evaluate (made once per kernel), or None if it has none."""
    if kernel.launch_test is None:
        return None
    found = _CHECKS.get(kernel)
    if found is None:
        found = _CHECKS[kernel] = LaunchCheck(kernel)
    return found


def launch_in_bounds(kernel: Kernel, count: tuple, dim: tuple, args: list) -> bool:
    """The answer a launch passes to ``kernel`` (False where it has no launch test: it is unused)."""
    check = launch_check(kernel)
    return check is not None and check.evaluate(count, dim, args)
