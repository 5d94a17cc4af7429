"""Dialects of C that GPU kernels are written in: CUDA C++, HIP C++ and OpenCL C.

A `Dialect` is data only: spellings of qualifiers, builtins, types, statements, barriers, atomics
and plane (warp/wavefront/sub-group) primitives. The renderer (`renderer.py`) never asks which
dialect it is rendering; everything that differs between targets is an attribute here. The WGSL
renderer (`backends/wgpu`) renders through the same walk with a `Dialect` of its own, overriding
the renderer's methods only where WGSL differs by more than a spelling.
"""

from __future__ import annotations

from cubepy.record import Record

from .flags import CUDA_FP_FLAGS, HIP_FP_FLAGS, OPENCL_FP_FLAGS

# --- shared tables ------------------------------------------------------------------------

_XYZW = (".x", ".y", ".z", ".w")
_CUDA_TYPES = {
    "bool_": "bool", "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
    "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
    "f16": "__half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double",
}
# CUDA's own vector types (CUDA 13 deprecates the 32-byte ones such as double4: those become structs).
_CUDA_VECTORS = {
    ("i8", 2): "char2", ("i8", 4): "char4", ("u8", 2): "uchar2", ("u8", 4): "uchar4",
    ("i16", 2): "short2", ("i16", 4): "short4", ("u16", 2): "ushort2", ("u16", 4): "ushort4",
    ("i32", 2): "int2", ("i32", 4): "int4", ("u32", 2): "uint2", ("u32", 4): "uint4",
    ("f32", 2): "float2", ("f32", 4): "float4", ("i64", 2): "longlong2", ("u64", 2): "ulonglong2",
    ("f64", 2): "double2",
}
_CUDA_CAS = {32: "atomicCAS((unsigned int*)({p}), {cmp}, {v})",
             64: "atomicCAS((unsigned long long*)({p}), {cmp}, {v})"}


def _cuda_atomics(min_max_i64: bool) -> dict[tuple[str, str], str]:
    """Atomic read-modify-writes CUDA (and HIP) have as functions; the rest become CAS loops."""
    t: dict[tuple[str, str], str] = {}
    ull = "(long long){fn}((unsigned long long*)({{p}}), (unsigned long long)({{v}}))"
    for op, fn in (("add", "atomicAdd"), ("min", "atomicMin"), ("max", "atomicMax"), ("and", "atomicAnd"),
                   ("or", "atomicOr"), ("xor", "atomicXor"), ("exchange", "atomicExch")):
        for d in ("i32", "u32", "u64"):
            t[(op, d)] = f"{fn}({{p}}, {{v}})"
        if op in ("add", "and", "or", "xor", "exchange"):
            t[(op, "i64")] = ull.format(fn=fn)
        elif min_max_i64:
            t[(op, "i64")] = f"{fn}({{p}}, {{v}})"
    t[("add", "f32")] = "atomicAdd({p}, {v})"
    t[("add", "f64")] = "atomicAdd({p}, {v})"
    t[("exchange", "f32")] = "atomicExch({p}, {v})"
    for d in ("i32", "u32"):
        t[("sub", d)] = "atomicSub({p}, {v})"
    for d in ("i32", "u32", "u64"):
        t[("cas", d)] = "atomicCAS({p}, {cmp}, {v})"
    t[("cas", "i64")] = ("(long long)atomicCAS((unsigned long long*)({p}), (unsigned long long)({cmp}), "
                         "(unsigned long long)({v}))")
    return t


_CUDA_MATH = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tanh": "tanh",
    "erf": "erf", "floor": "floor", "ceil": "ceil", "abs": "fabs", "min": "fmin", "max": "fmax", "pow": "pow",
    "fma": "fma", "fmod": "fmod", "copysign": "copysign",
}

_CUDA_PREAMBLE = """\
#define CB_DEVICE static __device__ __forceinline__
template <typename To, typename From> CB_DEVICE To cb_bitcast(From x) {
  union { From f; To t; } u; u.f = x; return u.t;
}
"""

_HIP_PREAMBLE = """\
#include <hip/hip_runtime.h>
#define CB_DEVICE static __device__ __forceinline__
template <typename To, typename From> CB_DEVICE To cb_bitcast(From x) {
  union { From f; To t; } u; u.f = x; return u.t;
}
"""

_OPENCL_PREAMBLE = """\
#define CB_DEVICE static inline
"""


