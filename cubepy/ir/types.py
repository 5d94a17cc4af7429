"""Element types, value types and the promotion rules of the kernel language.

The IR knows nothing of NumPy beyond the name of the matching NumPy dtype, so that every
backend (and the interpreter) agrees on one table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """A scalar element type: ``kind`` is ``'b'`` (bool), ``'i'``, ``'u'`` or ``'f'``."""

    name: str
    kind: str
    bits: int
    numpy_name: str

    def __hash__(self) -> int:       # names are unique
        return hash(self.name)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind in "if"

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    def __repr__(self) -> str:
        return self.name

    def __call__(self, value):  # a cast; inside kernels the frontend intercepts this call
        import numpy as np

        return np.dtype(self.numpy_name).type(value)


bool_ = DType("bool_", "b", 8, "bool")
i8 = DType("i8", "i", 8, "int8")
i16 = DType("i16", "i", 16, "int16")
i32 = DType("i32", "i", 32, "int32")
i64 = DType("i64", "i", 64, "int64")
u8 = DType("u8", "u", 8, "uint8")
u16 = DType("u16", "u", 16, "uint16")
u32 = DType("u32", "u", 32, "uint32")
u64 = DType("u64", "u", 64, "uint64")
f16 = DType("f16", "f", 16, "float16")
bf16 = DType("bf16", "f", 16, "bfloat16")
f32 = DType("f32", "f", 32, "float32")
f64 = DType("f64", "f", 64, "float64")

ALL_DTYPES: tuple[DType, ...] = (bool_, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64)
DTYPES_BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY_NAME: dict[str, DType] = {d.numpy_name: d for d in ALL_DTYPES}

# The type of positions, lengths and loop counters (CubeCL uses u32; a signed type keeps
# `i - 1` meaning what a Python programmer expects). Launch refuses arrays too long for it.
INDEX = i32
INDEX_MAX = 2**31 - 1
# The most elements an array holds: a little below INDEX_MAX, so that a loop counter stepping by
# up to MAX_PROVEN_STEP (a cube's units) towards an array's extent never wraps i32, which the
# bounds proofs of `cubepy.ir.bounds` rely on.
MAX_PROVEN_STEP = 1024
# The most units per cube a shape-generic kernel (``cube_dim`` None, read at run time) is compiled
# for: its analyses bound every cube extent by it, and the runtime launches it with no larger cube.
RUNTIME_CUBE_UNITS = 1024
ARRAY_MAX = INDEX_MAX - MAX_PROVEN_STEP + 1


def wide_index_dtype(dtype: DType) -> DType:
    """The type a checked access compares an index of ``dtype`` in: i32 for types that fit in it,
    i64 for u32 and i64, u64 for u64; never a narrowing, so the check sees the true value."""
    if dtype.bits < 32 or dtype == i32:
        return i32
    return u64 if dtype == u64 else i64


_BY_NUMPY_DTYPE: dict = {}


def dtype_from_numpy(np_dtype) -> DType | None:
    """The cubepy dtype for a NumPy dtype (or anything ``np.dtype`` accepts), or None."""
    cached = _BY_NUMPY_DTYPE.get(np_dtype)
    if cached is not None:
        return cached
    import numpy as np

    try:
        name = np.dtype(np_dtype).name
    except TypeError:
        name = str(np_dtype)
    found = _BY_NUMPY_NAME.get(name)
    if found is not None:
        try:
            _BY_NUMPY_DTYPE[np_dtype] = found
        except TypeError:  # unhashable spellings are simply not cached
            pass
    return found


@dataclass(frozen=True)
class Type:
    """The type of an IR value: an element type and a Line width (1 for a scalar)."""

    dtype: DType
    width: int = 1

    @property
    def is_line(self) -> bool:
        return self.width > 1

    def with_dtype(self, dtype: DType) -> Type:
        return Type(dtype, self.width)

    def __hash__(self) -> int:       # dtype names are unique: cheaper than hashing every field
        return hash((self.dtype.name, self.width))

    def __repr__(self) -> str:
        return self.dtype.name if self.width == 1 else f"line<{self.dtype.name}x{self.width}>"


class PromotionError(TypeError):
    """Two element types that have no implicit common type."""


def _int_of(bits: int, signed: bool) -> DType:
    return {(8, True): i8, (16, True): i16, (32, True): i32, (64, True): i64,
            (8, False): u8, (16, False): u16, (32, False): u32, (64, False): u64}[(bits, signed)]


def promote(a: DType, b: DType) -> DType:
    """The common type of two typed operands (see docs/design.md, "Promotion").

    bool < integers < floats. Same kind: the wider. Signed with unsigned: the signed type if it
    is wider, else the signed type of twice the width (``u64`` with a signed type has none and is
    an error asking for a cast). Any float wins over any integer. ``f16`` with ``bf16`` is ``f32``.
    """
    if a == b:
        return a
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            if {a, b} == {f16, bf16}:
                return f32
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    if unsigned.bits >= 64:
        raise PromotionError(f"no implicit common type for {a} and {b}; cast one of them explicitly")
    return _int_of(unsigned.bits * 2, True)


def default_literal_dtype(value) -> DType:
    """The type a Python literal takes when nothing typed is beside it."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return i32 if -(2**31) <= value < 2**31 else i64
    if isinstance(value, float):
        return f32
    raise TypeError(f"{type(value).__name__} is not a numeric literal")
