"""A Python function's source, parsed once, with positions mapped back to the user's file."""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
import weakref
from dataclasses import dataclass
from typing import Any

from ..ir.nodes import SourceLoc


@dataclass
class FunctionSource:
    fn_ref: weakref.ref      # the function, weakly: a source kept for it must not keep it alive
    tree: ast.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: list[str]
    digest: str

    @property
    def fn(self) -> Any:
        return self.fn_ref()

    def loc(self, node: ast.AST) -> SourceLoc:
        found = self.__dict__.get("locs", {}).get(id(node))
        if found is not None and found[0] is node:
            return found[1]
        loc = self._loc(node)
        self.__dict__.setdefault("locs", {})[id(node)] = (node, loc)
        return loc

    def _loc(self, node: ast.AST) -> SourceLoc:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.indent
        end_line = getattr(node, "end_lineno", line)
        end_col = getattr(node, "end_col_offset", None)
        end_col = end_col + self.indent if end_col is not None and end_line == line else None
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceLoc(self.filename, line + self.first_line - 1, col, end_col, text.rstrip("\n"))


@dataclass(frozen=True)
class SourceText:
    """A function's source as written: its lines, file and first line (captured when a kernel or
    helper is decorated, so later changes of the file, or a copy of the function without a
    file, as on a cluster's workers, do not matter)."""

    lines: tuple[str, ...]
    filename: str
    first_line: int

    @property
    def text(self) -> str:
        return "".join(self.lines)


# by function, weakly: a kernel made in a loop or a factory (or by the fuzzer) is freed with its
# function, and its source with it
_cache: weakref.WeakKeyDictionary[Any, FunctionSource] = weakref.WeakKeyDictionary()
_texts: weakref.WeakKeyDictionary[Any, SourceText] = weakref.WeakKeyDictionary()


def capture_source(fn) -> SourceText | None:
    """``fn``'s source text, or None where Python keeps none (an interactive prompt without a
    source cache). Registered for `function_source`."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    found = SourceText(tuple(lines), inspect.getsourcefile(fn) or "<unknown>", first_line)
    _texts[fn] = found
    return found


def register_source(fn, text: SourceText) -> None:
    """Make ``text`` the source `function_source` parses for ``fn`` (a function rebuilt from it)."""
    _texts[fn] = text
    _cache.pop(fn, None)


def function_source(fn) -> FunctionSource:
    """Parse ``fn``'s source (cached per function object): the text captured or registered for
    it, else what ``inspect`` finds now."""
    cached = _cache.get(fn)
    if cached is not None:
        return cached
    text = _texts.get(fn) or capture_source(fn)
    if text is None:
        raise TypeError(f"cubepy needs the source of {getattr(fn, '__qualname__', fn)!r} to compile it, and Python "
                        "kept none (an interactive prompt without a source cache); define it in a file, a notebook "
                        "cell, or exec() code registered in linecache")
    lines, first_line = list(text.lines), text.first_line
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = ast.parse(dedented)
    tree = module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise TypeError(f"{fn!r} is not a plain function definition")
    digest = hashlib.sha256(raw.encode()).hexdigest()
    result = FunctionSource(weakref.ref(fn), tree, text.filename, first_line, indent,
                            [ln.rstrip("\n") for ln in lines], digest)
    _cache[fn] = result
    return result
