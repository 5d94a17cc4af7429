"""A Python function's source, parsed once, with positions mapped back to the user's file."""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from ..ir.nodes import SourceLoc


@dataclass
class FunctionSource:
    fn: Any
    tree: ast.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: list[str]
    digest: str

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


_cache: dict[Any, FunctionSource] = {}


def function_source(fn) -> FunctionSource:
    """Parse ``fn``'s source (cached per function object)."""
    cached = _cache.get(fn)
    if cached is not None:
        return cached
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise TypeError(f"cubepy needs the source of {getattr(fn, '__qualname__', fn)!r} to compile it "
                        f"(define it in a file, not in an interactive prompt without source): {e}") from None
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = ast.parse(dedented)
    tree = module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise TypeError(f"{fn!r} is not a plain function definition")
    filename = inspect.getsourcefile(fn) or "<unknown>"
    digest = hashlib.sha256(raw.encode()).hexdigest()
    result = FunctionSource(fn, tree, filename, first_line, indent, [ln.rstrip("\n") for ln in lines], digest)
    _cache[fn] = result
    return result
