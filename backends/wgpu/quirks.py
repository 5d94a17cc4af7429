"""What an adapter's shader compiler does where WGSL leaves arithmetic open or a driver gets it
wrong, found once per device by running a probe shader on inputs it cannot see (`probe_quirks`).

The renderer turns each fact into what keeps cubepy's semantics (docs/design.md, "Semantics") on
that adapter. Mesa's lavapipe rounds ``fma`` twice (so cubepy's ``fma`` is computed exactly in
WGSL there) and rewrites float arithmetic as if it were exact (``x - x`` to 0, ``(a + b) - a``
to ``b``: SPIR-V's NoContraction would forbid it, and naga writes none). NVIDIA's Vulkan driver
contracts ``a * b + c`` into one fused operation, flushes f32 subnormals in arithmetic and
comparisons, and gets i32 ``%`` wrong for negative operands (seen on an H200, driver 580.159;
docs/device-runs.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class Quirks:
    """Facts about one adapter's arithmetic; the defaults are what WGSL's specification allows
    least (so an adapter that cannot be probed gets every workaround)."""

    fma_f32_exact: bool = False       # fma() on f32 rounds the exact a * b + c once
    fma_f64_exact: bool = False       # the same on f64
    contracts: bool = True            # a * b + c may become one fused multiply-add
    flushes_f32_subnormals: bool = True   # f32 arithmetic and comparisons treat subnormals as zero
    srem_wrong: bool = True           # i32 % of negative operands is not the truncated remainder
    folds_inexact: bool = True        # x - x becomes 0 and (a + b) - a becomes b, as if exact


WORST = Quirks()


# f32 inputs whose fused and unfused a * b + c differ (picked below, once), subnormals, i32 operands
_SHADER = """@group(0) @binding(0) var<storage, read> f: array<f32>;
@group(0) @binding(1) var<storage, read> i: array<i32>;
@group(0) @binding(2) var<storage, read_write> o: array<u32>;
{f64_decl}
@compute @workgroup_size(1)
fn probe() {{
  for (var k = 0u; k < {n}u; k++) {{
    o[k] = bitcast<u32>(fma(f[3u * k], f[3u * k + 1u], f[3u * k + 2u]));
    o[{n}u + k] = bitcast<u32>(f[3u * k] * f[3u * k + 1u] + f[3u * k + 2u]);
  }}
  let tiny = f[{tiny}u];
  o[{flush}u] = bitcast<u32>(min(tiny, f[{tiny}u + 1u]));
  o[{flush}u + 1u] = bitcast<u32>(tiny * f[{tiny}u + 1u]);
  o[{flush}u + 2u] = u32(tiny > 0.0);
  let inf = f[{tiny}u + 2u];
  o[{flush}u + 3u] = bitcast<u32>(inf - inf);
  o[{flush}u + 4u] = bitcast<u32>((f[{tiny}u + 3u] + f[{tiny}u + 1u]) - f[{tiny}u + 3u]);
  o[{rem}u] = bitcast<u32>(i[0] % i[1]);
  o[{rem}u + 1u] = bitcast<u32>(i[2] % i[3]);
  o[{rem}u + 2u] = bitcast<u32>(i[4] % i[5]);
  {f64_body}
}}"""
_F64_DECL = "@group(0) @binding(3) var<storage, read> d: array<f64>;"
_F64_BODY = ("for (var k = 0u; k < {n}u; k++) {{\n"
             "    let r = bitcast<u64>(fma(d[3u * k], d[3u * k + 1u], d[3u * k + 2u]));\n"
             "    o[{f64}u + 2u * k] = u32(r & 0xfffffffflu);\n    o[{f64}u + 2u * k + 1u] = u32(r >> 32u);\n  }}")
_N = 16
_REM = ((-7, 2), (7, -2), (-2147483647, 10))


def _triples(dtype, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` triples (a, b, c) of ``dtype`` whose fused a * b + c (rounded once) differs from the
    unfused one, with both results: (inputs, fused, unfused)."""
    rng = np.random.default_rng(7)
    picked, fused, unfused = [], [], []
    while len(picked) < n:
        a, b, c = (dtype(v) for v in rng.standard_normal(3) * (1.0, 3.0, 1.0))
        exact = dtype(float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))))
        with np.errstate(all="ignore"):
            plain = dtype(dtype(a * b) + c)
        if exact != plain and np.isfinite(exact):
            picked.append((a, b, c))
            fused.append(exact)
            unfused.append(plain)
    return np.array(picked, dtype).reshape(-1), np.array(fused, dtype), np.array(unfused, dtype)


def probe_quirks(state) -> Quirks:
    """Run the probe shader on ``state``'s device (a `_DeviceState`); the defaults if it fails."""
    wgpu, device = state.wgpu, state.device
    f64 = {"shader-f64", "shader-int64"} <= state.features
    inputs32, fused32, unfused32 = _triples(np.float32, _N)
    tiny = np.array([1e-40, 1.0, np.inf, 1e8], np.float32)
    f = np.concatenate([inputs32, tiny])
    i = np.array([v for pair in _REM for v in pair], np.int32)
    flush, rem, at64 = 2 * _N, 2 * _N + 5, 2 * _N + 5 + len(_REM)
    words = at64 + (2 * _N if f64 else 0)
    source = _SHADER.format(n=_N, tiny=3 * _N, flush=flush, rem=rem,
                            f64_decl=_F64_DECL if f64 else "",
                            f64_body=_F64_BODY.format(n=_N, f64=at64) if f64 else "")
    buffers = [f, i]
    if f64:
        inputs64, fused64, _ = _triples(np.float64, _N)
        buffers.append(inputs64)
    try:
        usage = wgpu.BufferUsage
        data = [device.create_buffer_with_data(data=b.tobytes(), usage=usage.STORAGE) for b in buffers]
        out = device.create_buffer(size=4 * words, usage=usage.STORAGE | usage.COPY_SRC)
        pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": device.create_shader_module(code=source), "entry_point": "probe"})
        resources = [data[0], data[1], out] + data[2:]
        group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
            {"binding": k, "resource": {"buffer": b}} for k, b in enumerate(resources)])
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(1)
        compute.end()
        device.queue.submit([encoder.finish()])
        got = np.frombuffer(device.queue.read_buffer(out), np.uint32)
    except Exception:         # an adapter that cannot run the probe: assume the worst of it
        return WORST
    fma32 = got[:_N].view(np.float32)
    plain32 = got[_N:2 * _N].view(np.float32)
    remainders = got[rem:rem + len(_REM)].view(np.int32)
    truncated = [int(np.fmod(a, b)) for a, b in _REM]
    return Quirks(
        fma_f32_exact=bool(np.array_equal(fma32, fused32)),
        fma_f64_exact=f64 and bool(np.array_equal(got[at64:at64 + 2 * _N].view(np.float64), fused64)),
        contracts=not np.array_equal(plain32, unfused32),
        flushes_f32_subnormals=not (got[flush] == tiny.view(np.uint32)[0] and got[flush + 1] == tiny.view(np.uint32)[0]
                                    and got[flush + 2] == 1),
        srem_wrong=list(remainders) != truncated,
        folds_inexact=not (np.isnan(got[flush + 3:flush + 4].view(np.float32)[0]) and got[flush + 4] == 0))


__all__ = ["WORST", "Quirks", "probe_quirks"]
