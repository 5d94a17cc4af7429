"""Names kernel code uses: topology builtins, memory, sync, atomics, plane ops and math.

Outside a kernel these objects do nothing useful; the frontend recognises them while tracing
and turns each into IR. `Intrinsic.name` is the key of its handler in
`cubepy.frontend.intrinsics`.
"""

from __future__ import annotations


class Builtin:
    """A topology value (``ABSOLUTE_POS``, ``PLANE_DIM``, ...): an i32 inside kernels."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"cb.{self.name.upper()}"


class Intrinsic:
    """A function that only has meaning inside a kernel."""

    def __init__(self, name: str, doc: str = ""):
        self.name = name
        self.__doc__ = doc
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"cb.{self.name}() can only be called inside a @cb.kernel or @cb.func")

    def __repr__(self) -> str:
        return f"cb.{self.name}"


_POSITIONS = ["absolute_pos", "unit_pos", "cube_pos", "cube_dim", "cube_count"]
BUILTIN_NAMES = [f"{p}{s}" for p in _POSITIONS for s in ("", "_x", "_y", "_z")] + ["plane_dim", "unit_pos_plane"]
BUILTINS = {name.upper(): Builtin(name) for name in BUILTIN_NAMES}

_INTRINSIC_DOCS = {
    "SharedMemory": "SharedMemory(dtype, size): an array shared by the units of a cube",
    "LocalArray": "LocalArray(dtype, size): a small array private to each unit",
    "sync_cube": "sync_cube(): every unit of the cube waits here; orders shared memory",
    "unroll": "unroll(range(k)): unroll a loop with compile-time bounds",
    "select": "select(cond, a, b): a where cond else b, without branching",
    "clamp": "clamp(x, lo, hi)",
    "fma": "fma(a, b, c): a * b + c",
    "cast": "cast(value, dtype)",
}
_MATH = ["sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "erf", "abs", "floor", "ceil", "min", "max", "pow"]
_ATOMICS = [f"atomic_{op}" for op in ("add", "sub", "min", "max", "and", "or", "xor", "exchange", "cas")]
_PLANE = ["plane_sum", "plane_prod", "plane_min", "plane_max", "plane_all", "plane_any", "plane_ballot",
          "plane_broadcast", "plane_shuffle", "plane_shuffle_xor", "plane_shuffle_up", "plane_shuffle_down",
          "plane_elect", "plane_inclusive_sum", "plane_exclusive_sum"]

INTRINSICS: dict[str, Intrinsic] = {}
for _name in list(_INTRINSIC_DOCS) + _MATH + _ATOMICS + _PLANE:
    INTRINSICS[_name] = Intrinsic(_name, _INTRINSIC_DOCS.get(_name, ""))
