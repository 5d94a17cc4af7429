"""Python AST -> IR: the statement and expression visitor.

The function's AST is walked once per specialization. Python values (numbers, Comptime
parameters, CubeDim, PlaneDim) are evaluated on the spot, so ``if``/``for``/``while`` on them
fold away; traced values build IR. A name assigned at the top level of the kernel is bound to
its SSA value; a name assigned under traced control flow becomes a mutable local (`Var`).
"""

from __future__ import annotations

from .expressions import Expressions
from .scope import Frame, FuncReturn, KernelReturn, Retrace
from .statements import Statements

__all__ = ["CodeGen", "Frame", "Retrace", "FuncReturn", "KernelReturn"]


class CodeGen(Statements, Expressions):
    """The visitors; the tracer (`trace.Tracer`) adds the state they work on: builder, ops,
    spec, kernel, widen, frames, traced_depth, error(), set_loc(), entry_builtin(),
    entry_cached(), require_mutable(), index_values(), region_access(), inline()."""
