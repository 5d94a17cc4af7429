"""What a trace read from outside the kernel's source, so that a later process can tell whether a
trace it did not run would come out the same.

A trace is determined by the kernel's source, its specialization, cubepy's own code, and the
values its names resolved to outside the function: globals, closure cells and builtins of the
kernel and of every ``@cb.func`` it inlined. While `recording` is active, the tracer reports each
such read (`Dependencies.read`) under the *path* of the function that made it: ``()`` for the
kernel, ``("helper",)`` for a helper reached through the kernel's name ``helper``, and so on.
Each value is kept as a fingerprint, which is equal in two processes only where the value is:

- numbers, strings, bytes, None, and tuples, lists and frozensets of them: their type and repr
  (a float: its bits, so that NaNs of different payloads differ);
- modules of cubepy, math, cmath, numpy and builtins: their name (their attributes are code);
- functions, classes and objects that such a module holds under their own name (``len``,
  ``math.sqrt``, ``np.float32``, ``cb.f32``, ``cb.ABSOLUTE_POS``): that module and name;
- ``@cb.func`` helpers: their source text, file, first line and defaults (what they read is
  recorded under their own path);
- NumPy scalars and dtypes: their dtype and bytes.

Anything else (a user's module, a configuration object) has no fingerprint, and a trace that
read one is not reusable: `Dependencies.reusable` is False and the kernel is traced in every
process, as before. `Dependencies.hold` re-resolves every read against the current functions.
"""

from __future__ import annotations

import builtins
import struct
import sys
import types
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from .scope import closure_vars

TRUSTED_MODULES = ("cubepy", "math", "cmath", "numpy", "builtins")
_MISSING = ("missing",)
_RECORDING: ContextVar[Dependencies | None] = ContextVar("cubepy_dependencies", default=None)
_PRIMITIVE = (bool, int, complex, str, bytes, type(None))


class Dependencies:
    """The outside reads of every trace of one kernel function, by ``(path, name)``."""

    def __init__(self):
        self.reads: dict[tuple[tuple[str, ...], str], tuple] = {}
        self.why_not: str | None = None          # why these traces cannot be reused, if they cannot
        self._origins: dict[int, tuple[str, ...]] = {}    # id(@cb.func) -> the path it was read through
        self._objects: dict[tuple, Any] = {}     # the object last read under each key (fingerprinted once)

    @property
    def reusable(self) -> bool:
        return self.why_not is None

    def read(self, path: tuple[str, ...] | None, name: str, value: Any) -> None:
        """The tracer resolved ``name`` outside the function at ``path`` to ``value``."""
        if path is None:
            self.refuse(f"'{name}' was read in a @cb.func reached other than by a name")
            return
        key = (path, name)
        if self._objects.get(key, _MISSING) is value and key in self.reads:
            return                    # a name read again (a loop unrolled at trace time, a retrace)
        if not _holds_a_list(value):  # a list may change between two reads: fingerprinted at each
            self._objects[key] = value
        found = fingerprint(value)
        if found is None:
            self.refuse(f"'{name}' is a {type(value).__name__}, which has no fingerprint")
        elif self.reads.setdefault(key, found) != found:
            self.refuse(f"'{name}' changed value between two traces in this process")
        if is_cube_function(value):
            self._origins[id(value)] = path + (name,)

    def path_of(self, func: Any) -> tuple[str, ...] | None:
        """The path of an inlined @cb.func: the name it was last read through, or None."""
        return self._origins.get(id(func))

    def refuse(self, why: str) -> None:
        if self.why_not is None:
            self.why_not = why

    def merge_snapshot(self, reads: dict) -> None:
        """Add the reads of a trace made in another process (a `snapshot` that `hold` accepted)."""
        for key, found in reads.items():
            if self.reads.setdefault(key, found) != found:
                self.refuse(f"'{key[1]}' changed value between two traces")

    def snapshot(self) -> dict:
        """The reads as plain data (to be stored with a trace)."""
        return dict(self.reads)

    @staticmethod
    def hold(reads: dict, fn: Any) -> bool:
        """Whether every read in ``reads`` (a `snapshot`) still resolves to an equal fingerprint,
        starting from the kernel function ``fn``."""
        functions: dict[tuple[str, ...], Any] = {(): fn}
        for path, name in sorted(reads, key=lambda k: len(k[0])):
            owner = _function_at(functions, path)
            if owner is None or fingerprint(resolve(owner, name)) != reads[(path, name)]:
                return False
        return True


