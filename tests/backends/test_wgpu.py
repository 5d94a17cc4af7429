"""The WebGPU backend: what it refuses and how it says so, what it reports of the adapter, its
events and its residency. Skipped where wgpu-py or a WebGPU adapter is missing."""

from __future__ import annotations

import dataclasses
import re
import warnings

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i32, u64
from tests.conformance.test_semantics import check_fma_edges

pytest.importorskip("wgpu")


@pytest.fixture(scope="module")
def dev() -> cb.Device:
    try:
        return cb.device("wgpu")
    except cb.BackendUnavailableError as e:
        pytest.skip(f"no WebGPU device: {e}")


@cb.kernel
def to_bf16_and_back(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = f32(cb.bf16(x[i]))


@cb.kernel
def halve(x: Array[f64], y: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i] * 0.5


@cb.kernel
def count_into_u64(hist: Mut[Array[u64]], x: Array[i32]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        cb.atomic_add(hist, x[i], u64(1))


@cb.kernel
def scale(x: Array, y: Mut[Array], k: i32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i] * k


@cb.kernel
def spin(x: Mut[Array[f32]], n: i32):
    i = cb.ABSOLUTE_POS
    acc = x[i]
    for _ in range(n):
        acc = acc * 0.999 + 1.0
    x[i] = acc


@cb.kernel
def plane_sums(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    y[i] = cb.plane_sum(x[i])


def test_bf16_is_refused_naming_the_kernel_the_type_and_the_fix(dev):
    x = np.ones(8, np.float32)
    with pytest.raises(cb.CubeTypeError) as e:
        to_bf16_and_back.launch(1, 8, x, np.zeros(8, np.float32), device=dev)
    message = str(e.value)
    assert "to_bf16_and_back" in message and "bf16" in message and "WGSL" in message and "use f16 or f32" in message


def test_a_type_the_adapter_lacks_is_refused_naming_the_array_and_the_feature(dev):
    from cubepy.backends.wgpu.checks import check_types

    x = np.ones(8)
    ir = halve.compile(x, np.zeros(8), dim=8, device="interp").ir_module
    without = dataclasses.replace(dev.properties, features=dev.properties.features - {"fp64"})
    with pytest.raises(cb.CubeTypeError) as e:
        check_types(ir, without)
    message = str(e.value)
    assert "halve" in message and "array 'x'" in message and "f64" in message and "shader-f64" in message
    assert "use f32" in message


def test_64_bit_atomics_are_refused_without_the_adapter_feature(dev):
    from cubepy.backends.wgpu.wgsl import render

    ir = count_into_u64.compile(np.zeros(4, np.uint64), np.zeros(8, np.int32), dim=8, device="interp").ir_module
    with pytest.raises(cb.CubeTypeError, match="not on u64 \\(array 'hist'\\)"):
        render(ir, atomics64=False)
    if dev.properties.supports("atomics64"):
        hist = np.zeros(4, np.uint64)
        count_into_u64.launch(1, 64, hist, np.arange(40, dtype=np.int32) % 4, device=dev)
        np.testing.assert_array_equal(hist, 10)


def test_properties_come_from_the_adapter(dev):
    from cubepy.backends.wgpu.subgroups import subgroup_size

    state = dev.backend._state(dev.properties)
    limits, features = state.adapter.limits, state.adapter.features
    props = dev.properties
    assert props.max_units_per_cube == limits["max-compute-invocations-per-workgroup"]
    assert props.max_cube_dim == tuple(limits[f"max-compute-workgroup-size-{a}"] for a in "xyz")
    assert props.max_cube_count[0] == limits["max-compute-workgroups-per-dimension"]
    assert props.shared_memory_per_cube == limits["max-compute-workgroup-storage-size"]
    assert props.supports("fp16") == ("shader-f16" in features)
    assert props.supports("fp64") == ("shader-f64" in features)
    native = subgroup_size(state) if "subgroup" in features else None
    assert props.plane_dim == (native or 1) == props.plane_size_min == props.plane_size_max
    with pytest.raises(cb.ArgumentValueError, match="subgroup size"):
        cb.device("wgpu", plane_dim=3)


def test_plane_size_one_makes_every_unit_its_own_plane():
    one = cb.device("wgpu", plane_dim=1)
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    plane_sums.launch(1, 16, x, y, device=one)
    np.testing.assert_array_equal(y, x)


def test_events_time_work_on_the_device(dev):
    x = cb.preload_mut(np.zeros(4096, np.float32), device=dev)
    spin[16, 256](x, 1, device=dev)
    times = []
    for n in (1, 20000):
        start, stop = dev.event(), dev.event()
        start.record()
        spin[16, 256](x, n, device=dev)
        stop.record()
        times.append(stop.elapsed_ms(start))
    assert 0 <= times[0] < times[1]
    if dev.properties.supports("timestamps"):
        assert type(start).__name__ == "TimestampEvent"


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "int32", "float32"])
def test_preloaded_arrays_stay_on_the_device_and_come_back_exact(dev, dtype):
    rng = np.random.default_rng(5)
    x = (rng.integers(0, 2, 100) if dtype == "bool" else rng.integers(-100, 100, 100)).astype(dtype)
    if dtype == "uint8":
        x = rng.integers(0, 256, 100).astype(dtype)
    x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(np.zeros_like(x), device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cb.TransferWarning)     # nothing travels per launch
        for _ in range(4):
            scale[2, 64](x_dev, y_dev, 3, device=dev)
    with np.errstate(over="ignore"):
        want = (x.astype(np.int64) * 3).astype(dtype) if dtype != "bool" else x
    np.testing.assert_array_equal(y_dev.to_host(), want)
    np.testing.assert_array_equal(x_dev.to_host(), x)
    out = np.empty_like(x)
    assert y_dev.to_host(out=out) is out
    np.testing.assert_array_equal(out, want)


def test_host_arrays_passed_launch_after_launch_are_noted_as_uploads(dev):
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    with pytest.warns(cb.TransferWarning, match="preload"):
        for _ in range(4):
            scale[1, 64](x, y, 2, device=dev)
    np.testing.assert_array_equal(y, 2)


def test_the_source_is_wgsl(dev):
    compiled = scale.compile(np.ones(4, np.float32), np.ones(4, np.float32), 2, dim=64, device=dev)
    source = compiled.source("source")
    assert "@compute @workgroup_size(64, 1, 1)" in source and "var<storage, read_write> y" in source


@cb.kernel
def nan_and_constants(x: Array[f32], unequal: Mut[Array[cb.bool_]], truth: Mut[Array[cb.bool_]],
                      scaled: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        unequal[i] = x[i] != 1.0
        truth[i] = cb.bool_(x[i])
        scaled[i] = (x[i] * x[i]) * f32(0.001)


def test_what_lavapipe_would_fold_keeps_ieee_rules(dev):
    # naga writes no NoContraction, so Mesa treats float ops as inexact: nan != 1.0 came out false
    # and (x * x) * 0.001 was reassociated; fuzz seeds 6005 and 6025
    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    x[::7] = np.nan
    outs = [np.zeros(1000, bool), np.zeros(1000, bool), np.zeros(1000, np.float32)]
    nan_and_constants.launch(8, 128, x, *outs, device=dev)
    np.testing.assert_array_equal(outs[0], x != 1.0)
    np.testing.assert_array_equal(outs[1], x != 0)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(outs[2], (x * x) * np.float32(0.001))


@cb.func
def folded_zero():
    return ((cb.i16(0) * cb.i16(-100)) or cb.i16(7)) - cb.abs(cb.i16(7))      # 0 by an integer `or` Mesa folds


@cb.kernel
def over_folded_zeros(x: Array[f64], out: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        zero = f64(folded_zero())
        out[4 * i] = f64(0.001) / zero
        out[4 * i + 1] = -x[i] / zero
        out[4 * i + 2] = zero / zero
        out[4 * i + 3] = zero * -x[i]


def test_a_float_from_an_integer_the_compiler_folds_keeps_ieee_rules(dev, rng):
    # fuzz seed 812060299: lavapipe dropped the store of 0.001 / 0.0 where the zero came from a
    # folded integer, and made 0.0 / 0.0 zero
    x = np.abs(rng.standard_normal(64)) + 0.5
    out = np.full(4 * 64, 12345.0)
    over_folded_zeros.launch(1, 64, x, out, device=dev)
    dev.synchronize()
    got = out.reshape(64, 4)
    np.testing.assert_array_equal(got[:, 0], np.inf)
    np.testing.assert_array_equal(got[:, 1], -np.inf)
    assert np.isnan(got[:, 2]).all()
    np.testing.assert_array_equal(np.signbit(got[:, 3]), True)           # -0.0: the sign kept


def test_a_divisor_is_hidden_with_a_zero_of_its_own(dev):
    """NVIDIA's Vulkan driver gave 1 for ``zero / zero`` (above) with the divisor hidden by the
    zero that had hidden ``zero`` itself, as an integer converted to float: ``x | z | z`` is
    ``x | z``, one value over itself again. The divisor's zero is a second word of the arguments."""
    forced = cb.device("wgpu", workarounds="all")
    x, out = np.ones(8), np.zeros(32)
    source = over_folded_zeros.compile(x, out, dim=64, device=forced).source("source")
    converted = re.search(r"let (v\d+): f64 = bitcast<f64>\(bitcast<u64>\(f64\(i64\(v\d+\)\)\) \| cb_zero_u64\);",
                          source)
    assert converted, source                                  # the folded zero, hidden with the first zero
    assert re.search(r"\(v\d+ / bitcast<f64>\(bitcast<u64>\(v\d+\) \| cb_divisor_zero_u64\)\)", source), source
    assert not re.search(r"/ bitcast<f64>\(bitcast<u64>\(v\d+\) \| cb_zero_u64\)", source), source
    assert "cb_divisor_zero_u64 = u64(cb_args." in source


@cb.kernel
def mixed_arithmetic(x: Array[f32], y: Array[f32], z: Array[f32], a: Array[i32], b: Array[i32], s: Array[f32],
                     f: Mut[Array[f32]], q: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        f[5 * i] = x[i] * y[i] + z[i]              # a driver may fuse this: it must not
        f[5 * i + 1] = cb.fma(x[i], y[i], z[i])    # rounded once, wherever the adapter's fma is not
        f[5 * i + 2] = z[i] - x[i] * y[i]
        f[5 * i + 3] = x[i] / y[i] + cb.sqrt(cb.abs(z[i]))     # correctly rounded, wherever they are not
        f[5 * i + 4] = cb.min(s[i], s[i ^ 1])      # subnormals and signed zeros ordered, even if flushed
        q[2 * i] = a[i] % b[i]
        q[2 * i + 1] = a[i] // b[i]


@cb.kernel
def half_axpy(x: Array[cb.f16], y: Array[cb.f16], o: Mut[Array[cb.f16]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = x[i] * 3 + y[i]                     # the product rounded to f16 before the add


def _mixed_inputs(rng, n):
    x, y, z = (rng.standard_normal(n).astype(np.float32) * s for s in (1.0, 3.0, 1.0))
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    a[: n // 2] = rng.integers(-1000, 1000, n // 2)
    b = rng.integers(-50, 50, n).astype(np.int32)
    b[:4] = (0, -1, 1, -7)
    a[:4] = (-2**31, -2**31, -5, -2**31)
    s = x.copy()
    s[:12] = (1e-40, 2e-40, -1e-40, -2e-40, 0.0, -0.0, -0.0, 0.0, 3e-39, -3e-39, -1e-45, 1e-45)
    return x, y, z, a, b, s


@pytest.mark.parametrize("workarounds", ["probed", "all"])
def test_arithmetic_workarounds_keep_the_meaning_of_every_device(dev, workarounds, rng):
    """Whatever the adapter's compiler does to a * b + c, fma and signed %, the probed
    workarounds, and all of them forced, give the interpreter's answers bit for bit."""
    target = cb.device("wgpu", workarounds=workarounds)
    n = 4096
    x, y, z, a, b, s = _mixed_inputs(rng, n)
    outs = {}
    for d in (target, cb.device("interp")):
        f, q = np.full(5 * n, np.nan, np.float32), np.full(2 * n, -12345, np.int32)
        mixed_arithmetic[(n + 127) // 128, 128](x, y, z, a, b, s, f, q, device=d)
        outs[d.backend_name] = f, q
    for got, want in zip(outs["wgpu"], outs["interp"]):
        np.testing.assert_array_equal(got, want)
    if target.properties.supports("fp16"):
        h, k = (rng.random(n) * 10).astype(np.float16), (rng.random(n) * 10).astype(np.float16)
        halves = []
        for d in (target, cb.device("interp")):
            o = np.full(n, np.nan, np.float16)
            half_axpy[(n + 127) // 128, 128](h, k, o, device=d)
            halves.append(o)
        np.testing.assert_array_equal(halves[0], halves[1])
        np.testing.assert_array_equal(halves[0], h * np.float16(3) + k)
    exact = (x.astype(np.float64) * y + z).astype(np.float32)      # fused, but for rare double roundings
    unfused = (x * y) + z
    assert np.count_nonzero(exact != unfused) > n // 10            # inputs where fusing shows
    np.testing.assert_array_equal(outs["wgpu"][0][0::5], unfused)
    np.testing.assert_array_equal(outs["wgpu"][0][3::5], x / y + np.sqrt(np.abs(z)))


@cb.func
def folded_seven():
    return cb.min(cb.u32(7) or (cb.u32(7) >> cb.u32(7)), cb.u32(7))     # 7, which the driver folds


@cb.kernel
def wide_orders(a: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        x, t = cb.i64(a[i]), cb.i64(cb.UNIT_POS_X)
        seven = cb.i64(folded_seven())
        out[6 * i] = i32(x < seven) + 2 * i32(x >= seven) + 4 * i32(seven > x) + 8 * i32(seven <= x)
        out[6 * i + 1] = i32(x < 7) + 2 * i32(x > -2) + 4 * i32(x <= 2**40) + 8 * i32(-3 >= x)
        out[6 * i + 2] = i32(t < seven) + 2 * i32(t > seven) + 4 * i32(t <= 3)
        out[6 * i + 3] = i32(cb.select(t < seven, f64(7), f64(1)) < 2.0)
        out[6 * i + 4] = i32(cb.min(x, seven)) + i32(cb.max(x, cb.i64(-2)))
        out[6 * i + 5] = i32(x == seven) + 2 * i32(x != cb.i64(-1))


def _int64_as_interpreted(launcher, a: np.ndarray, poisoned: np.ndarray, workarounds: str) -> np.ndarray:
    """``launcher(a, out)`` on WebGPU (with ``workarounds``) and on the interpreter, each into a
    copy of ``poisoned``: WebGPU's output, once it equals the interpreter's."""
    target = cb.device("wgpu", workarounds=workarounds)
    if not target.properties.supports("int64"):
        pytest.skip("the adapter has no 64-bit integers")
    outs = []
    for d in (target, cb.device("interp")):
        out = poisoned.copy()
        launcher(a, out, device=d)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    return outs[0]


@pytest.mark.parametrize("workarounds", ["probed", "all"])
def test_a_widened_i32_orders_against_i64_constants_as_everywhere(dev, workarounds, rng):
    """lavapipe ordered ``i64(x) < 7`` wrongly for a sign-extended i32 ``x``, the 7 a literal or a
    constant it folded itself (fuzz seed 562420114): both give the interpreter's answers."""
    a = rng.integers(-12, 12, 256).astype(np.int32)
    a[:6] = (-2**31, 2**31 - 1, 7, 6, -2, -3)
    got = _int64_as_interpreted(wide_orders[4, 64], a, np.full(6 * 256, -12345, np.int32), workarounds)
    x = a.astype(np.int64)
    np.testing.assert_array_equal(got[0::6], (x < 7) + 2 * (x >= 7) + 4 * (x < 7) + 8 * (x >= 7))


@cb.kernel
def wide_remainders(a: Array[i32], out: Mut[Array[cb.i64]]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        x = cb.i64(a[i])
        d = cb.i64(cb.select(cb.i64(3) < cb.i64(127), cb.u8(127), cb.u8(3)))    # 127, folded, zero-extended
        u = cb.i64(cb.u32(cb.UNIT_POS_X))
        out[4 * i] = x % d
        out[4 * i + 1] = x // d
        out[4 * i + 2] = cb.i64(d < u) + 2 * cb.i64(u >= d) + 4 * cb.i64(d > x)
        out[4 * i + 3] = cb.i64(-2) % d


@pytest.mark.parametrize("workarounds", ["probed", "all"])
def test_i64_remainders_by_a_folded_widened_constant_as_everywhere(dev, workarounds, rng):
    """lavapipe ordered a zero-extended value against an i64 constant wrongly too: the floor
    remainder's own ``b < 0`` went wrong once ``b`` was a constant it folded (fuzz seed 652800114)."""
    a = rng.integers(-1000, 1000, 256).astype(np.int32)
    a[:4] = (-2**31, 2**31 - 1, -127, -1)
    got = _int64_as_interpreted(wide_remainders[2, 128], a, np.full(4 * 256, -12345, np.int64), workarounds)
    np.testing.assert_array_equal(got[0::4], a.astype(np.int64) % 127)
    np.testing.assert_array_equal(got[3::4], np.full(256, 125))


def test_forced_workarounds_are_rendered_and_named(dev):
    forced = cb.device("wgpu", workarounds="all")
    assert "(all workarounds)" in forced.properties.name
    from cubepy.backends.wgpu.quirks import worst

    assert forced.backend.quirks(forced.properties) == worst(forced.properties.supports("fp64"))
    x, y, z, a, b, s = _mixed_inputs(np.random.default_rng(0), 16)
    f, q = np.zeros(80, np.float32), np.zeros(32, np.int32)
    source = mixed_arithmetic.compile(x, y, z, a, b, s, f, q, dim=64, device=forced).source("source")
    assert "(a - (a / b) * b)" in source and "fn cb_fma_f32" in source
    assert re.search(r"bitcast<u32>\(\([\w.\[\]]+ \* [\w.\[\]]+\)\) \| cb_zero_u32\)", source)    # a hidden product
    with pytest.raises(cb.ArgumentValueError, match="workarounds must be 'probed' or 'all', got 'some'"):
        cb.device("wgpu", workarounds="some")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_fma_emulation_rounds_once_at_the_ends_of_the_range(dev, dtype, rng):
    """With every workaround the fma is the emulation (on lavapipe f32 otherwise goes through
    f64): the conformance suite's edges, subnormal results and the overflow threshold included,
    bit for bit against the exact rational rounded once."""
    forced = cb.device("wgpu", workarounds="all")
    if dtype == "float64" and not forced.properties.supports("fp64"):
        pytest.skip("the adapter has no f64")
    check_fma_edges(forced, rng, dtype)