class Dialect(Record):
    """Everything the renderer needs to know about one C dialect."""

    name: str
    preamble: str
    kernel_prefix: str                     # before the kernel's name; {shape}: shape_hint, filled in
    device_fn: str                         # qualifier of helper functions
    global_q: str                          # address space of global pointers ("" or "__global ")
    shared_q: str                          # declaration of shared (cube) memory
    local_q: str                           # address space of a pointer to shared memory in helpers
    restrict: str                          # the restrict spelling on kernel pointer arguments
    builtins: dict[str, str]               # unit_pos_x, cube_pos_x, cube_count_x, ... -> an int expression
    barrier: str                           # sync_cube
    types: dict[str, str]                  # dtype name -> C scalar type
    vector_types: dict[tuple[str, int], str]
    vector_elems: tuple[str, ...]          # element access of native vector types
    struct_decl: str                       # a Line type with no native vector type: {name} {ctype} {width} {align}
    int_suffix: dict[str, str]             # literal suffixes for i64/u32/u64
    float_suffix: dict[str, str]           # math function suffix per float type (CUDA's sqrtf)
    math: dict[str, str]                   # function names before the suffix
    inf: str                               # +infinity of f32 (the renderer casts it to f64 where needed)
    nan: str
    atomics: dict[tuple[str, str], str]    # (op, dtype) -> native call with {p} {v} {cmp}
    cas: dict[int, str]                    # word bits -> compare-and-swap call with {p} {cmp} {v}, returns old
    bitcast: str                           # {to} {x}: reinterpret bits between types of one size
    storage: dict[str, str] = {}  # dtype -> dtype held in memory, where it differs
    param_storage: dict[str, str] = {}  # dtype -> dtype of a scalar kernel argument
    # plane ops: "shuffle" (hardware shuffles and ballot) or "local" (emulated through shared memory)
    plane_mode: str = "shuffle"
    shfl: str = ""                         # {mask} {x} {lane} {width}: read x of lane
    ballot: str = ""                       # {mask} {pred}: a word of bits of the lanes whose pred is true
    shfl_dtypes: frozenset[str] = frozenset()
    local_barrier: str = ""                # barrier for the plane emulation ("local" mode)
    local_plane_args: str = "cb_lin, cb_plane_scratch"    # what an emulated plane op's helper takes last
    # "local" mode: plane ops the device runs natively on its sub-groups, opcode -> (the extension
    # it needs, the call with {x}); the backend keeps those the device has. Shuffles all go through
    # the "plane_shuffle" entry with a computed source lane ({x}, {lane}).
    subgroup_ops: dict[str, tuple[str, str]] = {}
    extensions: tuple[str, ...] = ()       # #pragma lines for dtypes/atomics that need them
    shared_static_limit: int | None = None  # bytes of static shared memory; above it dynamic shared memory
    dynamic_shared: str = ""               # declaration of the dynamic shared memory array (bytes)
    size_t: str = "size_t"
    type_pragmas: dict[str, str] = {}  # dtype or extension used -> its #include/#pragma
    # Floating point: without fastmath nothing may be contracted or approximated, so results match
    # the interpreter and NumPy bit for bit; "algebraic" allows contraction, reciprocals and
    # approximate functions, never finite-math assumptions. A pragma in the source, or compiler flags.
    strict_fp_pragma: str = ""
    fp_flags: dict = {}   # fastmath (None or "algebraic") -> compiler flags
    # before a loop that must stay a loop: ptxas (CUDA 13) fails register allocation ("C7600 ...
    # register count of 7") on the fully unrolled 31-shuffle loop of a partial plane's reduction
    no_unroll: str = ""
    # a read-only array passed by value (`Buffer.inline`): the kernel parameter, a struct {struct}
    # named {name} that the kernel reads in place (CUDA's __grid_constant__: the constant bank, at
    # run-time indices too); "": the dialect passes none (the runtime never offers it one)
    inline_param: str = ""
    # in kernels with barriers, loop trip counts are read through a volatile, so that the compiler
    # sees them as per-unit (PoCL inserts miscompiled barriers of its own into uniform loops)
    opaque_loops: bool = False
    # a loop that holds a barrier and has more than one way out is followed by a barrier, so that
    # all its exits meet there (PoCL: LLVM threads a hoisted guard's exit past the code after the
    # loop, and a per-unit guard there let every work-item through)
    join_loop_exits: bool = False
    # a loop that holds a barrier and never reaches the end of its body becomes the if it is, which
    # the barrier hoisting splits (PoCL: LLVM folded it into an if itself, a barrier under a
    # conditional, and a guard after it let every work-item through)
    unloop_once: bool = False
    # in a loop that holds a barrier, a continue that a barrier may follow becomes a flag, and the
    # rest of the body an if that the barrier hoisting splits (PoCL: `if c: continue` before a
    # barrier is a barrier under a conditional to LLVM, and a guard after it let every work-item
    # through)
    flag_continues: bool = False
    # f64 -> narrower float conversions that round once ({x}); without one, f64 -> f16 goes
    # through float rounded to odd (plain `(half)(float)x` would round twice)
    from_double: dict = {}
    # the body of a helper ``int f(unsigned int x)`` that sign-extends the low {bits} bits of x,
    # through an operation the compiler cannot see through; without one, an 8- or 16-bit signed
    # wrap is plain C arithmetic. CUDA: NVVM turns the arithmetic into 16-bit PTX ops (a negation
    # wrapped to i16 became neg.s16), and ptxas 13.0 (-O1 to -O3, sm_90) drops the wrap of neg.s16
    # before shr.s16, so a 16-bit arithmetic shift saw 32768 and gave 1 for -1 (docs/fuzzing.md)
    sign_extend: str = ""
    # an 8- or 16-bit integer min or max computed in 32 bits ({t} the type, {op} min or max, {w}
    # int or unsigned int, {a} and {b}); without one, a select. CUDA: NVVM made a u8 maximum a
    # 16-bit max, and ptxas 13.0 (sm_90) fused it with a later test of the result against 0 into
    # one VIMNMX.U16x2 whose predicate output it misread (seed 14002140, docs/fuzzing.md)
    narrow_min_max: str = ""
    # a 32- or 64-bit signed min or max one of whose operands is a negation ({t} the type, {a},
    # {b}, {cmp} < for min and > for max), in a form no compiler turns into a min instruction;
    # without one, a select. CUDA: ptxas 13.0 (sm_90) fused `min(s, min(-n, v))` into one VIMNMX3
    # and dropped the negation of n (seed 16001842, docs/fuzzing.md)
    min_max_of_negation: str = ""
    # the body of a helper ``float f()`` giving -0.0f through a value the compiler cannot fold,
    # used for every f32 -0.0 constant; without one, -0.0f is a literal. CUDA: ptxas 13.0
    # (sm_90) turned a select of -1.0f and -0.0f into a select of the integers -1 and 0 and a
    # conversion, which gives +0.0 (docs/fuzzing.md)
    negative_zero_f32: str = ""
    # compute type ("f32", "f64") -> the body of a helper ``T f(T x)`` returning x through an
    # operation the compiler cannot see through, wrapped around every float divisor that is not a
    # nonzero constant; without one, a plain division. CUDA: NVVM's sign analysis takes a divisor
    # it believes not less than zero (a -0.0 constant, or u * -0.0 for an unsigned u) for
    # non-negative, so it held (u8 / -0.0) non-negative and dropped the test `<= -128` of the i8
    # conversion of the -inf it is (fuzz seed 21101614), and folded `u / (v * -0.0f) < -128.0f`
    # to false (docs/fuzzing.md)
    opaque_divisor: dict = {}
    # index arithmetic a checked kernel's test showed never overflows (``nowrap``, cubepy.ir.cube_checks)
    # stays signed C arithmetic, which the compiler may fold into addresses; False: it wraps as in
    # the unchecked kernel. CUDA: NVVM formed VOL3D's corner addresses from one base where the
    # arithmetic was signed, and that code ran 3% slower than the unchecked kernel's at 32x
    # (docs/benchmarks.md, twenty-seventh session); wrapping, every launch-proven build of the
    # suite is its unchecked kernel's SASS
    signed_nowrap: bool = True
    # the cube position and count along y and z behind ``CB_ONE_CUBE_Y``/``_Z`` macros, so that a
    # backend may build the source for launches of one cube along an axis, where the position is
    # 0 and the count 1 at compile time (`Rendered.count_axes`). CUDA: ABSOLUTE_POS from the 3-D
    # position cost energycalc6 3.7% at 32x against its index from blockIdx.x alone, its source
    # with that index 1.000x (docs/benchmarks.md, twenty-ninth session)
    one_cube_builds: bool = False
    # statements, C's by default (WGSL spells them otherwise): a value's definition, a variable's
    # declaration, an endless loop's head, the test of a ``for`` whose step has a sign known only
    # at run time, and the value of a ``select``
    let: str = "const {type} {name} = {value};"
    var: str = "{type} {name};"
    forever: str = "for (;;) {"
    step_test: str = "({step} > 0 ? {var} < {stop} : {var} > {stop})"
    select: str = "{cond} ? {a} : {b}"
    # qualifier of the out-of-bounds report functions (one per rank, called from every site):
    # inlined like every helper (out of line, nvcc was no faster, docs/design.md)
    report_fn: str = "CB_DEVICE"
    # the part of kernel_prefix ({shape} there) that states the cube shape: for a compile-time
    # CubeDim ({units}, {dims}), and for a shape-generic kernel ({units}: the most it launches with)
    shape_hint: str = ""
    generic_shape_hint: str = ""

    def with_(self, **changes) -> Dialect:
        return self.replace(**changes)


