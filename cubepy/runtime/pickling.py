"""Kernels and ``@cb.func`` helpers that pickle: for Dask, Ray, multiprocessing and the like.

A kernel defined at module level (of a module other than ``__main__``) pickles by reference:
``(module, qualified name)``, looked up again on the other side. Any other kernel (in a script's
``__main__``, in a notebook, inside a function) pickles by value: the source text captured when
it was decorated, its file and first line (so errors still point at the user's line), its
options, and the values of the global and closure names its source uses (modules by name, other
kernels and helpers by their own recipe). Compiled state, device handles and caches never travel:
the other process traces and compiles again (or finds the compiled code in its disk cache).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import pickle
import sys
import textwrap
import types
from dataclasses import dataclass
from typing import Any

from ..errors import CubeError
from ..frontend.source import SourceText, register_source


@dataclass(frozen=True)
class ModuleRef:
    """A module a kernel's source names, pickled by its name and imported again."""

    name: str


@dataclass(frozen=True)
class Recipe:
    """What rebuilds a kernel or helper in another process."""

    kind: str                      # "kernel" or "func"
    name: str
    qualname: str
    module: str
    source: SourceText
    names: dict                    # global and closure names of the source -> values
    options: dict


def reduce(obj: Any, kind: str, fn: Any, source: SourceText | None, options: dict):
    """``__reduce__`` of a kernel (``kind`` "kernel") or helper ("func") around function ``fn``."""
    module, qualname = getattr(fn, "__module__", None), fn.__qualname__
    if module not in (None, "__main__") and "<locals>" not in qualname:
        found = sys.modules.get(module)
        if found is not None and _lookup(found, qualname) is obj:
            return (by_reference, (module, qualname, kind))
    if source is None:
        raise pickle.PicklingError(f"cubepy {kind} '{fn.__name__}' has no source text to pickle: it was defined "
                                   "where Python keeps none (an interactive prompt); define it in a file")
    return (by_value, (Recipe(kind, fn.__name__, qualname, module or "__main__", source, _names(fn, obj), options),))


def by_reference(module: str, qualname: str, kind: str) -> Any:
    """The kernel or helper ``module.qualname``, imported here."""
    try:
        found = _lookup(importlib.import_module(module), qualname)
    except (ImportError, AttributeError) as e:
        raise CubeError(f"cannot unpickle cubepy {kind} '{qualname}': {module}.{qualname} is not importable here "
                        f"({type(e).__name__}: {e}); install the module on this machine, or define the {kind} in "
                        "__main__ so that it pickles with its source") from None
    return found


_rebuilt: dict[tuple, Any] = {}      # recipe fingerprint -> the object rebuilt from it in this process


def by_value(recipe: Recipe) -> Any:
    """Rebuild a kernel or helper from its recipe: the source compiled again, with its names.
    The same recipe unpickled again (the next task of a worker) gives the same object, so its
    compiled specializations are reused, not traced again."""
    key = _fingerprint(recipe)
    found = _rebuilt.get(key) if key is not None else None
    if found is None:
        found = _rebuild(recipe)
        if key is not None:
            _rebuilt[key] = found
    return found


def _rebuild(recipe: Recipe) -> Any:
    from .kernel import CubeFunction, KernelFunction

    namespace = {"__builtins__": builtins, "__name__": recipe.module}
    for name, value in recipe.names.items():
        namespace[name] = importlib.import_module(value.name) if isinstance(value, ModuleRef) else value
    fn = _compile(recipe, namespace)
    register_source(fn, recipe.source)
    rebuilt = (KernelFunction(fn, **recipe.options) if recipe.kind == "kernel" else CubeFunction(fn))
    namespace.setdefault(recipe.name, rebuilt)         # a helper may name itself
    return rebuilt


_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def _fingerprint(recipe: Recipe) -> tuple | None:
    """A key equal for recipes that rebuild the same object; None when a name's value cannot be
    compared safely (then every unpickling rebuilds)."""
    from ..ir.types import DType
    from .kernel import CubeFunction, KernelFunction

    names: list[tuple] = []
    for name, value in sorted(recipe.names.items()):
        if isinstance(value, ModuleRef):
            names.append((name, "module", value.name))
        elif isinstance(value, (KernelFunction, CubeFunction)):
            names.append((name, "cubepy", id(value)))          # rebuilt objects are themselves unique
        elif isinstance(value, (type, types.FunctionType)) and value.__module__.startswith("cubepy."):
            names.append((name, "definition", f"{value.__module__}.{value.__qualname__}"))
        elif isinstance(value, _PLAIN) or isinstance(value, DType) or _is_language_value(value):
            names.append((name, type(value).__qualname__, repr(value)))
        elif isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value):
            names.append((name, "tuple", repr(value)))
        else:
            return None
    return (recipe.kind, recipe.module, recipe.qualname, recipe.source.text, recipe.source.filename,
            recipe.source.first_line, tuple(sorted(recipe.options.items())), tuple(names))


def _is_language_value(value: Any) -> bool:
    """cubepy's own small values (``Array``, ``Mut``, ``Comptime``, strategies, builtins): equal
    when their reprs are."""
    return type(value).__module__.startswith(("cubepy.lang", "cubepy.ir.types"))


def _compile(recipe: Recipe, namespace: dict) -> types.FunctionType:
    text = recipe.source
    try:
        tree = ast.parse(textwrap.dedent(text.text))
        definition = tree.body[0]
        definition.decorator_list = []        # the options travel in the recipe
        ast.increment_lineno(tree, text.first_line - 1)
        exec(compile(tree, text.filename, "exec"), namespace)
    except Exception as e:
        raise CubeError(f"cannot unpickle cubepy {recipe.kind} '{recipe.name}': its source does not compile here "
                        f"({type(e).__name__}: {e})") from None
    return namespace[recipe.name]


def _names(fn: Any, obj: Any) -> dict:
    """The values of the names the function's source uses that are not its own locals:
    globals (builtins excluded) and closure cells. Modules become `ModuleRef`s."""
    used: set[str] = set()
    for node in ast.walk(ast.parse(textwrap.dedent(_source_of(obj)))):
        if isinstance(node, ast.Name):
            used.add(node.id)
    used -= set(fn.__code__.co_varnames)           # its parameters and locals
    values = {}
    closure = {name: cell.cell_contents for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())
               if _filled(cell)}
    for name in sorted(used):
        if name in closure:
            value = closure[name]
        elif name in fn.__globals__:
            value = fn.__globals__[name]
        else:
            continue
        if value is obj:
            continue                   # itself: set again when rebuilt
        values[name] = ModuleRef(value.__name__) if isinstance(value, types.ModuleType) else value
    return values


def _source_of(obj: Any) -> str:
    return obj.source_text.text


def _filled(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def _lookup(module: Any, qualname: str) -> Any:
    found = module
    for part in qualname.split("."):
        found = getattr(found, part)
    return found
