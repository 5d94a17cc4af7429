"""Facts about opcodes, written once: what each opcode means, and what passes and backends ask
of it.

`OPCODES` gives each opcode's meaning: it is the contract every backend implements (the IR's
`cubepy.ir.nodes` re-exports these tables). The rest are facts the IR passes and the backends
read instead of keeping their own lists:

- `PURE`: ops whose result depends only on their operands (no memory, no unit position), which
  a backend may compute once for a cube when the operands are cube-uniform; `ELEMENTWISE` is
  those that act element by element on Lines, `LINE_OPS` those that build or take apart a Line.
- `SIDE_EFFECTS`: ops dead-code elimination keeps although nothing uses their result.
- `UNIT_BUILTINS`: the builtins that differ between the units of a cube; `CUBE_BUILTINS` the
  others (the same on every unit of a cube).
- Plane ops (docs/design.md, "Plane operations"): their classes (`PLANE_REDUCE`, `PLANE_VOTES`,
  `PLANE_SCANS`, `PLANE_SHUFFLES`), which give a plane-uniform result (`PLANE_UNIFORM_RESULTS`),
  the binary opcode that combines two lanes (`PLANE_COMBINE`), the identity a reduction starts
  from (`plane_identity`) and the lane each shuffle reads (`PLANE_SOURCE_LANE`).

    >>> from cubepy.ir.types import i32
    >>> PLANE_COMBINE["plane_max"], plane_identity("plane_max", i32)
    ('max', -2147483648)
"""

from __future__ import annotations

from .types import DType

# --- the opcode contract ------------------------------------------------------------------
#
# Arithmetic is elementwise on Lines; operands of binary ops have the same type (the frontend
# inserts casts and `broadcast`). Integer arithmetic wraps (two's complement). The choices are
# written once, with a scalar reference, in `semantics.py`.

UNARY = {
    "neg": "-a",
    "not": "logical not (bool)",
    "invert": "bitwise not (integers)",
    "abs": "|a|",
    "sqrt": "square root", "rsqrt": "1/sqrt(a)", "exp": "e**a", "log": "natural log",
    "sin": "sine", "cos": "cosine", "tanh": "hyperbolic tangent", "erf": "error function",
    "floor": "round down (floats)", "ceil": "round up (floats)",
}
BINARY = {
    "add": "a + b", "sub": "a - b", "mul": "a * b",   # attrs nowrap: shown never to overflow (ir/cube_checks.py)
    "div": "a / b (floats only; the frontend casts integers to a float type first)",
    "floordiv": "Python's a // b: rounds toward -inf; integer division by zero gives 0",
    "mod": "Python's a % b: the sign of b; integer modulo by zero gives 0",
    "pow": "a ** b; integers: exact and wrapped, a negative b gives the truncated 1 / a**-b",
    "min": "minimum; floats: NaN if either is NaN, -0.0 < +0.0 (IEEE 754-2019 minimum)", "max": "maximum (likewise)",
    "and": "bitwise/logical and", "or": "bitwise/logical or", "xor": "bitwise/logical xor",
    "shl": "a << b; a count b outside [0, bits) gives 0",
    "shr": "a >> b (arithmetic for signed); a count outside [0, bits) gives 0, or -1 for a negative a",
}
COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
ATOMIC_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas")
PLANE_REDUCE = ("plane_sum", "plane_prod", "plane_min", "plane_max")
PLANE_OPS = PLANE_REDUCE + (
    "plane_all", "plane_any", "plane_ballot", "plane_broadcast", "plane_shuffle",
    "plane_shuffle_xor", "plane_shuffle_up", "plane_shuffle_down", "plane_elect",
    "plane_inclusive_sum", "plane_exclusive_sum",
)
BUILTINS = (
    "unit_pos_x", "unit_pos_y", "unit_pos_z", "cube_pos_x", "cube_pos_y", "cube_pos_z",
    "cube_dim_x", "cube_dim_y", "cube_dim_z", "cube_count_x", "cube_count_y", "cube_count_z",
    "plane_dim", "unit_pos_plane",
)

