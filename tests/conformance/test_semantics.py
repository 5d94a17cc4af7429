"""The rules docs/design.md ("Semantics") chooses, on every device, bit for bit against NumPy models
written here: float min/max with NaN and signed zeros, float to integer conversion, shifts by any
count, integer powers, and the same rules for constants folded while tracing."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from tests.conftest import poisoned, require_dtype

SPECIAL_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-45, 3e38, -3e38]


def _floats(rng, dtype, n):
    """Random floats with every special value, each against every other one somewhere."""
    special = np.array(SPECIAL_FLOATS, dtype)
    a = (rng.standard_normal(n) * 4).astype(dtype)
    b = (rng.standard_normal(n) * 4).astype(dtype)
    k = len(special)
    a[:k * k] = np.repeat(special, k)
    b[:k * k] = np.tile(special, k)
    b[k * k:k * k + 20] = a[k * k:k * k + 20]          # equal operands
    return a, b


def _ieee_min(a, b):
    """IEEE 754-2019 minimum: NaN if either is NaN, else the smaller, -0.0 below +0.0."""
    with np.errstate(invalid="ignore"):
        smaller = np.where(a < b, a, b)
        both_zero = (a == 0) & (b == 0)
        r = np.where(both_zero, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0).astype(a.dtype), smaller)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, r).astype(a.dtype)


def _ieee_max(a, b):
    with np.errstate(invalid="ignore"):
        larger = np.where(a > b, a, b)
        both_zero = (a == 0) & (b == 0)
        r = np.where(both_zero, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0).astype(a.dtype), larger)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, r).astype(a.dtype)


def _same_floats(got, want):
    """Equal values, equal signs of zero, NaN where NaN (any NaN payload)."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@cb.kernel
