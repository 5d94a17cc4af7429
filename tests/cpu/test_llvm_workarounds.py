"""The CPU backend against the LLVM bugs it works around (`backends/cpu/jit.py`, X86_FEATURES_OFF).

LLVM 22.1's EVEX compression folds ``vpmovd2m %x, %k`` + ``kmov %k, %r`` into ``vmovmskps %x, %r``
and erases the ``vpmovd2m`` though a later masked compare into the same register (``vptestmd %y,
%y, %k {%k}``) still reads ``%k``. ``REPRODUCER`` is that in fourteen lines: a sign test whose
lane 0 is read as an integer, then the same test as the mask of a second compare (the load in
between orders the two). With LLVM 22.1's full AVX-512 it gives wrong answers in most lanes; the
backend compiles AVX-512 code without AVX512VL on that release.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")

from cubepy.backends.cpu import jit  # noqa: E402

REPRODUCER = """
define void @f(ptr %px, ptr %py, ptr %out, ptr %lane0) {
entry:
  %x0 = load <4 x i32>, ptr %px
  %y = load <4 x i32>, ptr %py
  %x = xor <4 x i32> %x0, %y
  %s = icmp slt <4 x i32> %x, zeroinitializer
  %b0 = extractelement <4 x i1> %s, i64 0
  %sel = zext i1 %b0 to i32
  store i32 %sel, ptr %lane0
  %y2 = load <4 x i32>, ptr %py
  %nz = icmp ne <4 x i32> %y2, zeroinitializer
  %m = and <4 x i1> %nz, %s
  %r = select <4 x i1> %m, <4 x i32> %y2, <4 x i32> zeroinitializer
  store <4 x i32> %r, ptr %out
  ret void
}
"""

# the same sign tests on bytes and on 64-bit lanes (vpmovb2m, vpmovq2m where the features allow)
SIGN_TESTS = """
define void @g(ptr %pb, ptr %pq, ptr %out) {
entry:
  %b = load <16 x i8>, ptr %pb
  %q = load <4 x i64>, ptr %pq
  %b2 = add <16 x i8> %b, %b
  %q2 = add <4 x i64> %q, %q
  %sb = icmp slt <16 x i8> %b2, zeroinitializer
  %sq = icmp slt <4 x i64> %q2, zeroinitializer
  %mb = bitcast <16 x i1> %sb to i16
  %mq = bitcast <4 x i1> %sq to i4
  %wb = zext i16 %mb to i32
  %wq = zext i4 %mq to i32
  %w = or i32 %wb, %wq
  store i32 %w, ptr %out
  ret void
}
"""


def _target_machine(features: str):
    host = jit.init()
    return llvm.Target.from_triple(host["triple"]).create_target_machine(
        cpu=host["cpu"], features=features, opt=3, codemodel="jitdefault")


def _asm(ir: str, features: str) -> str:
    return _target_machine(features).emit_assembly(llvm.parse_assembly(ir))


def _run_reproducer(features: str, samples: int = 400) -> int:
    """How many of ``samples`` random inputs the reproducer gets wrong, built for ``features``."""
    module = llvm.parse_assembly(REPRODUCER)
    engine = llvm.create_mcjit_compiler(module, _target_machine(features))
    engine.finalize_object()
    f = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(engine.get_function_address("f"))
    rng = np.random.default_rng(198197)
    wrong = 0
    for _ in range(samples):
        x, y = (rng.integers(-5, 6, 4, dtype=np.int32) for _ in range(2))
        out = np.full(4, 0x5A5A5A5A, np.int32)
        lane0 = np.full(1, 0x5A5A5A5A, np.int32)
        f(x.ctypes.data, y.ctypes.data, out.ctypes.data, lane0.ctypes.data)
        want = np.where(((x ^ y) < 0) & (y != 0), y, 0)
        wrong += not (np.array_equal(out, want) and lane0[0] == int((x[0] ^ y[0]) < 0))
    del engine
    return wrong


def test_the_backends_target_features_run_the_mask_fold_reproducer_right():
    # the features every CPU device of this process compiles for, on this LLVM release
    assert _run_reproducer(jit.features("native")) == 0
    if jit.host_has("avx2"):
        assert _run_reproducer(jit.features("avx2")) == 0


def test_an_llvm_release_with_the_mask_fold_bug_compiles_avx512_code_without_vl(monkeypatch):
    # the workaround's mechanism, on any LLVM: on a release in X86_FEATURES_OFF the native code has
    # no AVX512VL, so no 128- or 256-bit EVEX form (every instruction the faulty fold matches is
    # one) while it keeps AVX-512's 512-bit vectors and mask registers. With the host's features
    # LLVM 22.1 gets the reproducer wrong, and an LLVM without the fold keeps the vpmov*2m it would
    # have matched (so this test can fail).
    if not (jit.host_has("avx512dq") and jit.host_has("avx512bw") and jit.host_has("avx512vl")):
        pytest.skip("this CPU has no AVX512DQ/BW/VL: no vpmov*2m on xmm or ymm either way")
    full = llvm.get_host_cpu_features().flatten()
    if jit.features_off():
        assert _run_reproducer(full) > 0
    else:
        assert re.search(r"vpmov[bdq]2m\s+%[xy]mm", _asm(REPRODUCER, full) + _asm(SIGN_TESTS, full))
    monkeypatch.setattr(jit.llvm, "llvm_version_info", (22, 1, 0))
    kept = jit._features(llvm.get_host_cpu_features(), "native").split(",")
    assert "+avx512f" in kept and "-avx512vl" in kept and not any(
        f.startswith(("+avx512vl", "+avx512fp16", "+avx10", "+amx-avx512")) for f in kept)
    kept = ",".join(kept)
    asm = _asm(REPRODUCER, kept) + _asm(SIGN_TESTS, kept)
    assert "%zmm" in asm and re.search(r"%k[1-7]", asm)          # AVX-512 code, 512 bits wide
    # no instruction on xmm or ymm writes, reads or is masked by a mask register
    assert not [line for line in asm.splitlines() if re.search(r"%k\d", line) and re.search(r"%[xy]mm", line)]
    assert _run_reproducer(kept) == 0
    monkeypatch.setattr(jit.llvm, "llvm_version_info", (20, 1, 8))
    assert "+avx512vl" in jit._features(llvm.get_host_cpu_features(), "native").split(",")


def test_the_cpu_device_says_when_its_llvm_keeps_it_from_a_feature():
    import cubepy as cb

    device = cb.device("cpu")
    if jit.features_off() and jit.host_has("avx512vl"):
        assert "avx512vl off for LLVM 22.1" in device.properties.name
        assert "avx512f" in device.properties.features and "simd_f32x16" in device.properties.features
    else:
        assert "off for LLVM" not in device.properties.name
    if jit.host_has("avx2"):
        assert "off for LLVM" not in cb.device("cpu", isa="avx2").properties.name
