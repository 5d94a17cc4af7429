"""What an adapter's shader compiler does where WGSL leaves arithmetic open or a driver gets it
wrong, found once per device by small probe shaders on inputs the compiler cannot see
(`probe_quirks`).

The renderer turns each fact into what keeps cubepy's semantics (docs/design.md, "Semantics") on
that adapter (the table in backends/wgpu/DESIGN.md). Mesa's lavapipe rounds ``fma`` twice and
rewrites float arithmetic as if it were exact (``x - x`` to 0, ``(a + b) - a`` to ``b``: SPIR-V's
NoContraction would forbid it, and naga writes none). NVIDIA's Vulkan driver (an H200, driver
580.159) contracts ``a * b + c`` into one rounding, divides f32 to within ulps rather than
correctly rounded (Vulkan allows 2.5 ulp), flushes f32 subnormals in arithmetic and comparisons,
gets i32 ``%`` wrong for negative operands, and drops the rounding of f32 values to f16 that
f16 arithmetic computed in f32 needs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from .probe import run_once


@dataclass(frozen=True)
class Quirks:
    """Facts about one adapter's arithmetic; the defaults are the worst WGSL allows (an adapter
    that cannot be probed gets every workaround)."""

    fma_f32_exact: bool = False       # fma() on f32 rounds the exact a * b + c once
    fma_f64_exact: bool = False       # the same on f64
    contracts: bool = True            # a * b + c may become one fused multiply-add
    folds_inexact: bool = True        # x - x becomes 0, (a + b) - a becomes b, as if exact
    srem_wrong: bool = True           # i32 % of negative operands is not the truncated remainder
    f32_div_sqrt_inexact: bool = True     # f32 a / b or sqrt(x) is not correctly rounded
    f32_through_f64_exact: bool = False   # f32(f64(a) / f64(b)) and f32(sqrt(f64(x))) are
    flushes_f32_subnormals: bool = True   # f32 arithmetic and comparisons take subnormals as 0
    folds_f16_rounding: bool = True   # f32(f16(x)) becomes x: f16 results are not rounded
    ext_compare_wrong: bool = True    # i64(x) < 7 of a 32-bit x is wrong (false for x = 0), and 7 < i64(x)
    f64_to_f32_exact: bool = False    # f32(x) of an f64 rounds to nearest even, f32 subnormals included



WORST = Quirks()


def worst(f64: bool) -> Quirks:
    """Every workaround, for an adapter that is not probed; f32 division and square root go
    through f64 where the adapter has it."""
    return replace(WORST, f32_through_f64_exact=f64)
_N = 32          # inputs per fact


def _run(state, body: str, inputs: list[np.ndarray], words: int, enable: str = "") -> np.ndarray:
    """Run ``body`` once (one unit) with ``inputs`` bound as read-only arrays ``in0``, ``in1``, ...
    of their dtypes and ``out: array<u32>`` of ``words``; the words it wrote."""
    wgsl = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32"}
    decls = [f"@group(0) @binding({k}) var<storage, read> in{k}: array<{wgsl[x.dtype]}>;" for k, x in enumerate(inputs)]
    decls.append(f"@group(0) @binding({len(inputs)}) var<storage, read_write> out: array<u32>;")
    source = enable + "\n".join(decls) + f"\n@compute @workgroup_size(1)\nfn probe() {{\n{body}\n}}\n"
    return run_once(state, source, inputs, words)


def _triples(dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_N`` triples (a, b, c) whose a * b + c rounded once differs from the unfused one:
    (inputs, fused, unfused)."""
    rng = np.random.default_rng(7)
    picked, fused, unfused = [], [], []
    while len(picked) < _N:
        a, b, c = (dtype(v) for v in rng.standard_normal(3) * (1.0, 3.0, 1.0))
        exact = dtype(float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))))
        plain = dtype(dtype(a * b) + c)
        if exact != plain and np.isfinite(exact):
            picked.append((a, b, c))
            fused.append(exact)
            unfused.append(plain)
    return np.array(picked, dtype).reshape(-1), np.array(fused, dtype), np.array(unfused, dtype)


