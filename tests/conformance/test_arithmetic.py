"""Arithmetic, promotion, casts and math on every device against NumPy."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i32
from tests.conftest import poisoned, require_dtype

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32", "float64"]


def _random(rng, dtype, n, nonzero=False):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = rng.standard_normal(n) * 10
    elif dtype.kind == "b":
        v = rng.random(n) < 0.5
    else:
        info = np.iinfo(dtype)
        v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
    v = v.astype(dtype)
    if nonzero:
        v[v == 0] = 1
    return v


@cb.kernel
def binary_ops(a: Array, b: Array, add: Mut[Array], sub: Mut[Array], mul: Mut[Array], lt: Mut[Array],
               eq: Mut[Array], mx: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        add[i] = a[i] + b[i]
        sub[i] = a[i] - b[i]
        mul[i] = a[i] * b[i]
        lt[i] = a[i] < b[i]
        eq[i] = a[i] == b[i]
        mx[i] = cb.max(a[i], b[i])


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_binary_ops_match_numpy_including_integer_wraparound(dev, rng, dtype):
    require_dtype(dev, dtype)
    n = 300
    a, b = _random(rng, dtype, n), _random(rng, dtype, n)
    outs = [poisoned(n, dtype) for _ in range(3)] + [poisoned(n, bool), poisoned(n, bool), poisoned(n, dtype)]
    binary_ops.launch(3, 128, a, b, *outs, device=dev)
    with np.errstate(all="ignore"):
        expected = [a + b, a - b, a * b, a < b, a == b, np.maximum(a, b)]
    for got, want in zip(outs, expected):
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == "float16" else 1e-6)
        else:
            np.testing.assert_array_equal(got, want)


@cb.kernel
def foldable_overflow(a: Array, grows: Mut[Array], rem: Mut[Array], neg: Mut[Array], absolute: Mut[Array],
                      nonneg: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        grows[i] = a[i] + 1 > a[i]            # a compiler assuming no signed overflow folds these
        rem[i] = a[i] % (a[i] * a[i])
        neg[i] = -a[i]
        absolute[i] = cb.abs(a[i])
        nonneg[i] = cb.abs(a[i]) >= 0


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_signed_overflow_wraps_even_where_a_compiler_could_fold_it(dev, rng, dtype):
    info = np.iinfo(dtype)
    a = np.concatenate([[info.max, info.min, info.min + 1, -1, 0, 1, 46341, -46341, 3037000500],
                        _random(rng, dtype, 91)]).astype(dtype)
    outs = [poisoned(100, bool), poisoned(100, dtype), poisoned(100, dtype), poisoned(100, dtype),
            poisoned(100, bool)]
    foldable_overflow.launch(1, 128, a, *outs, device=dev)
    with np.errstate(all="ignore"):
        square = a * a
        rem = np.where(square == 0, 0, np.mod(a, np.where(square == 0, 1, square)))
        expected = [a + np.array(1, dtype) > a, rem.astype(dtype), -a, np.abs(a), np.abs(a) >= 0]
    for got, want in zip(outs, expected):
        np.testing.assert_array_equal(got, want)


@cb.kernel
def int_division(a: Array, b: Array, q: Mut[Array], r: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "uint32"])
def test_floordiv_and_mod_follow_python_and_zero_divisor_gives_zero(dev, rng, dtype):
    n = 257
    a = _random(rng, dtype, n)
    b = _random(rng, dtype, n) % 50
    if np.dtype(dtype).kind == "i":
        b = (b - 25).astype(dtype)
    b[::17] = 0
    q, r = poisoned(n, dtype), poisoned(n, dtype)
    int_division.launch(3, 128, a, b, q, r, device=dev)
    want_q = np.array([int(x) // int(y) if y else 0 for x, y in zip(a, b)]).astype(dtype)
    want_r = np.array([int(x) % int(y) if y else 0 for x, y in zip(a, b)]).astype(dtype)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r, want_r)


@cb.kernel
def float_floordiv(a: Array[f64], b: Array[f64], q: Mut[Array[f64]], r: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


def test_float_floordiv_and_mod_follow_python(dev, rng):
    require_dtype(dev, np.float64)
    n = 200
    a, b = rng.standard_normal(n) * 20, rng.standard_normal(n) * 3
    q, r = poisoned(n, np.float64), poisoned(n, np.float64)
    float_floordiv.launch(2, 128, a, b, q, r, device=dev)
    np.testing.assert_allclose(q, np.floor_divide(a, b))
    np.testing.assert_allclose(r, np.mod(a, b), atol=1e-12)


@cb.kernel
def bit_ops(a: Array[i32], s: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        out[i, 0] = a[i] & s[i]
        out[i, 1] = a[i] | s[i]
        out[i, 2] = a[i] ^ s[i]
        out[i, 3] = ~a[i]
        out[i, 4] = a[i] << (s[i] & 31)
        out[i, 5] = a[i] >> (s[i] & 31)
        out[i, 6] = -a[i]


def test_bitwise_and_shift_ops(dev, rng):
    n = 130
    a = _random(rng, "int32", n)
    s = _random(rng, "int32", n)
    out = poisoned((n, 7), np.int32)
    bit_ops.launch(2, 128, a, s, out, device=dev)
    k = s & 31
    with np.errstate(all="ignore"):
        want = np.stack([a & s, a | s, a ^ s, ~a, (a.astype(np.int64) << k).astype(np.int32), a >> k, -a], axis=1)
    np.testing.assert_array_equal(out, want)


@cb.kernel
def promote_kernel(a: Array[i32], b: Array[f32], c: Array, out_f: Mut[Array[f32]], out_i: Mut[Array],
                   out_div: Mut[Array[f32]], out_lit: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        out_f[i] = a[i] + b[i]           # i32 + f32 -> f32
        out_i[i] = a[i] + c[i]           # i32 + i16 -> i32
        out_div[i] = a[i] / 4            # true division of ints gives a float
        out_lit[i] = c[i] * 3            # a Python literal takes the typed operand's type (i16)


def test_promotion_rules(dev, rng):
    n = 100
    a = rng.integers(-1000, 1000, n, dtype=np.int32)
    b = rng.standard_normal(n).astype(np.float32)
    c = rng.integers(-20000, 20000, n).astype(np.int16)
    out_f, out_i, out_div, out_lit = poisoned(n, np.float32), poisoned(n, np.int32), poisoned(n, np.float32), \
        poisoned(n, np.int16)
    promote_kernel.launch(1, 128, a, b, c, out_f, out_i, out_div, out_lit, device=dev)
    np.testing.assert_allclose(out_f, a + b, rtol=1e-6)
    np.testing.assert_array_equal(out_i, a + c.astype(np.int32))
    np.testing.assert_allclose(out_div, a / 4, rtol=1e-6)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out_lit, (c * np.int16(3)).astype(np.int16))


def test_promotion_table():
    from cubepy.ir.types import PromotionError, promote
    assert promote(cb.i32, cb.f32) == cb.f32
    assert promote(cb.i64, cb.f16) == cb.f16
    assert promote(cb.u8, cb.i8) == cb.i16
    assert promote(cb.u32, cb.i32) == cb.i64
    assert promote(cb.u16, cb.i32) == cb.i32
    assert promote(cb.f16, cb.bf16) == cb.f32
    assert promote(cb.bool_, cb.u8) == cb.u8
    assert promote(cb.f32, cb.f64) == cb.f64
    with pytest.raises(PromotionError):
        promote(cb.u64, cb.i64)


@cb.kernel
def casts(x: Array[f32], to_i: Mut[Array[i32]], to_u8: Mut[Array], to_f64: Mut[Array[f64]], to_b: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        to_i[i] = i32(x[i])
        to_u8[i] = cb.u8(i32(x[i]) & 255)
        to_f64[i] = f64(x[i])
        to_b[i] = cb.bool_(x[i])


def test_casts_by_calling_a_dtype(dev, rng):
    require_dtype(dev, np.float64)
    n = 100
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    x[::7] = 0
    to_i, to_u8, to_f64, to_b = poisoned(n, np.int32), poisoned(n, np.uint8), poisoned(n, np.float64), \
        np.zeros(n, bool)
    casts.launch(1, 128, x, to_i, to_u8, to_f64, to_b, device=dev)
    np.testing.assert_array_equal(to_i, x.astype(np.int32))
    np.testing.assert_array_equal(to_u8, (x.astype(np.int32) & 255).astype(np.uint8))
    np.testing.assert_array_equal(to_f64, x.astype(np.float64))
    np.testing.assert_array_equal(to_b, x != 0)


@cb.kernel
def math_kernel(x: Array, out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        out[0, i] = cb.sqrt(cb.abs(v))
        out[1, i] = cb.rsqrt(cb.abs(v) + 1)
        out[2, i] = cb.exp(v * 0.1)
        out[3, i] = cb.log(cb.abs(v) + 1)
        out[4, i] = cb.sin(v)
        out[5, i] = cb.cos(v)
        out[6, i] = cb.tanh(v)
        out[7, i] = cb.erf(v * 0.3)
        out[8, i] = cb.floor(v)
        out[9, i] = cb.ceil(v)
        out[10, i] = cb.pow(cb.abs(v), 1.5)
        out[11, i] = cb.clamp(v, -1.0, 2.0)
        out[12, i] = cb.fma(v, 2.0, 1.0)
        out[13, i] = cb.select(v > 0, v, -v)
        out[14, i] = cb.min(v, 0.5)
        out[15, i] = v ** 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_math_functions(dev, rng, dtype):
    from math import erf
    require_dtype(dev, dtype)
    n = 200
    x = (rng.standard_normal(n) * 3).astype(dtype)
    out = poisoned((16, n), dtype)
    math_kernel.launch(2, 128, x, out, device=dev)
    a = np.abs(x)
    want = [np.sqrt(a), 1 / np.sqrt(a + 1), np.exp(x * 0.1), np.log(a + 1), np.sin(x), np.cos(x), np.tanh(x),
            np.vectorize(erf)(x * 0.3), np.floor(x), np.ceil(x), a ** 1.5, np.clip(x, -1, 2), x * 2 + 1,
            np.abs(x), np.minimum(x, 0.5), x * x]
    rtol = 2e-6 if dtype == "float32" else 1e-12
    for k, w in enumerate(want):
        np.testing.assert_allclose(out[k], w.astype(dtype), rtol=rtol, atol=rtol, err_msg=f"row {k}")


@cb.kernel
def line_kernel(x: Array[f32], y: Mut[Array[f32]], first: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i] * a + 1.0
        w = v
        w[2] = 0.0
        y[i] = w + v
        first[i] = v[0] + v[3]


@pytest.mark.parametrize("width", [4, 8])
def test_lines_elementwise_broadcast_and_element_access(dev, rng, width):
    n = 64 * width
    x = rng.standard_normal(n).astype(np.float32)
    y = poisoned(n, np.float32)
    first = poisoned(n // width, np.float32)
    line_kernel.launch(1, 64, cb.lines(x, width), cb.lines(y, width), first, 1.5, device=dev)
    v = (x * np.float32(1.5) + 1).reshape(-1, width)
    w = v.copy()
    w[:, 2] = 0
    np.testing.assert_allclose(y.reshape(-1, width), w + v, rtol=1e-6)
    np.testing.assert_allclose(first, v[:, 0] + v[:, 3], rtol=1e-6)
