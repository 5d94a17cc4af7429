"""The CUDA source keeps the IR's meaning where NVIDIA's compilers are known to take liberties:
narrow signed wraps are exact arithmetic (never a conversion nvcc may drop), float min/max and
float-to-integer conversion are the helpers of the one rule, a negated negative constant is not
``--``, and the partial-plane reduction loop that made ptxas fail register allocation stays a loop.
Compiled with nvcc for sm_90 here; run on an H200 by ``python -m tests.fuzz --devices cuda``."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from conftest import missing_toolchain, opencl_clang
from cubepy.backends.cstyle import CUDA, OPENCL, OPENCL_NVIDIA, render

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, f64, i8, i16, i32, u8


def _ir(kernel, *args, dim=32, plane=32):
    return kernel.compile(*args, dim=dim, device=cb.device("interp", plane_dim=plane, shape_generic=False)).ir_module


def _nvcc(tmp_path, source: str, name: str, form: str = "cubin") -> str | None:
    """Compile ``source`` for sm_90 with nvcc; the PTX text where ``form`` is "ptx"."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        missing_toolchain("nvcc is not on PATH (install the CUDA toolkit to compile-check the CUDA dialect)")
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    out = f"{path}.{form}"
    p = subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", f"-{form}", "-o", out, str(path)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (name, p.stderr[-3000:])
    return open(out).read() if form == "ptx" else None