def _function_at(functions: dict, path: tuple[str, ...]) -> Any:
    """The Python function at ``path``, resolving each step through its parent's names."""
    if path in functions:
        return functions[path]
    parent = _function_at(functions, path[:-1])
    if parent is None:
        return None
    value = resolve(parent, path[-1])
    fn = getattr(value, "fn", None) if is_cube_function(value) else None
    functions[path] = fn
    return fn


def resolve(fn: Any, name: str) -> Any:
    """What ``name`` means inside ``fn`` outside its locals: closure cell, global, builtin (the
    tracer's order), or a marker for none."""
    closure = closure_vars(fn)
    if name in closure:
        return closure[name]
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, _MISSING)


def _holds_a_list(value: Any) -> bool:
    cls = value.__class__
    return cls is list or (cls is tuple or cls is frozenset) and any(_holds_a_list(v) for v in value)


def is_cube_function(value: Any) -> bool:
    return getattr(value, "__cubepy_func__", None) is value


def fingerprint(value: Any, depth: int = 0) -> tuple | None:
    """A value's identity across processes (module docstring), or None where it has none."""
    if value is _MISSING:
        return _MISSING
    cls = value.__class__
    if cls is float:             # the bits: repr gives every NaN the same text
        return ("float", struct.pack("<d", value).hex())
    if cls in _PRIMITIVE:
        return (cls.__name__, repr(value))
    if cls in (tuple, list, frozenset):
        if depth > 4 or len(value) > 4096:
            return None
        items = [fingerprint(v, depth + 1) for v in value]
        if any(i is None for i in items):
            return None
        return (cls.__name__, tuple(sorted(items, key=repr) if cls is frozenset else items))
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__) if _trusted(value.__name__) else None
    if is_cube_function(value):
        return _func_fingerprint(value, depth)
    if isinstance(value, np.generic):
        return ("numpy scalar", value.dtype.str, value.tobytes().hex())
    if isinstance(value, np.dtype):
        return ("numpy dtype", value.str)
    return _named_fingerprint(value)


def _func_fingerprint(func: Any, depth: int) -> tuple | None:
    text = getattr(func, "source_text", None)
    fn = func.fn
    defaults = fingerprint(fn.__defaults__ or (), depth + 1)
    kwdefaults = fingerprint(tuple(sorted((fn.__kwdefaults__ or {}).items())), depth + 1)
    if text is None or defaults is None or kwdefaults is None:
        return None
    return ("func", func.__module__, func.__qualname__, text.filename, text.first_line, text.text, defaults, kwdefaults)


_NAMED: dict[int, tuple] = {}


def _named_fingerprint(value: Any) -> tuple | None:
    """``("object", module, name)`` for an object a trusted module holds under that name."""
    found = _NAMED.get(id(value))
    if found is not None and found[0] is value:
        return found[1]
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    candidates = []
    if isinstance(module, str) and isinstance(name, str) and _trusted(module) and "." not in name:
        candidates.append((module, name))
    if not candidates:
        candidates = [("cubepy", n) for n in _cubepy_names().get(id(value), ())]
    for module, name in candidates:
        owner = sys.modules.get(module)
        if owner is not None and getattr(owner, name, None) is value:
            result = ("object", module, name)
            _NAMED[id(value)] = (value, result)
            return result
    return None


_CUBEPY_NAMES: dict[int, tuple[str, ...]] = {}


def _cubepy_names() -> dict[int, tuple[str, ...]]:
    """The public names of the ``cubepy`` module, by the id of what they hold (made once)."""
    if not _CUBEPY_NAMES:
        cubepy = sys.modules["cubepy"]
        for name in dir(cubepy):
            if not name.startswith("_"):
                held = getattr(cubepy, name)
                _CUBEPY_NAMES[id(held)] = _CUBEPY_NAMES.get(id(held), ()) + (name,)
    return _CUBEPY_NAMES


def _trusted(module: str) -> bool:
    return module.partition(".")[0] in TRUSTED_MODULES


def current() -> Dependencies | None:
    """The recorder of the trace in progress, if any."""
    return _RECORDING.get()


@contextmanager
def recording(into: Dependencies):
    """Record the outside reads of every trace inside the block into ``into``."""
    token = _RECORDING.set(into)
    try:
        yield into
    finally:
        _RECORDING.reset(token)


__all__ = ["Dependencies", "current", "fingerprint", "recording", "resolve"]