CUDA = Dialect(
    name="cuda",
    fp_flags=CUDA_FP_FLAGS,
    preamble=_CUDA_PREAMBLE,
    kernel_prefix='extern "C" __global__ void{shape}',
    shape_hint=" __launch_bounds__({units})",
    # ptxas allocates registers for the bound: none made checked VOL3D 18% slower on the H200
    # (72 registers), 1024 made unchecked VOL3D and DEL_DOT_VEC_2D slower than 256 (the backend's
    # units_bound gives one bound per class of register budget)
    generic_shape_hint=" __launch_bounds__({units})",
    device_fn="CB_DEVICE",
    global_q="",
    shared_q="__shared__ ",
    local_q="",
    restrict="__restrict__",
    builtins={
        **{f"unit_pos_{a}": f"((int)threadIdx.{a})" for a in "xyz"},
        **{f"cube_pos_{a}": f"((int)blockIdx.{a})" for a in "xyz"},
        **{f"cube_dim_{a}": f"((int)blockDim.{a})" for a in "xyz"},
        **{f"cube_count_{a}": f"((int)gridDim.{a})" for a in "xyz"},
    },
    barrier="__syncthreads();",
    types=_CUDA_TYPES,
    vector_types=_CUDA_VECTORS,
    vector_elems=_XYZW,
    struct_decl="struct __align__({align}) {name} {{ {ctype} v[{width}]; }};",
    int_suffix={"i64": "ll", "u32": "u", "u64": "ull"},
    float_suffix={"f32": "f"},
    math=_CUDA_MATH,
    inf="__int_as_float(0x7f800000)",
    nan="__int_as_float(0x7fffffff)",
    atomics=_cuda_atomics(min_max_i64=True),
    cas=_CUDA_CAS,
    bitcast="cb_bitcast<{to}>({x})",
    param_storage={"bool_": "u8", "f16": "f32", "bf16": "f32"},
    type_pragmas={"f16": "#include <cuda_fp16.h>", "bf16": "#include <cuda_bf16.h>"},
    shfl="__shfl_sync({mask}, {x}, {lane}, {width})",
    ballot="__ballot_sync({mask}, {pred})",
    shfl_dtypes=frozenset({"i32", "u32", "i64", "u64", "f32", "f64"}),
    shared_static_limit=48 * 1024,
    dynamic_shared="extern __shared__ __align__(16) unsigned char cb_dynamic_smem[];",
    no_unroll="#pragma unroll 1",
    inline_param="const __grid_constant__ {struct} {name}",
    one_cube_builds=True,
    from_double={"f16": "__double2half({x})", "bf16": "__double2bfloat16({x})"},
    # PTX's cvt takes a wider source register and uses its low bits; the host branch is for
    # compiling the same source for the host (tests/fuzz/host_cuda.py)
    sign_extend=("#ifdef __CUDA_ARCH__\n  int r;\n  asm(\"cvt.s32.s{bits} %0, %1;\" : \"=r\"(r) : \"r\"(x));\n"
                 "  return r;\n#else\n  return (int)((x & {mask}u) ^ {sign}u) - {sign};\n#endif"),
    narrow_min_max="(({t}){op}(({w})({a}), ({w})({b})))",
    min_max_of_negation="({b} ^ (({a} ^ {b}) & -({t})({a} {cmp} {b})))",
    # an inline PTX move: NVVM's analyses stop at it, ptxas removes it
    opaque_divisor={
        t: (f"#ifdef __CUDA_ARCH__\n  {c} y;\n  asm(\"mov.b{bits} %0, %1;\" : \"={k}\"(y) : \"{k}\"(x));\n"
            f"  return y;\n#else\n  return x;\n#endif")
        for t, c, bits, k in (("f32", "float", 32, "f"), ("f64", "double", 64, "d"))},
    # the sign bit or'ed with a bit that is always 0 but that neither NVVM nor ptxas can prove 0
    # (bit 31 of %tid.x, read in inline PTX): a plain `mov.b32 0x80000000` is a constant to ptxas,
    # which folded it into the integer select again in larger kernels (seeds 12004882, 14000430)
    signed_nowrap=False,
    negative_zero_f32=("#ifdef __CUDA_ARCH__\n  unsigned int t;\n  asm(\"mov.u32 %0, %%tid.x;\" : \"=r\"(t));\n"
                       "  return __int_as_float(0x80000000u | (t >> 31));\n#else\n  return -0.0f;\n#endif"),
)