@cb.kernel
def neg16(x: Array[i16], o: Mut[Array[i32]], p: Mut[Array[i16]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = i32(-x[i])          # -(-32768) wraps to -32768 in i16, then widens
        p[i] = x[i] * x[i] + x[i]


def test_a_narrow_signed_wrap_is_exact_arithmetic_not_a_conversion_a_compiler_may_drop(tmp_path):
    ir = _ir(neg16, np.zeros(4, np.int16), np.zeros(4, np.int32), np.zeros(4, np.int16))
    src = render(ir, CUDA).source
    assert not re.search(r"\(short\)\(-\(unsigned int\)", src), src       # the pattern nvcc folded
    assert src.count("cb_sext16((unsigned int)") == 3       # -x, x * x and + x: each sign-extended, opaquely
    assert render(ir, OPENCL).source.count("& 65535u)) ^ 32768) - 32768)") == 3      # in exact arithmetic
    _nvcc(tmp_path, src, "neg16")
    x = np.array([-32768, -1, 0, 1, 32767, -2], np.int16)              # and the meaning, on every device
    for device in ("interp", "cpu", "opencl"):
        o, p = np.zeros(6, np.int32), np.zeros(6, np.int16)
        neg16.launch(1, 32, x, o, p, device=device)
        np.testing.assert_array_equal(o, (-x.astype(np.int64) + 2**15) % 2**16 - 2**15)
        np.testing.assert_array_equal(p, ((x.astype(np.int64) ** 2 + x + 2**15) % 2**16 - 2**15))


@cb.kernel
def neg_sign(x: Array[i16], o: Mut[Array[i16]], b: Array[i8], q: Mut[Array[i8]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = -x[i] >> i16(15)         # -(-32768) wraps to -32768, whose sign fill is -1
        q[i] = -b[i] >> i8(7)


def test_a_narrow_wrap_reaches_ptx_as_32_bit_arithmetic_which_ptxas_does_not_miscompile(tmp_path):
    # NVVM made `neg.s16` then `shr.s16 15` of this, and ptxas 13.0 (sm_90, -O1 to -O3) negated in
    # 32 bits without wrapping to 16 before the shift: 32768 >> 15 stored 1 for -32768 (fuzz seed
    # 17003030, read in SASS: PRMT, IADD3 -R, SHF.R.S32.HI 0xf). The wrap is an opaque cvt.s32.s16.
    args = (np.zeros(4, np.int16), np.zeros(4, np.int16), np.zeros(4, np.int8), np.zeros(4, np.int8))
    ptx = _nvcc(tmp_path, render(_ir(neg_sign, *args), CUDA).source, "neg_sign", "ptx")
    assert not re.search(r"\b(neg|shr|mul|add|sub)\.[su]16\b", ptx), ptx
    assert "cvt.s32.s16" in ptx and "cvt.s32.s8" in ptx
    x = np.array([-32768, -1, 0, 1, 32767, -2], np.int16)
    b = np.array([-128, -1, 0, 1, 127, -2], np.int8)
    for device in ("interp", "cpu", "opencl"):
        o, q = np.full(6, 99, np.int16), np.full(6, 99, np.int8)
        neg_sign.launch(1, 32, x, o, b, q, device=device)
        np.testing.assert_array_equal(o, [-1, 0, 0, -1, -1, 0])
        np.testing.assert_array_equal(q, [-1, 0, 0, -1, -1, 0])


@cb.kernel
def negative_zero_select(x: Array[i8], o: Mut[Array[f32]], p: Mut[Array[f32]], K: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = cb.select(x[i] > i8(7), f32(-1.0), f32(-0.0))
        p[i] = f32(-1.0) if x[i] > i8(7) else -f32(K)       # K = 0: a negation the frontend folds


def test_an_f32_negative_zero_is_a_value_ptxas_cannot_fold_into_an_integer_select(tmp_path):
    # ptxas 13.0 (sm_90) made `selp.f32 -1.0, -0.0` a select of the integers -1 and 0 and an
    # I2FP, which gives +0.0 (fuzz seeds 14000430, 12004882, read in SASS); every f32 -0.0 is
    # now the sign bit or'ed with bit 31 of %tid.x, which no compiler can prove 0
    args = np.zeros(4, np.int8), np.zeros(4, np.float32), np.zeros(4, np.float32), 0
    src = render(_ir(negative_zero_select, *args), CUDA).source
    body = src[src.index("__global__"):]
    assert "-0.0f" not in body and "-(0.0f)" not in body and body.count("cb_negative_zero_f32()") == 2, body
    ptx = _nvcc(tmp_path, src, "negative_zero", "ptx")
    assert "0f80000000" not in ptx, ptx             # no -0.0 constant reaches ptxas
    assert "%tid.x" in ptx and not re.search(r"mov\.b32\s+%f\d+, 0x80000000", ptx), ptx   # nor a constant move
    x = np.array([-128, -1, 0, 7, 8, 127], np.int8)
    for device in ("interp", "cpu", "opencl"):
        o, p = np.full(6, 12345.0, np.float32), np.full(6, 12345.0, np.float32)
        negative_zero_select.launch(1, 32, x, o, p, 0, device=device)
        for out in (o, p):
            np.testing.assert_array_equal(out, [-0.0, -0.0, -0.0, -0.0, -1.0, -1.0])
            assert np.signbit(out).all()


@cb.kernel
def narrow_max_then_divide(c: Array[u8], y: Array[u8], o: Mut[Array[u8]], q: Mut[Array[i16]]):
    i = cb.ABSOLUTE_POS
    if i < len(c):
        o[i] = y[i] // cb.max(c[i], u8(1))             # a maximum, then the division's test of it
        q[i] = cb.min(i16(c[i]) - i16(200), i16(y[i]))


def test_a_narrow_integer_min_or_max_is_computed_in_32_bits_on_cuda(tmp_path):
    # ptxas 13.0 (sm_90) fused NVVM's 16-bit max of a u8 maximum with the division's test of it
    # for zero into one VIMNMX.U16x2 whose predicate it misread: every unit stored 0 (seed 14002140)
    args = np.zeros(4, np.uint8), np.zeros(4, np.uint8), np.zeros(4, np.uint8), np.zeros(4, np.int16)
    src = render(_ir(narrow_max_then_divide, *args), CUDA).source
    assert "max((unsigned int)(" in src and "min((int)(" in src, src
    # NVIDIA's OpenCL goes through the same ptxas; the meaning of the OpenCL form runs below (PoCL)
    ocl = render(_ir(narrow_max_then_divide, *args), OPENCL).source
    assert "max((uint)(" in ocl and "min((int)(" in ocl, ocl
    ptx = _nvcc(tmp_path, src, "narrow_max", "ptx")
    assert not re.search(r"\b(max|min)\.[us]16\b", ptx), ptx
    rng = np.random.default_rng(5)
    c, y = rng.integers(0, 256, 64, dtype=np.uint8), rng.integers(0, 256, 64, dtype=np.uint8)
    c[:4] = 0
    for device in ("interp", "cpu", "opencl"):
        o, q = np.full(64, 77, np.uint8), np.full(64, 77, np.int16)
        narrow_max_then_divide.launch(2, 32, c, y, o, q, device=device)
        np.testing.assert_array_equal(o, y // np.maximum(c, 1))
        np.testing.assert_array_equal(q, np.minimum(c.astype(np.int16) - 200, y.astype(np.int16)))


@cb.kernel
def partial_plane_min(x: Array[f64], o: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    o[i] = cb.plane_min(cb.sqrt(cb.abs(x[i]) + 2.0))


def test_the_partial_plane_reduction_loop_stays_a_loop_so_ptxas_can_allocate_registers(tmp_path):
    # a cube of 2 units is a partial plane of 32: this kernel's CUDA made ptxas 13.0 abort with
    # "(C7600) Register allocation failed with register count of '7'" (../shared/repro)
    ir = _ir(partial_plane_min, np.zeros(2), np.zeros(2), dim=2)
    src = render(ir, CUDA).source
    assert "__launch_bounds__(2)" in src and "#pragma unroll 1\n  for (int l = 1; l < 32; ++l)" in src
    assert "fmin(" not in src and "cb_min_f64(" in src
    _nvcc(tmp_path, src, "partial_plane_min")


@cb.kernel
def rules(x: Array[f32], y: Array[f32], mn: Mut[Array[f32]], c: Mut[Array[i32]], s: Mut[Array[i32]], n: i32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        mn[i] = cb.max(cb.min(x[i], y[i]), -(-0.5))  # noqa: B002  (rendered as -(-0.5f), not --0.5f)
        c[i] = i32(x[i])
        s[i] = (c[i] << n) + (c[i] >> 40)


def test_min_max_casts_shifts_and_negated_constants_render_as_the_rules_say(tmp_path):
    args = (np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.int32),
            np.zeros(4, np.int32), 3)
    ir = _ir(rules, *args)
    for dialect in (CUDA, OPENCL):
        src = render(ir, dialect).source
        assert "--" not in re.sub(r"//.*", "", src)
        assert "cb_min_f32(" in src and "cb_max_f32(" in src and "fmax(" not in src
        assert "cb_cast_f32_i32(" in src and "(int)x;" in src and "x != x ? 0" in src
        assert "< 0 || " in src                               # a variable count outside [0, 32) is handled
        assert ">> 40" not in src                             # a constant count of 40 folds to its result
    _nvcc(tmp_path, render(ir, CUDA).source, "rules")


@pytest.mark.parametrize("kernel", [neg16, rules])
def test_the_opencl_source_of_these_kernels_builds_on_the_test_device(kernel):
    if not any(d.backend_name == "opencl" and d.available for d in cb.devices()):
        pytest.skip("no OpenCL device")
    args = (np.zeros(4, np.int16), np.zeros(4, np.int32), np.zeros(4, np.int16)) if kernel is neg16 else (
        np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.int32),
        np.zeros(4, np.int32), 3)
    kernel.compile(*args, dim=32, device="opencl")


@cb.kernel
def narrow_conversions(x: Array[f64], u: Array[cb.u64], h: Mut[Array[cb.f16]], s: Mut[Array[cb.i64]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        h[i] = cb.f16(x[i])        # f64 -> f16 rounds once (through float it would round twice)
        s[i] = cb.i64(u[i])        # u64 -> i64 past INT64_MAX wraps by exact arithmetic


def test_f64_to_f16_rounds_once_in_every_dialect(tmp_path):
    from cubepy.backends.cstyle import HIP

    x = np.array([1 + 2**-11 + 2**-30, 1.0], np.float64)
    ir = narrow_conversions.compile(x, np.zeros(2, np.uint64), np.zeros(2, np.float16), np.zeros(2, np.int64),
                                    dim=4, device="interp").ir_module
    assert "__double2half(" in render(ir, CUDA).source and "convert_half_rte(" in render(ir, OPENCL).source
    hip = render(ir, HIP).source
    helper = hip[hip.index("CB_DEVICE float cb_f64_to_f32_odd"):]
    helper = helper[:helper.index("\n}\n") + 3]
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++ to run the HIP helper on the host")
    program = tmp_path / "odd.cpp"
    program.write_text("#include <cmath>\n#include <cstdio>\n#include <cstring>\n#define CB_DEVICE static\n"
                       "template <typename To, typename From> To cb_bitcast(From x) { To t; std::memcpy(&t, &x, "
                       "sizeof t); return t; }\nusing std::fabs;\n" + helper +
                       "int main() { double x; while (std::scanf(\"%la\", &x) == 1) "
                       "std::printf(\"%a\\n\", (double)(_Float16)cb_f64_to_f32_odd(x)); }\n")
    build = subprocess.run([gxx, "-O2", "-o", str(tmp_path / "odd"), str(program)], capture_output=True, text=True)
    if build.returncode:
        pytest.skip(f"g++ has no _Float16 here: {build.stderr[-300:]}")
    rng = np.random.default_rng(3)
    values = np.concatenate([x, rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 6, 2000),
                             np.float16(rng.standard_normal(500)).astype(np.float64) * (1 + 2**-12 + 2**-40)])
    out = subprocess.run([str(tmp_path / "odd")], input="\n".join(float(v).hex() for v in values),
                         capture_output=True, text=True).stdout.split()
    got = np.array([float.fromhex(v) for v in out])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, values.astype(np.float16).astype(np.float64))


def test_the_ptxas_reproducers_compile_and_keep_the_ptx_they_reproduce_from(tmp_path):
    # `python -m tests.fuzz.ptxas_repros` runs them on a GPU; here each must still compile, and the
    # newest must still give ptxas the 16-bit PTX whose wrap it drops (neg.s16 then shr.s16)
    from tests.fuzz.ptxas_repros import REPROS

    texts = {repro.name: _nvcc(tmp_path, repro.source(), repro.name, "ptx") for repro in REPROS}
    ptx = texts["negated_short_then_sign_fill"]
    assert "neg.s16" in ptx and re.search(r"shr\.s16\s+%rs\d+, %rs\d+, 15;", ptx), ptx


@cb.kernel
def min_of_negated_parameter(x: Array[i32], o: Mut[Array[i32]], p: Mut[Array[i32]], s: i32, n: i32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = cb.min(s, cb.min(-n, x[i]))
        p[i] = cb.max(s, cb.max(-n, x[i]))


def test_a_min_or_max_of_a_negation_is_not_a_min_instruction_on_cuda(tmp_path):
    # ptxas 13.0 (sm_90) fused min(s, min(-n, v)) of kernel parameters s and n into one VIMNMX3
    # and dropped the negation of n (seed 16001842, read in SASS); a min or max of a negation is
    # now the branch-free xor form
    args = np.zeros(4, np.int32), np.zeros(4, np.int32), np.zeros(4, np.int32), 13, 62
    src = render(_ir(min_of_negated_parameter, *args), CUDA).source
    assert src.count("& -(int)(") == 2, src
    assert render(_ir(min_of_negated_parameter, *args), OPENCL).source.count("& -(int)(") == 2
    ptx = _nvcc(tmp_path, src, "min_of_negation", "ptx")
    assert len(re.findall(r"\b(min|max)\.s32\b", ptx)) == 2, ptx     # only the outer two: with s
    rng = np.random.default_rng(16001842)
    x = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    x[:4] = [-2**31, -62, 13, 2**31 - 1]
    for device in ("interp", "cpu", "opencl"):
        o, p = np.full(64, 7, np.int32), np.full(64, 7, np.int32)
        min_of_negated_parameter.launch(2, 32, x, o, p, 13, 62, device=device)
        np.testing.assert_array_equal(o, np.minimum(13, np.minimum(-62, x)))
        np.testing.assert_array_equal(p, np.maximum(13, np.maximum(-62, x)))


def test_nvidias_opencl_takes_cudas_inline_ptx_workarounds(tmp_path):
    """NVIDIA's OpenCL builds through the same NVVM and ptxas: its dialect wraps narrow integers
    with `cvt.s32.s16`, makes -0.0f from %tid.x and moves float divisors in inline PTX, as CUDA
    does; clang's nvptx OpenCL target takes the source and keeps all three in its PTX (NVIDIA's
    own OpenCL compiler is the GPU machine's)."""
    clang = opencl_clang()
    cases = [(neg_sign, (np.zeros(4, np.int16), np.zeros(4, np.int16), np.zeros(4, np.int8), np.zeros(4, np.int8)),
              ("cvt.s32.s16", "cvt.s32.s8")),
             (negative_zero_select, (np.zeros(4, np.int8), np.zeros(4, np.float32), np.zeros(4, np.float32), 0),
              ("%tid.x",)),
             (divide_by_negative_zero, (np.zeros(4, np.uint8), np.zeros(4, np.int32), np.zeros(4, np.int32)),
              ("mov.b64 %fd", "mov.b32 %f"))]
    for kernel, args, wanted in cases:
        ir = _ir(kernel, *args)
        plain, nvidia = render(ir, OPENCL).source, render(ir, OPENCL_NVIDIA).source
        assert "__asm__" not in plain and "__asm__" in nvidia
        path = tmp_path / f"{kernel.__name__}.cl"
        path.write_text(nvidia)
        done = subprocess.run([clang, "-x", "cl", "-cl-std=CL1.2", "-target", "nvptx64-nvidia-nvcl", "-Xclang",
                               "-finclude-default-header", "-O2", "-S", "-o", f"{path}.ptx", str(path)],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        ptx = open(f"{path}.ptx").read()
        for text in wanted:
            assert text in ptx, (text, ptx[-2000:])
        if kernel is negative_zero_select:
            assert "0f80000000" not in ptx


@cb.kernel
def divide_by_negative_zero(x: Array[u8], o: Mut[Array[i32]], q: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = i32(i8(f64(x[i]) / -0.0))               # -inf (NaN for 0): i8 saturates it to -128
        q[i] = i32(f32(x[i]) / (f32(x[0]) * -0.0) < -128.0)    # -0.0 at run time: -inf < -128


def test_a_float_divisor_is_opaque_to_nvvm_which_takes_negative_zero_for_non_negative(tmp_path):
    # NVVM's sign analysis held (u8 / -0.0) non-negative: it dropped the `<= -128` test of the
    # i8 conversion of the -inf it is (cvt.rzi then gave 0, fuzz seed 21101614 on the H200) and
    # folded the f32 comparison to false. Every divisor but a nonzero constant goes through an
    # inline PTX move that NVVM cannot see through.
    args = (np.zeros(4, np.uint8), np.zeros(4, np.int32), np.zeros(4, np.int32))
    src = render(_ir(divide_by_negative_zero, *args), CUDA).source
    assert src.count("cb_opaque_f64((-0.0))") == 1 and src.count("/ cb_opaque_f32(") == 1, src
    ptx = _nvcc(tmp_path, src, "divide_by_negative_zero", "ptx")
    assert "0dC060000000000000" in ptx, ptx        # i8's floor, -128.0, is still compared with
    assert "0fC3000000" in ptx, ptx                # and so is the f32 comparison's -128.0f
    halved = render(_ir(half_of, np.zeros(4), np.zeros(4)), CUDA).source
    assert "cb_opaque" not in halved and "/ 2.0" in halved     # a nonzero constant stays a constant
    # the meaning on every device: tests/conformance/test_semantics.py


@cb.kernel
def half_of(x: Array[f64], o: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = x[i] / 2.0