OPCODES: dict[str, str] = {
    **{k: f"unary: {v}" for k, v in UNARY.items()},
    **{k: f"binary: {v}" for k, v in BINARY.items()},
    **{k: f"compare ({v}); result is bool of the operands' width" for k, v in COMPARE.items()},
    "fma": "a * b + c (fused where the target can)",
    "select": "args (cond, a, b): a where cond else b; cond is bool, scalar or of a's width",
    "cast": "convert to result.type: integers wrap, floats round to nearest, float->int truncates toward zero "
    "and saturates (NaN -> 0), anything->bool is != 0",
    "broadcast": "a scalar repeated into result.type's Line width",
    "extract": "attrs index: one element of a Line",
    "insert": "args (line, scalar), attrs index: a copy of the Line with one element replaced",
    "builtin": f"attrs name in {BUILTINS}, implicit (optional: a y/z cube position or count read for a linear "
               "position); an i32",
    "param": "attrs index, name: the launch value of a scalar parameter",
    "shape": "args (buffer,), attrs dim: the length of a global buffer along dim (i32)",
    "load": "args (buffer, *indices): one element; attrs checked (a checked index may be i64 or u64 until "
    "lower_bounds_checks narrows it inside its guard; backends see i32 indices)",
    "store": "args (buffer, *indices, value); attrs checked",
    "atomic": "args (buffer, *indices, value), attrs op in ATOMIC_OPS; returns the old value. "
    "For op 'cas' the args are (buffer, *indices, compare, value): store value if old == compare",
    "report_oob": "args (*indices, *extents), attrs array: record the first out-of-bounds access "
    "of the launch (the access itself is skipped); raised as OutOfBoundsError after the launch",
    "load_var": "args (var,)", "store_var": "args (var, value)",
    "sync_cube": "barrier: every unit of the cube arrives before any goes on; orders shared memory",
    **{k: "plane op: see docs/design.md, Plane operations" for k in PLANE_OPS},
    "if": "args (cond,), blocks (then, else). attrs cube_checks: the condition is the same for every "
    "unit of the cube and the sides are one body with and without some bounds checks (ir/cube_checks.py); "
    "run_checks: the sides are one run of code with and without the checks of that many loads (ir/run_checks.py)",
    "for": "args (start, stop, step), attrs var: Var(i32) holding the counter; blocks (body,). "
    "var = start; while (step > 0 ? var < stop : var > stop) { body; var += step }",
    "loop": "blocks (body,): repeat until `break`",
    "break": "leave the innermost for/loop", "continue": "next iteration of the innermost for/loop",
    "return": "this unit is done with the kernel",
    "launch_in_bounds": "a bool, the same for every unit: the host's answer to the kernel's launch test "
                        "(Kernel.launch_test, cubepy.ir.cube_checks)",
}


# --- facts read by passes and backends ------------------------------------------------------

ELEMENTWISE = frozenset(UNARY) | frozenset(BINARY) | frozenset(COMPARE) | {"fma", "select", "cast"}
LINE_OPS = frozenset({"broadcast", "extract", "insert"})
PURE = ELEMENTWISE | LINE_OPS
SIDE_EFFECTS = frozenset({"store", "atomic", "store_var", "sync_cube", "report_oob", "if", "for", "loop", "break",
                          "continue", "return"})

UNIT_BUILTINS = ("unit_pos_x", "unit_pos_y", "unit_pos_z", "unit_pos_plane")
CUBE_BUILTINS = tuple(b for b in BUILTINS if b not in UNIT_BUILTINS)

PLANE_VOTES = ("plane_all", "plane_any", "plane_ballot")
PLANE_SCANS = ("plane_inclusive_sum", "plane_exclusive_sum")
PLANE_SHUFFLES = ("plane_broadcast", "plane_shuffle", "plane_shuffle_xor", "plane_shuffle_up", "plane_shuffle_down")
# the same on every lane of the plane (the others, and plane_elect, differ per lane)
PLANE_UNIFORM_RESULTS = frozenset(PLANE_REDUCE + PLANE_VOTES + ("plane_broadcast",))
# the binary opcode that combines two lanes' values (plane_ballot ors in each lane's bit instead)
PLANE_COMBINE = {"plane_sum": "add", "plane_prod": "mul", "plane_min": "min", "plane_max": "max",
                 "plane_all": "and", "plane_any": "or", "plane_inclusive_sum": "add", "plane_exclusive_sum": "add"}
# the lane a shuffle reads, as (binary opcode, left, right) over the reading unit's ``lane``, the
# op's second operand ``a`` and the plane's ``last`` lane (PLANE_DIM - 1); a source outside the
# plane, or missing from a partial one, gives the reading lane its own value
PLANE_SOURCE_LANE = {"plane_broadcast": ("and", "a", "last"), "plane_shuffle": ("and", "a", "last"),
                     "plane_shuffle_xor": ("xor", "lane", "a"), "plane_shuffle_up": ("sub", "lane", "a"),
                     "plane_shuffle_down": ("add", "lane", "a")}


def plane_identity(code: str, dtype: DType):
    """The value a plane reduction or vote of ``dtype`` starts from (a Python number or bool): what
    a plane without lanes gives, and what an absent lane contributes."""
    if code in ("plane_sum", "plane_any", "plane_ballot"):
        return 0
    if code in ("plane_prod", "plane_all"):
        return 1
    high = code == "plane_min"
    if dtype.is_bool:
        return high
    if dtype.is_float:
        return float("inf") if high else float("-inf")
    if dtype.is_signed:
        return (1 << (dtype.bits - 1)) - 1 if high else -(1 << (dtype.bits - 1))
    return (1 << dtype.bits) - 1 if high else 0