HIP = CUDA.with_(
    name="hip",
    fp_flags=HIP_FP_FLAGS,
    preamble=_HIP_PREAMBLE,
    types={**_CUDA_TYPES, "bf16": "hip_bfloat16"},
    type_pragmas={"f16": "#include <hip/hip_fp16.h>", "bf16": "#include <hip/hip_bfloat16.h>"},
    atomics=_cuda_atomics(min_max_i64=False),
    # The wave-wide forms that every ROCm release has: __ballot gives a 64-bit mask on wave32
    # and wave64 alike; planes are whole waves, so the mask argument is not needed.
    shfl="__shfl({x}, {lane}, {width})",
    ballot="((unsigned long long)__ballot({pred}))",
    shfl_dtypes=frozenset({"i32", "u32", "i64", "u64", "f32", "f64"}),
    inf="__int_as_float(0x7f800000)",
    nan="__int_as_float(0x7fffffff)",
    shared_static_limit=64 * 1024,
    dynamic_shared="extern __shared__ __align__(16) unsigned char cb_dynamic_smem[];",
    from_double={},
    sign_extend="",
    narrow_min_max="",
    min_max_of_negation="",
    negative_zero_f32="",
    opaque_divisor={},
)

_OCL_TYPES = {
    "bool_": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "f16": "half", "f32": "float", "f64": "double",
}
# no half vectors: NVIDIA's OpenCL compiler cannot build arithmetic on them ("Do not know how to
# split the result of this operator!"); f16 Lines are structs of halves, computed element by element
_OCL_VECTORS = {(d, w): f"{t}{w}" for d, t in _OCL_TYPES.items() if d not in ("bool_", "f16") for w in (2, 4, 8, 16)}
_OCL_ATOMICS: dict[tuple[str, str], str] = {}
for _op, _fn in (("add", "add"), ("sub", "sub"), ("min", "min"), ("max", "max"), ("and", "and"), ("or", "or"),
                 ("xor", "xor"), ("exchange", "xchg")):
    for _d in ("i32", "u32"):
        _OCL_ATOMICS[(_op, _d)] = f"atomic_{_fn}({{p}}, {{v}})"
    for _d in ("i64", "u64"):
        _OCL_ATOMICS[(_op, _d)] = f"atom_{_fn}({{p}}, {{v}})"
