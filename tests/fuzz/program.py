"""A random kernel as a small tree of statements and expressions, rendered to Python source.

The tree is what the shrinker edits (drop a statement, inline a block, replace an expression by
a simpler one of the same type); the rendered source is what cubepy compiles. Every expression
knows its dtype, whether its value is IEEE-exact on every device (``exact``) and whether it is the
same on every unit of a cube (``uniform``), which is what the generator needs to keep a kernel
valid: plane ops and barriers only under cube-uniform control, approximate values (transcendental
functions) never deciding a branch, an index or an integer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class E:
    """An expression: ``fmt`` with ``{0}``, ``{1}``... for the rendered ``args``."""

    fmt: str
    dtype: str
    args: tuple = ()
    exact: bool = True
    uniform: bool = False
    width: int = 1                     # a Line of this many elements (1: a scalar)
    op: str = ""                       # what it computes, for the NumPy model ("" : not modelled)
    value: object = None               # a literal's value, a variable's or parameter's name

    def __post_init__(self):
        if self.exact and not all(a.exact for a in self.args):   # an approximate operand taints
            object.__setattr__(self, "exact", False)

    def render(self) -> str:
        return self.fmt.format(*(a.render() for a in self.args)) if self.args else self.fmt

    def size(self) -> int:
        return 1 + sum(a.size() for a in self.args)


@dataclass
class S:
    """A statement. ``kind`` decides which fields mean something:

    assign (target, value, decl: 'name: dtype =' form), store (target = array[index], value),
    if (cond, body, orelse), for (target, bound, body, unroll), while (target counter, bound, body),
    break, continue, return (cond), sync, atomic (target array, index, value, op), expr (value)."""

    kind: str
    target: str = ""
    value: E | None = None
    index: E | None = None
    cond: E | None = None
    bound: E | None = None
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)
    op: str = ""
    decl: str = ""

    def copy(self) -> S:
        return replace(self, body=[s.copy() for s in self.body], orelse=[s.copy() for s in self.orelse])


@dataclass
class Func:
    """A @cb.func helper: ``params`` (name, dtype), ``body`` statements, returns ``result``."""

    name: str
    params: list
    body: list
    result: E
    result_dtype: str = ""

    def copy(self) -> Func:
        return replace(self, body=[s.copy() for s in self.body])


@dataclass
class Param:
    name: str
    kind: str                 # "array" | "out" | "lines" | "outlines" | "scalar" | "comptime" | "acc"
    dtype: str
    length: int = 0           # arrays: elements (Lines: lines)
    width: int = 1


@dataclass
class Program:
    """A whole kernel and its launch: parameters, helpers, body, topology, and which output
    slots hold approximate values (compared with a tolerance)."""

    seed: int
    params: list
    funcs: list
    prologue: list            # shared/local array declarations, run first
    body: list
    cube_dim: tuple
    cube_count: tuple
    active: int               # units that store (the rest only take part in plane ops and barriers)
    slots: int                # output elements per unit in each output array
    approx: set = field(default_factory=set)     # (output name, slot)
    comptime: int = 0
    straight: bool = False    # no control flow, plane ops or barriers: the NumPy model applies

    def copy(self) -> Program:
        return replace(self, params=list(self.params), funcs=[f.copy() for f in self.funcs],
                       prologue=[s.copy() for s in self.prologue], body=[s.copy() for s in self.body],
                       approx=set(self.approx))

    def source(self, name: str = "kern") -> str:
        out = ["import cubepy as cb", "from cubepy import Array, Comptime, Mut, bool_, f16, f32, f64, "
               "i8, i16, i32, i64, u8, u16, u32, u64", ""]
        for f in self.funcs:
            out.append("@cb.func")
            out.append(f"def {f.name}({', '.join(n for n, _ in f.params)}):")
            _render_block(f.body, 1, out)
            out.append(f"    return {f.result.render()}")
            out.append("")
        sig = []
        for p in self.params:
            if p.kind in ("array", "lines"):
                sig.append(f"{p.name}: Array[{p.dtype}]")
            elif p.kind in ("out", "outlines", "acc"):
                sig.append(f"{p.name}: Mut[Array[{p.dtype}]]")
            elif p.kind == "scalar":
                sig.append(f"{p.name}: {p.dtype}")
            else:
                sig.append(f"{p.name}: Comptime[int]")
        out.append("@cb.kernel")
        out.append(f"def {name}({', '.join(sig)}):")
        out.append("    g = cb.ABSOLUTE_POS")
        out.append("    t = cb.UNIT_POS")
        _render_block(self.prologue, 1, out)
        _render_block(self.body, 1, out)
        if not self.body and not self.prologue:
            out.append("    pass")
        return "\n".join(out) + "\n"

    def size(self) -> int:
        return _count(self.prologue) + _count(self.body) + sum(_count(f.body) + 1 for f in self.funcs)


def _count(block) -> int:
    return sum(1 + _count(s.body) + _count(s.orelse) for s in block)


def _render_block(block: list, depth: int, out: list) -> None:
    pad = "    " * depth
    if not block:
        out.append(f"{pad}pass")
        return
    for s in block:
        k = s.kind
        if k == "assign":
            head = f"{s.target}: {s.decl}" if s.decl else s.target
            out.append(f"{pad}{head} = {s.value.render()}")
        elif k == "store":
            out.append(f"{pad}{s.target}[{s.index.render()}] = {s.value.render()}")
        elif k == "if":
            out.append(f"{pad}if {s.cond.render()}:")
            _render_block(s.body, depth + 1, out)
            if s.orelse:
                if len(s.orelse) == 1 and s.orelse[0].kind == "if" and s.op == "elif":
                    sub: list = []
                    _render_block(s.orelse, depth, sub)
                    out.append(f"{pad}el{sub[0].lstrip()}")
                    out.extend(sub[1:])
                else:
                    out.append(f"{pad}else:")
                    _render_block(s.orelse, depth + 1, out)
        elif k == "for":
            rng = f"cb.unroll(range({s.bound.render()}))" if s.op == "unroll" else f"range({s.bound.render()})"
            out.append(f"{pad}for {s.target} in {rng}:")
            _render_block(s.body, depth + 1, out)
        elif k == "while":
            out.append(f"{pad}{s.target} = {'i32(0)' if s.op == 'runtime' else '0'}")
            out.append(f"{pad}while {s.target} < {s.bound.render()}:")
            out.append(f"{pad}    {s.target} += 1")
            _render_block(s.body, depth + 1, out)
        elif k in ("break", "continue"):
            out.append(f"{pad}{k}")
        elif k == "return":
            out.append(f"{pad}if {s.cond.render()}:")
            out.append(f"{pad}    return")
        elif k == "sync":
            out.append(f"{pad}cb.sync_cube()")
        elif k == "atomic":
            out.append(f"{pad}cb.atomic_{s.op}({s.target}, {s.index.render()}, {s.value.render()})")
        elif k == "expr":
            out.append(f"{pad}{s.value.render()}")
        elif k == "raw":
            out.append(f"{pad}{s.target}")
        else:  # pragma: no cover
            raise AssertionError(k)