def _fma(state, f64: bool) -> tuple[bool, bool, bool]:
    """(f32 fma rounds once, f64 fma rounds once (False without ``f64``), f32 a * b + c is contracted)."""
    inputs, fused, unfused = _triples(np.float32)
    got = _run(state, f"for (var k = 0u; k < {_N}u; k++) {{\n"
                      "  let a = in0[3u * k]; let b = in0[3u * k + 1u]; let c = in0[3u * k + 2u];\n"
                      f"  out[k] = bitcast<u32>(fma(a, b, c));\n  out[{_N}u + k] = bitcast<u32>(a * b + c);\n}}",
               [inputs], 2 * _N).view(np.float32)
    fma32, contracts = np.array_equal(got[:_N], fused), not np.array_equal(got[_N:], unfused)
    fma64 = False
    if f64:
        inputs64, fused64, _ = _triples(np.float64)
        got = _run(state, f"for (var k = 0u; k < {_N}u; k++) {{\n"
                          "  let r = bitcast<u64>(fma(in0[3u * k], in0[3u * k + 1u], in0[3u * k + 2u]));\n"
                          "  out[2u * k] = u32(r & 0xfffffffflu);\n  out[2u * k + 1u] = u32(r >> 32u);\n}",
                   [inputs64], 2 * _N)
        fma64 = np.array_equal(got.view(np.float64), fused64)
    return fma32, fma64, contracts


def _folds_inexact(state) -> bool:
    x = np.array([np.inf, 1e8, 1.0], np.float32)
    got = _run(state, "out[0] = bitcast<u32>(in0[0] - in0[0]);\n"
                      "out[1] = bitcast<u32>((in0[1] + in0[2]) - in0[1]);", [x], 2).view(np.float32)
    return not (np.isnan(got[0]) and got[1] == 0.0)


def _srem_wrong(state) -> bool:
    pairs = np.array([-7, 2, 7, -2, -2147483647, 10, -9, -4], np.int32)
    got = _run(state, "for (var k = 0u; k < 4u; k++) { out[k] = bitcast<u32>(in0[2u * k] % in0[2u * k + 1u]); }",
               [pairs], 4).view(np.int32)
    return [int(v) for v in got] != [int(np.fmod(a, b)) for a, b in pairs.reshape(-1, 2)]


def _ext_compare_wrong(state) -> bool:
    """Whether an ordered compare of an extended 32-bit value with an i64 constant goes wrong
    (lavapipe: ``i64(x) < 7li`` false for every x in 0..15, ``i64(x) > 7li`` true, ``7li <
    i64(u)`` true for a u32 ``u`` of 0), sign- or zero-extended, the constant on either side."""
    x = np.array([-9, -1, 0, 3, 6, 7, 8, 100], np.int32)
    got = _run(state, f"for (var k = 0u; k < {len(x)}u; k++) {{\n"
                      "  let s = i64(in0[k]); let z = i64(bitcast<u32>(in0[k]));\n"
                      "  out[k] = select(0u, 1u, s < 7li) | select(0u, 2u, s > -2li)\n"
                      "      | select(0u, 4u, 7li < z) | select(0u, 8u, z >= 127li);\n}",
               [x], len(x))
    z = x.astype(np.int64) % 2**32
    want = [int(s < 7) | 2 * int(s > -2) | 4 * int(7 < u) | 8 * int(u >= 127) for s, u in zip(x, z)]
    return [int(v) for v in got] != want


