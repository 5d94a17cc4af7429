"""Which plain Python callables a kernel may call while it is traced.

A call on compile-time values runs once, at trace time, and its result is frozen into the
kernel. That is right only for functions whose result depends on their arguments alone: the
``math`` module, Python's numeric builtins, methods of immutable built-in values
(``mode.startswith("f")``) and cubepy's own objects. Anything else (``random.random()``,
``time.time()``, a user's function that may read global state) is refused with its name.
"""

from __future__ import annotations

import types

_PURE_BUILTINS = frozenset({
    abs, all, any, bool, divmod, enumerate, float, int, isinstance, issubclass, len, list, max, min, pow,
    range, reversed, round, sorted, str, sum, tuple, type, zip, repr, hash, chr, ord, frozenset, bin, hex, oct,
})
_IMMUTABLE = (int, float, bool, str, bytes, tuple, frozenset, complex, type(None))


def is_pure(func) -> bool:
    if func in _PURE_BUILTINS:
        return True
    if isinstance(func, types.BuiltinFunctionType) and getattr(func, "__module__", None) == "math":
        return True
    if isinstance(func, (types.BuiltinMethodType, types.MethodWrapperType)) and isinstance(
            getattr(func, "__self__", None), _IMMUTABLE):
        return True
    module = getattr(func, "__module__", None) or getattr(type(func), "__module__", "")
    return isinstance(module, str) and (module == "cubepy" or module.startswith("cubepy."))


def describe_call(func) -> str:
    """``'random.Random.random'``, ``'time.time'``, or a Python function's own name."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    if isinstance(func, (types.FunctionType, types.MethodType)):
        return f"'{name}'"
    owner = getattr(func, "__self__", None)
    module = getattr(func, "__module__", None) or (type(owner).__module__ if owner is not None else None)
    if module and module not in ("builtins", "__main__") and not name.startswith(module + "."):
        name = f"{module}.{name}"
    return f"'{name}'"


__all__ = ["describe_call", "is_pure"]
