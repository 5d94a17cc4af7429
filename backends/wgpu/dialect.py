"""WGSL as data: type names, storage types, built-in positions, statements, math functions and
reserved words.

The renderer (`wgsl.py`) is the C-style renderer (`cstyle`) with WGSL's mixins, so WGSL is also
described by a `cstyle.Dialect`: its statement templates (``let``/``var``, ``loop``, ``select()``)
are what the shared walk writes; the fields that only C has are left empty.
"""

from __future__ import annotations

from ..cstyle.dialect import Dialect

# WGSL has no 8- or 16-bit integers: their values live in i32/u32 (wrapped after each operation,
# `wgsl.WgslArithmetic._fix`) and their arrays in 32-bit words (the host widens and narrows).
TYPES = {
    "bool_": "bool", "i8": "i32", "i16": "i32", "i32": "i32", "i64": "i64",
    "u8": "u32", "u16": "u32", "u32": "u32", "u64": "u64",
    "f16": "f16", "f32": "f32", "f64": "f64",
}
# dtype -> the NumPy dtype of one element in a storage buffer (bool is not host-shareable in WGSL)
STORAGE_NUMPY = {"bool_": "uint32", "i8": "int32", "i16": "int32", "u8": "uint32", "u16": "uint32"}
NARROW = ("i8", "i16", "u8", "u16")

INT_SUFFIX = {"i32": "i", "u32": "u", "i64": "li", "u64": "lu"}
FLOAT_SUFFIX = {"f16": "h", "f32": "f", "f64": "lf"}
# infinity and NaN have no literal in WGSL: their bits
FLOAT_BITS = {"f32": ("u32", 0x7F800000, 0x7FC00000), "f64": ("u64", 0x7FF0000000000000, 0x7FF8000000000000)}

MATH = {"sqrt": "sqrt", "rsqrt": "inverseSqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos",
        "tanh": "tanh", "floor": "floor", "ceil": "ceil", "abs": "abs", "pow": "pow", "fma": "fma"}
# GLSL.std.450, which naga's SPIR-V uses, has these only for 16- and 32-bit floats (f64: `f64math`)
F32_ONLY = frozenset({"exp", "log", "sin", "cos", "tanh", "pow", "erf"})

ATOMIC_FUNCTIONS = {"add": "atomicAdd", "sub": "atomicSub", "min": "atomicMin", "max": "atomicMax",
                    "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor", "exchange": "atomicExchange"}

# keywords, reserved words and the built-in functions the generated code calls (a kernel's name
# must not shadow them)
RESERVED = set("""alias break case const const_assert continue continuing default diagnostic discard else enable
false fn for if let loop override requires return struct switch true var while array atomic bool f16 f32 f64 i32
i64 u32 u64 mat2x2 mat3x3 mat4x4 ptr sampler vec2 vec3 vec4 NULL Self abstract active alignas alignof as asm
asm_fragment async attribute auto await become binding_array cast catch class co_await co_return co_yield coherent
column_major common compile compile_fragment concept const_cast consteval constexpr constinit crate debugger
decltype delete demote demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough
filter final finally friend from fxgroup get goto groupshared highp impl implements import inline instanceof
interface layout lowp macro macro_rules match mediump meta mod module move mut mutable namespace new nil noexcept
noinline nointerpolation non_coherent noncoherent noperspective null nullptr of operator package packoffset
partition pass patch pixelfragment precise precision premerge priv protected pub public readonly ref regardless
register reinterpret_cast require resource restrict self set shared sizeof smooth snorm static static_assert
static_cast std subroutine super target template this thread_local throw trait try type typedef typeid typename
typeof union unless unorm unsafe unsized use using varying virtual volatile wgsl where with writeonly yield
select min max abs sqrt inverseSqrt exp log sin cos tanh floor ceil fma pow bitcast trunc clamp sign round
atomicLoad atomicStore atomicAdd atomicSub atomicMin atomicMax atomicAnd atomicOr atomicXor atomicExchange
atomicCompareExchangeWeak workgroupBarrier storageBarrier subgroupShuffle subgroupBallot arrayLength
main""".split())

WGSL = Dialect(
    name="wgsl", preamble="", kernel_prefix="", device_fn="fn", global_q="", shared_q="var<workgroup> ",
    local_q="", restrict="",
    builtins={
        **{f"unit_pos_{a}": f"i32(cb_unit.{a})" for a in "xyz"},
        **{f"cube_pos_{a}": f"i32(cb_cube.{a})" for a in "xyz"},
        **{f"cube_count_{a}": f"i32(cb_count.{a})" for a in "xyz"},
    },
    # storageBarrier orders the global memory units of a cube share, as sync_cube does on the C backends
    barrier="storageBarrier(); workgroupBarrier();",
    types=TYPES, vector_types={}, vector_elems=(), struct_decl="", int_suffix=INT_SUFFIX, float_suffix={},
    math=MATH, inf="", nan="", atomics={}, cas={}, bitcast="bitcast<{to}>({x})",
    plane_mode="shuffle", local_plane_args="cb_lin",     # the scratch is a module-scope variable
    # bool is not host-shareable: arrays hold it as u32 words, and so does the argument struct (with f16 as f32)
    storage={"bool_": "u32"}, param_storage={"bool_": "u32", "f16": "f32"},
    let="let {name}: {type} = {value};", var="var {name}: {type};", forever="loop {",
    # parenthesized: in `select(a > b, a < b, ...)` WGSL reads `b, a < b` as a template list
    step_test="select(({var} > {stop}), ({var} < {stop}), ({step} > 0i))", select="select({b}, {a}, {cond})",
)

# plane ops through workgroup memory, where the adapter's subgroups are not planes (`subgroups.py`)
WGSL_EMULATED = WGSL.with_(plane_mode="local")

__all__ = ["ATOMIC_FUNCTIONS", "F32_ONLY", "FLOAT_BITS", "FLOAT_SUFFIX", "INT_SUFFIX", "MATH", "NARROW",
           "RESERVED", "STORAGE_NUMPY", "TYPES", "WGSL", "WGSL_EMULATED"]