def _div_sqrt(state, f64: bool) -> tuple[bool, bool]:
    """(f32 / or sqrt is not correctly rounded, both are through f64): NumPy's f32 division and
    square root are IEEE's."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(_N).astype(np.float32) * np.float32(7.0)
    b = rng.standard_normal(_N).astype(np.float32)
    x = np.abs(rng.standard_normal(_N).astype(np.float32)) * np.float32(3.0)
    want = np.concatenate([a / b, np.sqrt(x)])
    def loop(div: str, sqrt: str) -> str:
        return (f"for (var k = 0u; k < {_N}u; k++) {{\n  out[k] = bitcast<u32>({div});\n"
                f"  out[{_N}u + k] = bitcast<u32>({sqrt});\n}}")
    native = _run(state, loop("in0[k] / in1[k]", "sqrt(in2[k])"), [a, b, x], 2 * _N)
    inexact = not np.array_equal(native.view(np.float32), want)
    through = False
    if inexact and f64:
        wide = _run(state, loop("f32(f64(in0[k]) / f64(in1[k]))", "f32(sqrt(f64(in2[k])))"), [a, b, x], 2 * _N)
        through = np.array_equal(wide.view(np.float32), want)
    return inexact, through


def _f64_to_f32_exact(state) -> bool:
    """Whether f32(x) of an f64 rounds to nearest, ties to even, into f32's subnormals too (the
    f32 fma through f64 rounds its sum this way): f32 midpoints and their f64 neighbours from
    among the subnormals (2**-140) to 2**100, and random f64 values from 2**-160 to 2**120."""
    rng = np.random.default_rng(13)
    f32 = rng.standard_normal(_N).astype(np.float32) * np.float32(2.0) ** rng.integers(-140, 100, _N).astype(np.float32)
    up = np.nextafter(f32, np.float32(np.inf))
    mid = (f32.astype(np.float64) + up.astype(np.float64)) / 2
    x = np.concatenate([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf),
                        rng.standard_normal(_N) * 2.0 ** rng.integers(-160, 120, _N)])
    got = _run(state, f"for (var k = 0u; k < {4 * _N}u; k++) {{ out[k] = bitcast<u32>(f32(in0[k])); }}", [x], 4 * _N)
    return np.array_equal(got, x.astype(np.float32).view(np.uint32))


def _flushes_subnormals(state) -> bool:
    tiny = np.array([1e-40, 1.0], np.float32)
    got = _run(state, "out[0] = bitcast<u32>(in0[0] * in0[1]);\nout[1] = u32(in0[0] > 0.0);", [tiny], 2)
    return not (got[0] == tiny.view(np.uint32)[0] and got[1] == 1)


def _folds_f16_rounding(state) -> bool:
    x = np.array([1.0 + 2.0 ** -20], np.float32)
    got = _run(state, "out[0] = bitcast<u32>(f32(f16(in0[0])) - in0[0]);", [x], 1, enable="enable f16;\n")
    return bool(got.view(np.float32)[0] == 0.0)


def probe_quirks(state) -> Quirks:
    """The facts of ``state``'s adapter (a `_DeviceState`), each from a small shader; the worst
    case where the probe cannot run."""
    f64 = {"shader-f64", "shader-int64"} <= state.features
    try:
        fma32, fma64, contracts = _fma(state, f64)
        inexact, through = _div_sqrt(state, f64)
        return Quirks(fma_f32_exact=fma32, fma_f64_exact=fma64, contracts=contracts,
                      folds_inexact=_folds_inexact(state), srem_wrong=_srem_wrong(state),
                      f32_div_sqrt_inexact=inexact, f32_through_f64_exact=through,
                      flushes_f32_subnormals=_flushes_subnormals(state),
                      folds_f16_rounding="shader-f16" in state.features and _folds_f16_rounding(state),
                      ext_compare_wrong="shader-int64" in state.features and _ext_compare_wrong(state),
                      f64_to_f32_exact=f64 and not fma32 and _f64_to_f32_exact(state))
    except Exception:         # an adapter that cannot run the probe: assume the worst of it
        return worst(f64)


__all__ = ["WORST", "Quirks", "probe_quirks", "worst"]