def min_max_clamp(a: Array, b: Array, mn: Mut[Array], mx: Mut[Array], cl: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        mn[i] = cb.min(a[i], b[i])
        mx[i] = cb.max(a[i], b[i])
        cl[i] = cb.clamp(a[i], -1.0, 1.0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_min_and_max_propagate_nan_and_order_negative_zero_below_positive_zero(dev, rng, dtype):
    require_dtype(dev, dtype)
    a, b = _floats(rng, dtype, 400)
    mn, mx, cl = (poisoned(400, dtype) for _ in range(3))
    min_max_clamp.launch(4, 128, a, b, mn, mx, cl, device=dev)
    _same_floats(mn, _ieee_min(a, b))
    _same_floats(mx, _ieee_max(a, b))
    one = np.ones_like(a)
    _same_floats(cl, _ieee_min(_ieee_max(a, -one), one))


INT_TYPES = [i8, i16, i32, i64, u8, u16, u32, u64]


def _saturate(x: np.ndarray, dtype) -> np.ndarray:
    """Toward zero, clamped to the type's range, NaN -> 0 (computed on Python ints)."""
    info = np.iinfo(dtype.numpy_name)
    out = []
    for v in x.astype(np.float64):
        out.append(0 if np.isnan(v) else info.max if v >= info.max else info.min if v <= info.min else int(v))
    return np.array(out, dtype.numpy_name)


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dst", INT_TYPES, ids=str)
def test_float_to_integer_conversion_truncates_saturates_and_maps_nan_to_zero(dev, rng, src, dst):
    require_dtype(dev, src)

    @cb.kernel
    def convert(x: Array, out: Mut[Array]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            out[i] = dst(x[i])
    info = np.iinfo(dst.numpy_name)
    edges = [info.min, info.max, info.min - 1.0, info.max + 1.0, -0.9, 0.9, 3e9, -3e9, 1e19, -1e19, 2e19]
    with np.errstate(over="ignore"):
        x = np.concatenate([np.array(SPECIAL_FLOATS + edges, np.float64).astype(src),
                            (rng.standard_normal(200) * 10.0 ** rng.integers(0, 12, 200)).astype(src)])
    out = poisoned(len(x), dst.numpy_name)
    convert.launch(2, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, _saturate(x, dst))


@cb.kernel
def quotients_by_signed_zero(x: Array[u8], o: Mut[Array[i8]], f: Mut[Array[i8]], q: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o[i] = i8(f64(x[i]) / -0.0)                     # -inf, NaN for 0: -128 and 0
        f[i] = i8(f64(x[i]) // -0.0)                    # floor division by zero divides
        q[i] = i32(f32(x[i]) / (f32(x[0]) * -0.0) < -128.0)    # a -0.0 made at run time


def test_a_quotient_by_negative_zero_is_negative_and_saturates_on_conversion(dev, rng):
    # NVVM held a u8 over -0.0 non-negative and dropped the `<= -128` test of the conversion
    # (fuzz seed 21101614; tests/gpu/test_cuda_source_semantics.py has the PTX)
    require_dtype(dev, "float64")
    x = rng.integers(0, 256, 300).astype(np.uint8)
    x[:3] = (5, 0, 255)
    o, f, q = poisoned(300, np.int8), poisoned(300, np.int8), poisoned(300, np.int32)
    quotients_by_signed_zero.launch(3, 128, x, o, f, q, device=dev)
    want = np.where(x == 0, 0, -128).astype(np.int8)
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(f, want)
    np.testing.assert_array_equal(q, (x != 0).astype(np.int32))


def _shift_model(x: np.ndarray, n: np.ndarray, left: bool) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    out = []
    for a, c in zip(x.tolist(), n.tolist()):
        if 0 <= c < bits:
            r = a << c if left else a >> c
        else:
            r = 0 if left or a >= 0 else -1
        out.append(r % 2**bits)
    return np.array(out, np.uint64).astype(x.dtype)


@pytest.mark.parametrize("dtype", INT_TYPES, ids=str)
def test_a_shift_by_the_bit_width_or_more_or_by_a_negative_count_shifts_every_bit_out(dev, rng, dtype):
    @cb.kernel
    def shifts(x: Array, n: Array, left: Mut[Array], right: Mut[Array]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            left[i] = x[i] << n[i]
            right[i] = x[i] >> n[i]
    info = np.iinfo(dtype.numpy_name)
    bits = dtype.bits
    x = rng.integers(info.min, info.max, 300, endpoint=True, dtype=dtype.numpy_name)
    low = -3 if dtype.is_signed else 0
    n = rng.integers(low, bits + 4, 300).astype(dtype.numpy_name)
    n[:bits + 4 - low] = np.arange(low, bits + 4)                  # every count once
    left, right = poisoned(300, dtype.numpy_name), poisoned(300, dtype.numpy_name)
    shifts.launch(3, 128, x, n, left, right, device=dev)
    np.testing.assert_array_equal(left, _shift_model(x, n, True))
    np.testing.assert_array_equal(right, _shift_model(x, n, False))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_the_absolute_value_of_the_most_negative_integer_wraps_to_itself_also_before_a_remainder(dev, rng, dtype):
    """abs(MIN) is MIN, and `abs(x) % n` then takes Python's remainder of MIN (the fuzzer, seed
    12001900: ptxas computed the remainder as if NVVM's abs.s32 could not be negative)."""
    @cb.kernel
    def abs_mod(x: Array, n: Array, a: Mut[Array], r: Mut[Array]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            a[i] = cb.abs(x[i])
            r[i] = cb.abs(x[i]) % n[i]
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 256, endpoint=True, dtype=dtype)
    x[:64] = info.min
    x[64:72] = [info.max, -1, 0, 1, info.min + 1, -7, 7, info.min]
    n = rng.integers(1, 1000, 256).astype(dtype)
    n[:8] = [117, 1, 2, 3, 7, 1000, 65536, 2**30]
    a, r = poisoned(256, dtype), poisoned(256, dtype)
    abs_mod.launch(2, 128, x, n, a, r, device=dev)
    wrapped = [info.min if v == info.min else abs(v) for v in x.tolist()]
    np.testing.assert_array_equal(a, np.array(wrapped, dtype))
    np.testing.assert_array_equal(r, np.array([w % k for w, k in zip(wrapped, n.tolist())], dtype))


@cb.kernel
def powers(x: Array[i32], n: Array[i32], p9: Mut[Array[i32]], p2: Mut[Array[i32]], pn: Mut[Array[i32]],
           pf: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        p9[i] = x[i] ** 9
        p2[i] = x[i] ** 2
        pn[i] = x[i] ** n[i]
        pf[i] = x[i] ** 0.5


def test_an_integer_to_an_integer_power_stays_an_exact_wrapped_integer(dev, rng):
    x = rng.integers(-50, 50, 200).astype(np.int32)
    x[:4] = [7, -1, 1, 0]
    n = rng.integers(-3, 40, 200).astype(np.int32)
    outs = [poisoned(200, np.int32) for _ in range(3)] + [poisoned(200, np.float32)]
    powers.launch(2, 128, x, n, *outs, device=dev)

    def model(a, k):
        if k < 0:    # the truncated 1 / a**-k
            return 1 if a == 1 else ((-1 if k % 2 else 1) if a == -1 else 0)
        return (a ** k + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(outs[0], [model(a, 9) for a in x.tolist()])
    assert outs[0][0] == 40353607                                   # 7 ** 9, as Python says
    np.testing.assert_array_equal(outs[1], x * x)
    np.testing.assert_array_equal(outs[2], [model(a, k) for a, k in zip(x.tolist(), n.tolist())])
    np.testing.assert_allclose(outs[3], np.power(x.astype(np.float32), np.float32(0.5)), rtol=2e-6)


def test_an_integer_to_a_negative_literal_power_is_refused_as_python_would_give_a_float():
    @cb.kernel
    def inverse(x: Array[i32], out: Mut[Array[i32]]):
        out[cb.ABSOLUTE_POS] = x[cb.ABSOLUTE_POS] ** -2
    with pytest.raises(cb.CubeValueError, match=r"negative power -2 .* f32\(x\) \*\* -2"):
        inverse.launch(1, 4, np.ones(4, np.int32), np.zeros(4, np.int32), device="interp")


@cb.kernel
def float_powers(x: Array, y: Array, out: Mut[Array], absolute: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] ** y[i]
        absolute[i] = cb.abs(cb.sqrt(x[i]))       # sqrt(-0.0) is -0.0, its abs +0.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_pow_special_cases_are_c99s(dev, dtype):
    """C99's pow at NaN, infinities, zeros and +-1 on every device, and abs(sqrt(-0.0)) = +0.0
    (fuzz seed 626000026: lavapipe's pow gave 0 for a NaN x, NaN for pow(-1, inf) and for
    pow(-inf, 0.5); it kept the sign of abs(sqrt(-0.0)))."""
    require_dtype(dev, dtype)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    finite = [1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0]
    pairs = ([(a, b) for a in special + finite[:2] for b in special + finite]
             + [(a, b) for a in finite[2:] for b in special])         # a finite pow(x, y) may be an ulp off
    x, y = (np.array(v, dtype) for v in zip(*pairs))
    out, absolute = poisoned(len(x), dtype), poisoned(len(x), dtype)
    float_powers.launch(2, 128, x, y, out, absolute, device=dev)
    with np.errstate(all="ignore"):
        want, want_abs = np.power(x, y), np.abs(np.sqrt(x))
    same = (out == want) & (np.signbit(out) == np.signbit(want)) | np.isnan(out) & np.isnan(want)
    assert same.all(), [(x[k], y[k], out[k], want[k]) for k in np.nonzero(~same)[0][:8]]
    same = (absolute == want_abs) & ~np.signbit(absolute) | np.isnan(absolute) & np.isnan(want_abs)
    assert same.all(), [(x[k], absolute[k]) for k in np.nonzero(~same)[0][:8]]


@cb.kernel
def atomic_extremes(v: Array[f32], lo: Mut[Array[f32]], hi: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(v):
        cb.atomic_min(lo, i % 3, v[i])
        cb.atomic_max(hi, i % 3, v[i])


@pytest.mark.parametrize("case", ["nan", "zeros", "random"])
def test_float_atomic_min_and_max_follow_the_min_max_rule(dev, rng, case):
    v = rng.standard_normal(96).astype(np.float32)
    if case == "nan":
        v[rng.integers(96)] = np.nan
    elif case == "zeros":
        v = np.where(rng.random(96) < 0.5, np.float32(0.0), np.float32(-0.0))
    lo, hi = np.full(3, np.inf, np.float32), np.full(3, -np.inf, np.float32)
    if case == "zeros":
        lo[:], hi[:] = 0.0, -0.0
    want_lo, want_hi = lo.copy(), hi.copy()
    for i, x in enumerate(v):
        want_lo[i % 3] = _ieee_min(want_lo[i % 3:i % 3 + 1], np.array([x]))[0]
        want_hi[i % 3] = _ieee_max(want_hi[i % 3:i % 3 + 1], np.array([x]))[0]
    atomic_extremes.launch(3, 32, v, lo, hi, device=dev)
    _same_floats(lo, want_lo)
    _same_floats(hi, want_hi)


@cb.kernel
def plane_extremes(v: Array[f32], lo: Mut[Array[f32]], hi: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    lo[i] = cb.plane_min(v[i])
    hi[i] = cb.plane_max(v[i])


def test_plane_min_and_max_follow_the_min_max_rule(dev, rng):
    p = dev.properties.plane_dim
    v = np.where(rng.random(128) < 0.5, np.float32(0.0), np.float32(-0.0))
    v[rng.integers(128)] = np.nan
    lo, hi = poisoned(128, np.float32), poisoned(128, np.float32)
    plane_extremes.launch(2, 64, v, lo, hi, device=dev)
    want_lo, want_hi = np.empty_like(v), np.empty_like(v)
    for start in range(0, 128, p):
        part = v[start:start + p]
        a, b = part[:1], part[:1]
        for x in part[1:]:
            a, b = _ieee_min(a, np.array([x])), _ieee_max(b, np.array([x]))
        want_lo[start:start + p], want_hi[start:start + p] = a[0], b[0]
    _same_floats(lo, want_lo)
    _same_floats(hi, want_hi)


# --- constants fold to what the same operation gives at run time ---------------------------

@cb.kernel
def folded(out64: Mut[Array[f64]], out32: Mut[Array[i32]]):
    out64[0] = f64(f32(0.1))
    out32[0] = i32(f32(16777217))
    out32[1] = i32(3e9)
    out32[2] = i32(float("nan"))
    out32[3] = i32(-3e9)
    out32[4] = 3 % (3 % 3)
    out32[5] = 7 // 0
    out32[6] = i32(1 << 40)
    out32[7] = (1 << 40) >> 38
    out64[1] = f64(f32(1e300))
    out64[2] = 1.0 / 0.0
    out64[3] = cb.min(-0.0, 0.0)
    out64[4] = cb.max(float("nan"), 0.0)


@cb.kernel
def at_run_time(v64: Array[f64], v32: Array[i32], out64: Mut[Array[f64]], out32: Mut[Array[i32]]):
    out64[0] = f64(f32(v64[0]))
    out32[0] = i32(f32(v32[0]))
    out32[1] = i32(v64[1])
    out32[2] = i32(v64[2])
    out32[3] = i32(v64[3])
    out32[4] = v32[4] % (v32[4] % v32[4])
    out32[5] = v32[5] // v32[6]
    out32[6] = i32(i64(1) << i64(v32[7]))
    out32[7] = 0
    out64[1] = f64(f32(v64[4]))
    out64[2] = v64[5] / v64[6]
    out64[3] = cb.min(-v64[6], v64[6])
    out64[4] = cb.max(v64[2], v64[6])


def test_constant_casts_and_operations_fold_to_what_they_give_at_run_time(dev):
    require_dtype(dev, "float64")
    c64, c32 = poisoned(8, np.float64), poisoned(8, np.int32)
    folded.launch(1, 1, c64, c32, device=dev)
    r64, r32 = poisoned(8, np.float64), poisoned(8, np.int32)
    v64 = np.array([0.1, 3e9, np.nan, -3e9, 1e300, 1.0, 0.0, 0.0])
    v32 = np.array([16777217, 0, 0, 0, 3, 7, 0, 40], np.int32)
    at_run_time.launch(1, 1, v64, v32, r64, r32, device=dev)
    assert c64[0] == np.float64(np.float32(0.1)) == 0.10000000149011612
    assert c32[0] == 16777216 and c32[1] == 2**31 - 1 and c32[2] == 0 and c32[3] == -(2**31)
    assert c32[4] == 0 and c32[5] == 0 and c32[6] == 0 and c32[7] == 4
    np.testing.assert_array_equal(c32[:7], r32[:7])
    _same_floats(c64[:5], r64[:5])
    assert np.isinf(c64[1]) and c64[2] == np.inf and np.signbit(c64[3]) and np.isnan(c64[4])


@cb.kernel
def typed_topology(x: Array[u8], out: Mut[Array[i32]], lane: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = (cb.UNIT_POS_Y - 1) * x[i] + 7 // cb.UNIT_POS_Z + (cb.CUBE_DIM_Z - 2) * x[i]
        lane[i] = (cb.UNIT_POS_PLANE << -1) + (cb.UNIT_POS_PLANE >> 40)


@pytest.mark.parametrize("dim", [(32, 1, 1), (16, 2, 1)])
def test_topology_builtins_are_i32_whatever_the_extent_of_their_axis(dev, rng, dim):
    # on an axis of extent 1 UNIT_POS_Y is 0, but an i32 0: (0 - 1) * x is -x in i32, never a u8 wrap
    x = rng.integers(1, 255, 32).astype(np.uint8)
    out, lane = poisoned(32, np.int32), poisoned(32, np.int32)
    typed_topology.launch(1, dim, x, out, lane, device=dev)
    y = np.arange(32) // dim[0]
    np.testing.assert_array_equal(out, (y - 1) * x.astype(np.int32) - x.astype(np.int32))
    np.testing.assert_array_equal(lane, 0)


@cb.kernel
def python_and_or(a: Array[i32], b: Array[i32], o: Mut[Array[i32]], n: Mut[Array[i32]], f: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        o[i] = a[i] or b[i]
        n[i] = a[i] and b[i] or 5
        f[i] = a[i] and 0.5


def test_and_or_on_numbers_give_an_operand_as_python_does(dev, rng):
    a = rng.integers(-3, 3, 100).astype(np.int32)
    b = rng.integers(-3, 3, 100).astype(np.int32)
    o, n, f = poisoned(100, np.int32), poisoned(100, np.int32), poisoned(100, np.float32)
    python_and_or.launch(1, 128, a, b, o, n, f, device=dev)
    np.testing.assert_array_equal(o, [x or y for x, y in zip(a.tolist(), b.tolist())])
    np.testing.assert_array_equal(n, [x and y or 5 for x, y in zip(a.tolist(), b.tolist())])
    np.testing.assert_array_equal(f, [x and 0.5 for x in a.tolist()])


@cb.kernel
def fma_of_numbers(x: Array[f32], o: Mut[Array[f32]]):
    g = cb.ABSOLUTE_POS
    acc = f32(0.0)
    for j in cb.unroll(range(3)):
        acc += cb.fma(j, j, x[g]) + -(-0.5)  # noqa: B002  (the C source must not read --0.5f)
    o[g] = acc


def test_fma_takes_two_python_numbers_and_a_negated_negative_constant_renders(dev, rng):
    x = rng.standard_normal(32).astype(np.float32)
    o = poisoned(32, np.float32)
    fma_of_numbers.launch(1, 32, x, o, device=dev)
    want = np.float32(0.0)
    for j in range(3):
        want = want + (np.float32(j * j) + x) + np.float32(0.5)
    np.testing.assert_allclose(o, want, rtol=1e-6)


@cb.kernel
def fused(a: Array, b: Array, c: Array, o: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        o[i] = cb.fma(a[i], b[i], c[i])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_rounds_the_exact_a_times_b_plus_c_once(dev, rng, dtype):
    from fractions import Fraction

    require_dtype(dev, dtype)
    n = 300
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    # c cancels most of a * b, so an unfused a * b + c loses every bit the fusion keeps
    c = (-(a.astype(np.float64) * b.astype(np.float64))).astype(dtype)
    c += (rng.standard_normal(n) * 1e-6).astype(dtype) * c
    o = poisoned(n, dtype)
    fused.launch(3, 128, a, b, c, o, device=dev)

    def exact(x, y, z):
        return np.array(float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
    # float(Fraction) rounds correctly to f64; for f32 round the exact value directly to f32
    want = [np.float64(exact(x, y, z)) if dtype == "float64" else
            np.float32(_round_fraction(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
            for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(o, np.array(want, dtype))


def _round_fraction(q):
    """The f32 nearest to the rational q (ties to even), by comparing with both neighbours."""
    from fractions import Fraction

    fi = np.finfo(np.float32)
    if abs(q) >= Fraction(float(fi.max)) + 2 ** (fi.maxexp - fi.nmant - 2):   # max + half an ulp
        return np.float32(np.inf if q > 0 else -np.inf)
    with np.errstate(over="ignore"):
        guess = np.clip(np.float32(float(q)), -fi.max, fi.max)             # q's f64 may round up to the threshold
        neighbours = (np.nextafter(guess, np.float32(-np.inf)), np.nextafter(guess, np.float32(np.inf)))
    for candidate in neighbours:
        if np.isinf(candidate):
            continue
        d_c, d_g = abs(Fraction(float(candidate)) - q), abs(Fraction(float(guess)) - q)
        if d_c < d_g or (d_c == d_g and int(candidate.view(np.uint32)) % 2 == 0):
            guess = candidate
    return guess


def _fma_edges(rng, dtype):
    """(a, b, c) triples at the ends of the range, where an emulated fma's steps overflow or
    underflow: huge factors (Veltkamp's split overflows), products near or past the largest float
    that c brings back, an infinite c after an overflowing product, a zero c after an underflowing
    product, a product halfway between two floats that only a tiny c decides, a huge c."""
    from fractions import Fraction

    fi = np.finfo(dtype)
    emax, big = fi.maxexp - 1, fi.max
    mant = fi.nmant + 1
    r = lambda n: rng.uniform(1.0, 2.0, n)                              # noqa: E731
    a, b, c = [], [], []

    def add(x, y, z):
        a.extend(np.asarray(x, dtype).ravel())
        b.extend(np.asarray(y, dtype).ravel())
        c.extend(np.asarray(z, dtype).ravel())
    n = 8
    # a huge factor times a small one, c cancelling the product
    x, y = (r(n) * 2.0 ** (emax - 8)).astype(dtype), (r(n) * 2.0 ** -(emax - 20)).astype(dtype)
    add(x, y, -(x.astype(np.float64) * y).astype(dtype) * np.dtype(dtype).type(1 + 2 * fi.eps))
    add(y, x, -(x.astype(np.float64) * y).astype(dtype))
    # products just below the largest float, c cancelling most of them
    x = (r(n) * 2.0 ** (emax // 2)).astype(dtype)
    y = (np.float64(big) / x.astype(np.float64) * (1 - rng.uniform(0, 2.0 ** -12, n))).astype(dtype)
    p = x.astype(np.float64) * y
    add(x, y, -(p * (1 - rng.uniform(0, 2.0 ** -20, n))).astype(dtype))
    add(-x, y, (p * rng.uniform(0.25, 0.5, n)).astype(dtype))
    # a product past the largest float: c brings it back, or not
    add([big, big, -big, big], [1.5, 4.0, 1.25, 1.0 + fi.eps], [-big, -big, big, -big])
    add([big, -big], [2.0, 2.0], [-np.inf, -np.inf])                    # c itself
    # a product that underflows to a signed zero, plus a zero
    tiny = fi.smallest_normal
    add([-tiny, tiny, -tiny], [tiny, tiny, -tiny], [0.0, -0.0, 0.0])
    # a product halfway between two floats, decided by the sign of a tiny c (also at the top)
    # ((1 + 2**-i) * (1 + 2**-j) = 1 + 2**-i + 2**-j + 2**-mant with i + j = mant: half an ulp over)
    for scale in (1.0, 2.0 ** (emax // 2)):
        x, y = (1.0 + 2.0 ** -(mant // 2)) * scale, (1.0 + 2.0 ** -(mant - mant // 2)) * scale
        add([x, x, x, -x], [y, y, y, y], [2.0 ** -120, -(2.0 ** -120), 0.0, 2.0 ** -120])
        assert _is_midpoint(Fraction(x) * Fraction(y), dtype)
    # a product exactly halfway between the largest float and the next power of two (the rounding
    # threshold to infinity), decided by a tiny c: (2**(mant + 1) - 1) * 2**(emax - mant) split
    # into two exact factors
    odd = 2 ** (mant + 1) - 1
    d = next(k for k in range(3, 64, 2) if odd % k == 0)
    x, y = float(d) * 2.0 ** (emax // 2), float(odd // d) * 2.0 ** (emax - mant - emax // 2)
    add([x, x, x, -x, -x], [y, y, y, y, y], [-(2.0 ** -120), 2.0 ** -120, 0.0, 2.0 ** -120, -(2.0 ** -120)])
    assert 2 * Fraction(x) * Fraction(y) == Fraction(float(big)) + 2 ** (emax + 1)
    # results among the subnormals: products there, c subnormal or cancelling most of the
    # product; a product of half the smallest subnormal, a tie that c's parity decides
    low = fi.minexp - mant // 2
    x, y = (r(n) * 2.0 ** (low // 2)).astype(dtype), (r(n) * 2.0 ** (low - low // 2)).astype(dtype)
    with np.errstate(under="ignore"):
        p = x.astype(np.float64) * y.astype(np.float64)        # f64: rounded, near enough to cancel
    steps = rng.integers(1, 2 ** (mant - 2), n) * rng.choice([-1, 1], n)
    add(x, y, steps * fi.smallest_subnormal)
    add(x, -y, p * rng.uniform(0.5, 0.99, n))
    e = int(np.log2(fi.smallest_subnormal)) - 1
    x, y = [2.0 ** (e // 2)] * 4, [2.0 ** (e - e // 2)] * 4
    add(x, y, np.array([1, -1, 3, -2]) * fi.smallest_subnormal)
    # a huge c, the product moderate
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    add(x, y, (r(n) * 2.0 ** (emax - 1) * rng.choice([-1, 1], n)).astype(dtype))
    return (np.array(v, dtype) for v in (a, b, c))


def _is_midpoint(q, dtype) -> bool:
    """Whether the rational ``q`` lies exactly halfway between two neighbouring floats of ``dtype``."""
    from fractions import Fraction

    t = np.dtype(dtype).type
    low = t(float(q))
    if Fraction(float(low)) > q:
        low = np.nextafter(low, t(-np.inf))
    high = np.nextafter(low, t(np.inf))
    return Fraction(float(low)) + Fraction(float(high)) == 2 * q


def _fma_reference(x, y, z, dtype) -> np.generic:
    """``x * y + z`` of floats rounded once to ``dtype`` (IEEE 754 fusedMultiplyAdd, to nearest)."""
    from fractions import Fraction

    t = np.dtype(dtype).type
    if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
        with np.errstate(over="ignore", invalid="ignore"):
            return z if np.isfinite(x) and np.isfinite(y) and np.isinf(z) else t(t(x) * t(y) + t(z))
    q = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    if q == 0:
        return t(t(x) * t(y) + t(z)) if x == 0 or y == 0 else t(0.0)
    fi = np.finfo(dtype)
    overflow = Fraction(2) ** (fi.maxexp) - Fraction(2) ** (fi.maxexp - fi.nmant - 2)      # max + half an ulp
    if abs(q) >= overflow:
        return t(np.inf if q > 0 else -np.inf)
    if t is np.float64:
        v = q.numerator / q.denominator
        return t(v if v != 0 else (-0.0 if q < 0 else 0.0))
    v = _round_fraction(q)
    return v if v != 0 else t(-0.0 if q < 0 else 0.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_rounds_once_at_the_ends_of_the_range(dev, rng, dtype):
    """Where the steps of an emulated fma would overflow or underflow (WebGPU's, the
    interpreter's f64 one) every device still gives IEEE's fusedMultiplyAdd (fuzz seed
    625000186: ``fma(100.0, 1e36, 1.0)`` was NaN on lavapipe)."""
    require_dtype(dev, dtype)
    check_fma_edges(dev, rng, dtype)


def check_fma_edges(dev, rng, dtype) -> None:
    """`_fma_edges` through ``cb.fma`` on ``dev``, bit for bit against `_fma_expected`."""
    a, b, c = _fma_edges(rng, dtype)
    o = poisoned(len(a), dtype)
    fused.launch(1, 128, a, b, c, o, device=dev)
    want = _fma_expected(dev, a, b, c, dtype)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    wrong = np.nonzero(o.view(bits) != want.view(bits))[0]
    assert not len(wrong), [(a[k], b[k], c[k], o[k], want[k]) for k in wrong[:6]]


def _fma_expected(dev, a, b, c, dtype) -> np.ndarray:
    """IEEE's fma of each triple; on a device that flushes f32 subnormals (docs/design.md,
    "Semantics"), of the operands flushed to zeros of their sign, the result flushed too."""
    flush = dtype == "float32" and dev.properties.supports("flushes_f32_subnormals")

    def ftz(v):
        v = np.asarray(v, dtype)
        tiny = np.abs(v) < np.finfo(dtype).smallest_normal
        return np.where(tiny, np.copysign(np.zeros_like(v), v), v) if flush else v
    return ftz(np.array([_fma_reference(x, y, z, dtype) for x, y, z in zip(ftz(a), ftz(b), ftz(c))], dtype))


@cb.kernel
def fused_scalars(o: Mut[Array[f64]], a: f64, b: f64, c: f64):
    o[cb.ABSOLUTE_POS] = cb.fma(a, b, c)       # the same on every unit (the interpreter's 0-d values)


def test_fma_of_values_the_same_on_every_unit(dev):
    require_dtype(dev, "float64")
    o = poisoned(4, np.float64)
    fused_scalars.launch(1, 4, o, 1.0 + 2.0**-30, 1.0 - 2.0**-30, -1.0, device=dev)
    np.testing.assert_array_equal(o, -(2.0**-60))        # the unfused product rounds to 1.0: 0.0


@cb.kernel
def fma_of_zeros(x: Array[f64], out: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = cb.fma(x[i] * 0.0, f64(-1.0), f64(-0.0))


def test_an_f64_fma_whose_exact_result_is_zero_takes_ieee_sign(dev, rng):
    # found by the CI fuzz budget (seed 383000510): the interpreter's exact f64 fma gave +0.0 for
    # fma(+0.0, -1.0, -0.0), whose IEEE result is -0.0
    require_dtype(dev, np.float64)
    x = rng.standard_normal(64)
    out = poisoned(64, np.float64)
    fma_of_zeros[1, 64](x, out, device=dev)
    want = np.where(x >= 0, -0.0, 0.0)            # (+-0.0 * -1.0) + -0.0
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))
    np.testing.assert_array_equal(out, 0.0)


@cb.kernel
def compensated(x: Array, y: Array, o: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        s = x[i] + y[i]
        o[4 * i] = x[i] - x[i]                 # NaN for inf and NaN, not 0
        o[4 * i + 1] = (s - x[i]) - y[i]       # the rounding error of s (Kahan's step), not 0
        o[4 * i + 2] = x[i] + -x[i]
        o[4 * i + 3] = s - (s - y[i])


@cb.kernel
def quotients(x: Array, y: Array, o: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        zero = x[i] - x[i]                     # 0 for finite x, NaN for inf and NaN
        o[4 * i] = x[i] / x[i]                 # NaN for 0, inf and NaN, not 1
        o[4 * i + 1] = (x[i] * y[i]) / y[i]    # the product's rounding shows, not x
        o[4 * i + 2] = x[i] * zero             # -0.0 for negative x, NaN for inf: not 0
        o[4 * i + 3] = zero / x[i]             # NaN for 0, -0.0 for negative x: not 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_arithmetic_is_not_rewritten_as_if_it_were_exact(dev, rng, dtype):
    """Each operation rounds on its own: no compiler may fold x - x to 0 or (a + b) - a to b."""
    require_dtype(dev, dtype)
    n = 200
    x = (rng.standard_normal(n) * 1e8).astype(dtype)
    y = rng.standard_normal(n).astype(dtype)
    x[:4] = (np.inf, -np.inf, np.nan, 1e8)
    y[:4] = (1.0, np.inf, 2.0, 1.0)
    o = poisoned(4 * n, dtype)
    compensated.launch(2, 128, x, y, o, device=dev)
    with np.errstate(all="ignore"):
        s = x + y
        want = np.stack([x - x, (s - x) - y, x + -x, s - (s - y)], axis=1).reshape(-1)
    assert np.count_nonzero(want[1::4][4:]) > n // 4          # the inputs show the rounding
    np.testing.assert_array_equal(o, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_division_is_not_rewritten_as_if_it_were_exact(dev, rng, dtype):
    """No compiler may fold x / x to 1, (x * y) / y to x, or x * 0 and 0 / x to 0 (NVIDIA's
    Vulkan driver gave a number for 0 / 0 where the zero came from a folded integer)."""
    require_dtype(dev, dtype)
    n = 200
    x = (rng.standard_normal(n) * 1e4).astype(dtype)
    y = (rng.standard_normal(n) * 1e-3).astype(dtype)
    x[:6] = (0.0, -0.0, np.inf, -np.inf, np.nan, -3.0)
    y[:6] = (1.0, 3.0, 0.0, np.inf, 2.0, 0.0)
    o = poisoned(4 * n, dtype)
    quotients.launch(2, 128, x, y, o, device=dev)
    with np.errstate(all="ignore"):
        zero = x - x
        want = np.stack([x / x, (x * y) / y, x * zero, zero / x], axis=1).reshape(-1)
    assert np.count_nonzero(want[1::4][6:] != x[6:]) > n // 50       # the inputs show the rounding
    np.testing.assert_array_equal(o, want)
    number = ~np.isnan(want)            # a NaN's sign is not specified (x86: negative; NVIDIA: positive f32 ones)
    np.testing.assert_array_equal(np.signbit(o[number]), np.signbit(want[number]))