_OCL_ATOMICS[("exchange", "f32")] = "atomic_xchg({p}, {v})"
for _d in ("i32", "u32"):
    _OCL_ATOMICS[("cas", _d)] = "atomic_cmpxchg({p}, {cmp}, {v})"
for _d in ("i64", "u64"):
    _OCL_ATOMICS[("cas", _d)] = "atom_cmpxchg({p}, {cmp}, {v})"

OPENCL = Dialect(
    name="opencl",
    strict_fp_pragma="#pragma OPENCL FP_CONTRACT OFF",
    fp_flags=OPENCL_FP_FLAGS,
    preamble=_OPENCL_PREAMBLE,
    kernel_prefix="__kernel{shape} void",
    shape_hint=" __attribute__((reqd_work_group_size({dims})))",
    device_fn="CB_DEVICE",
    global_q="__global ",
    shared_q="__local ",
    local_q="__local ",
    restrict="restrict",
    builtins={
        **{f"unit_pos_{a}": f"((int)get_local_id({i}))" for i, a in enumerate("xyz")},
        **{f"cube_pos_{a}": f"((int)get_group_id({i}))" for i, a in enumerate("xyz")},
        **{f"cube_dim_{a}": f"((int)get_local_size({i}))" for i, a in enumerate("xyz")},
        **{f"cube_count_{a}": f"((int)get_num_groups({i}))" for i, a in enumerate("xyz")},
    },
    barrier="barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
    types=_OCL_TYPES,
    vector_types=_OCL_VECTORS,
    vector_elems=tuple(f".s{i:x}" for i in range(16)),
    struct_decl="typedef struct __attribute__((aligned({align}))) {{ {ctype} v[{width}]; }} {name};",
    int_suffix={"i64": "L", "u32": "u", "u64": "UL"},
    float_suffix={},
    math={**_CUDA_MATH},
    inf="INFINITY",
    nan="NAN",
    atomics=_OCL_ATOMICS,
    cas={32: "atomic_cmpxchg({p}, {cmp}, {v})", 64: "atom_cmpxchg({p}, {cmp}, {v})"},
    bitcast="as_{to}({x})",
    storage={"bool_": "u8"},
    param_storage={"bool_": "u8", "f16": "f32"},
    plane_mode="local",
    local_barrier="barrier(CLK_LOCAL_MEM_FENCE);",
    from_double={"f16": "convert_half_rte({x})"},
    type_pragmas={"f64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
                  "f16": "#pragma OPENCL EXTENSION cl_khr_fp16 : enable",
                  "cl_khr_subgroups": "#pragma OPENCL EXTENSION cl_khr_subgroups : enable"},
    extensions=("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable",
                "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable"),
    # CUDA's forms, on every OpenCL device: NVIDIA's OpenCL compiles through the same ptxas as
    # CUDA (its miscompiles above are ptxas', not NVRTC's), and on PoCL, the CI device, the
    # fuzzer checks these forms' meaning on every run (plain OpenCL C; the two CUDA workarounds
    # written in inline PTX are `OPENCL_NVIDIA`'s)
    narrow_min_max=CUDA.narrow_min_max,
    min_max_of_negation=CUDA.min_max_of_negation,
    # the OpenCL backend builds per launch shape as CUDA does (`backends/cstyle/builds.py`)
    one_cube_builds=True,
)

# NVIDIA's OpenCL platform: its compiler takes inline PTX (`__asm__`), so CUDA's workarounds of
# NVVM and ptxas written in it apply there too, in OpenCL C (no host branch: the source only ever
# builds for the GPU)
OPENCL_NVIDIA = OPENCL.with_(
    sign_extend="  int r;\n  __asm__(\"cvt.s32.s{bits} %0, %1;\" : \"=r\"(r) : \"r\"(x));\n  return r;",
    negative_zero_f32=("  uint t;\n  __asm__(\"mov.u32 %0, %%tid.x;\" : \"=r\"(t));\n"
                       "  return as_float(0x80000000u | (t >> 31));"),
    opaque_divisor={t: f"  {c} y;\n  __asm__(\"mov.b{bits} %0, %1;\" : \"={k}\"(y) : \"{k}\"(x));\n  return y;"
                    for t, c, bits, k in (("f32", "float", 32, "f"), ("f64", "double", 64, "d"))},
)


# OpenCL sub-group builtins for plane ops (cl_khr_subgroups and its companions). The OpenCL backend
# puts those the device supports into its dialect's ``subgroup_ops`` when the device's sub-group
# size is the plane size; otherwise plane ops stay emulated through local memory.
OPENCL_SUBGROUP_OPS = {
    "plane_sum": ("cl_khr_subgroups", "sub_group_reduce_add({x})"),
    "plane_min": ("cl_khr_subgroups", "sub_group_reduce_min({x})"),
    "plane_max": ("cl_khr_subgroups", "sub_group_reduce_max({x})"),
    "plane_inclusive_sum": ("cl_khr_subgroups", "sub_group_scan_inclusive_add({x})"),
    "plane_exclusive_sum": ("cl_khr_subgroups", "sub_group_scan_exclusive_add({x})"),
    "plane_all": ("cl_khr_subgroups", "sub_group_all({x})"),
    "plane_any": ("cl_khr_subgroups", "sub_group_any({x})"),
    "plane_ballot": ("cl_khr_subgroup_ballot", "sub_group_ballot({x})"),
    "plane_shuffle": ("cl_khr_subgroup_shuffle", "sub_group_shuffle({x}, {lane})"),
}
