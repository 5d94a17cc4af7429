"""Arithmetic: integer wrap-around, Python floordiv/mod (zero divisors give 0), shifts, casts,
float ops keeping their dtype."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interp_kit import KB

from cubepy.ir.types import DTYPES_BY_NAME, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64

INTS = [i8, i16, i32, i64, u8, u16, u32, u64]
N = 64


@cache
def binary_kernel(opcode: str, dname: str, out_dname: str | None = None):
    dtype = DTYPES_BY_NAME[dname]
    kb = KB(f"bin_{opcode}", cube_dim=(N, 1, 1))
    a, b = kb.array("a", dtype, mutable=False), kb.array("b", dtype, mutable=False)
    out = kb.array("out", DTYPES_BY_NAME[out_dname or dname])
    i = kb.gid()
    x, y = kb.load(a, i), kb.load(b, i)
    r = kb.cmp(opcode, x, y) if out_dname == "bool_" else kb.op(opcode, x, y)
    kb.store(out, i, r)
    return kb


def run_binary(opcode, dtype, a, b, out_dtype=None):
    kb = binary_kernel(opcode, dtype.name, out_dtype.name if out_dtype else None)
    out = np.zeros(N, (out_dtype or dtype).numpy_name)
    kb.run([a, b, out])
    return out


def wrap(v: int, dtype) -> int:
    bits = dtype.bits
    v %= 1 << bits
    return v - (1 << bits) if dtype.kind == "i" and v >= 1 << (bits - 1) else v


def py_ref(opcode, x, y, dtype):
    bits = dtype.bits
    if opcode == "floordiv":
        r = x // y if y else 0
    elif opcode == "mod":
        r = x % y if y else 0
    elif opcode == "shl":      # a count outside [0, bits) shifts every bit out
        r = x << y if 0 <= y < bits else 0
    elif opcode == "shr":
        r = x >> y if 0 <= y < bits else (-1 if x < 0 else 0)
    else:
        r = {"add": x + y, "sub": x - y, "mul": x * y, "min": min(x, y), "max": max(x, y),
             "and": x & y, "or": x | y, "xor": x ^ y}[opcode]
    return wrap(r, dtype)


def int_array(dtype, rng):
    """Random values of the whole range, a quarter of them replaced by edge cases."""
    info = np.iinfo(dtype.numpy_name)
    a = rng.integers(info.min, info.max, N, endpoint=True, dtype=dtype.numpy_name)
    special = np.array([0, 1, -1 if info.min < 0 else 2, info.min, info.max, info.max - 1, 7], dtype=a.dtype)
    pick = rng.random(N) < 0.25
    a[pick] = rng.choice(special, pick.sum())
    return a


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("opcode", ["add", "sub", "mul", "floordiv", "mod", "shl", "shr", "min", "max",
                                    "and", "or", "xor"])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_integer_binary_ops_wrap_like_python_reference(opcode, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = int_array(dtype, rng), int_array(dtype, rng)
    out = run_binary(opcode, dtype, a, b)
    assert out.dtype == np.dtype(dtype.numpy_name)
    expect = [py_ref(opcode, int(x), int(y), dtype) for x, y in zip(a, b)]
    np.testing.assert_array_equal(out.astype(object), np.array(expect, dtype=object))


def test_division_by_zero_and_python_signs():
    a = np.array([7, -7, 7, -7, 5, 0, -2**31, -2**31] * 8, np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, -1, 0] * 8, np.int32)
    np.testing.assert_array_equal(run_binary("floordiv", i32, a, b)[:8], [3, -4, -4, 3, 0, 0, -2**31, 0])
    np.testing.assert_array_equal(run_binary("mod", i32, a, b)[:8], [1, 1, -1, -1, 0, 0, 0, 0])
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    fd = run_binary("floordiv", f32, fa, fb)[:8]
    np.testing.assert_array_equal(fd[:4], [3, -4, -4, 3])
    assert fd[4] == np.inf and np.isnan(fd[5])
    fm = run_binary("mod", f32, fa, fb)[:4]
    np.testing.assert_array_equal(fm, [1, 1, -1, -1])
    fdiv = run_binary("div", f32, fa, fb)
    assert fdiv[4] == np.inf and np.isnan(fdiv[5]) and fdiv[0] == np.float32(3.5)


def test_small_int_results_stay_small():
    a = np.full(N, 100, np.int8)
    out = run_binary("add", i8, a, a)
    assert out.dtype == np.int8 and (out == -56).all()
    u = np.full(N, 3, np.uint8)
    assert (run_binary("sub", u8, u, u + np.uint8(1)) == 255).all()
    assert (run_binary("mul", i16, np.full(N, 300, np.int16), np.full(N, 300, np.int16)) == 24464).all()


@pytest.mark.parametrize("opcode", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", [i32, u16, f32, f64], ids=str)
def test_comparisons(opcode, dtype):
    rng = np.random.default_rng()
    a = rng.integers(0, 5, N).astype(dtype.numpy_name)
    b = rng.integers(0, 5, N).astype(dtype.numpy_name)
    out = run_binary(opcode, dtype, a, b, bool_)
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
          "ge": np.greater_equal}[opcode]
    np.testing.assert_array_equal(out, fn(a, b))


@pytest.mark.parametrize("dtype", [f16, f32, f64], ids=str)
@pytest.mark.parametrize("opcode", ["add", "sub", "mul", "div", "min", "max", "pow"])
def test_float_binary_keeps_dtype_and_rounding(dtype, opcode):
    rng = np.random.default_rng()
    npd = np.dtype(dtype.numpy_name)
    a = rng.uniform(0.1, 4, N).astype(npd)
    b = rng.uniform(0.1, 4, N).astype(npd)
    out = run_binary(opcode, dtype, a, b)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "min": np.minimum,
          "max": np.maximum, "pow": np.power}[opcode]
    assert out.dtype == npd
    np.testing.assert_allclose(out, fn(a, b), rtol=2e-3 if dtype is f16 else 1e-6)
    if opcode in ("add", "mul"):
        np.testing.assert_array_equal(out, fn(a, b))  # correctly rounded in the narrow type


def unary_kernel(opcode, dtype, out_dtype=None, **attrs):
    kb = KB(f"un_{opcode}", cube_dim=(N, 1, 1))
    a, out = kb.array("a", dtype, mutable=False), kb.array("out", out_dtype or dtype)
    i = kb.gid()
    x = kb.load(a, i)
    r = kb.cast(x, out_dtype) if opcode == "cast" else kb.op(opcode, x, **attrs)
    kb.store(out, i, r)
    return kb


@pytest.mark.parametrize("opcode,ref", [
    ("sqrt", np.sqrt), ("rsqrt", lambda a: 1 / np.sqrt(a)), ("exp", np.exp), ("log", np.log),
    ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh), ("floor", np.floor), ("ceil", np.ceil),
    ("neg", np.negative), ("abs", np.abs), ("erf", np.vectorize(math.erf))])
@pytest.mark.parametrize("dtype", [f32, f64], ids=str)
def test_float_unary(opcode, ref, dtype):
    rng = np.random.default_rng()
    npd = np.dtype(dtype.numpy_name)
    sign = 1 if opcode in ("sqrt", "rsqrt", "log") else rng.choice([-1, 1], N)
    a = rng.uniform(0.05, 3, N).astype(npd) * sign
    out = np.zeros(N, npd)
    unary_kernel(opcode, dtype).run([a, out])
    np.testing.assert_allclose(out, ref(a.astype(np.float64)), rtol=1e-6 if dtype is f32 else 1e-13)


@pytest.mark.parametrize("dtype", [i8, i32, u32, i64], ids=str)
def test_integer_unary(dtype):
    info = np.iinfo(dtype.numpy_name)
    a = np.random.default_rng().integers(info.min, info.max, N, dtype=dtype.numpy_name, endpoint=True)
    a[:2] = info.min, info.max
    for opcode in ("neg", "invert", "abs"):
        out = np.zeros(N, dtype.numpy_name)
        unary_kernel(opcode, dtype).run([a, out])
        expect = [wrap({"neg": -int(x), "invert": ~int(x), "abs": abs(int(x))}[opcode], dtype) for x in a]
        np.testing.assert_array_equal(out.astype(object), np.array(expect, dtype=object))


def test_not_on_bool():
    a = np.random.default_rng().random(N) < 0.5
    out = np.zeros(N, bool)
    unary_kernel("not", bool_).run([a, out])
    np.testing.assert_array_equal(out, ~a)


@pytest.mark.parametrize("src,dst", [(f32, i32), (f64, i8), (f32, u16), (i32, i8), (i64, u8), (u32, i32),
                                     (i32, f16), (f32, f16), (i32, bool_), (f32, bool_), (bool_, f32),
                                     (u8, i64), (f16, f64)], ids=str)
def test_casts(src, dst):
    rng = np.random.default_rng()
    if src.is_float:
        a = (rng.uniform(-100, 100, N) * rng.choice([1, 0], N, p=[0.8, 0.2])).astype(src.numpy_name)
        if dst.is_int and dst.kind == "u":
            a = np.abs(a)
    elif src.is_bool:
        a = rng.random(N) < 0.5
    else:
        info = np.iinfo(src.numpy_name)
        a = rng.integers(info.min, info.max, N, endpoint=True).astype(src.numpy_name)
        a[:3] = 0, info.max, info.min
    out = np.zeros(N, dst.numpy_name)
    unary_kernel("cast", src, dst).run([a, out])
    if src.is_float and dst.is_int:
        expect = [wrap(math.trunc(float(x)), dst) for x in a]
        np.testing.assert_array_equal(out.astype(object), np.array(expect, dtype=object))
    elif src.is_int and dst.is_int:
        expect = [wrap(int(x), dst) for x in a]
        np.testing.assert_array_equal(out.astype(object), np.array(expect, dtype=object))
    else:
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(out, a.astype(dst.numpy_name))


def test_cast_out_of_range_float_does_not_crash():
    a = np.array([np.nan, np.inf, -np.inf, 1e30] * (N // 4), np.float32)
    out = np.zeros(N, np.int32)
    unary_kernel("cast", f32, i32).run([a, out])  # unspecified values, but no error


def test_fma_and_select_on_int_and_float():
    kb = KB("fma", cube_dim=(N, 1, 1))
    a, b = kb.array("a", i16, mutable=False), kb.array("b", f32, mutable=False)
    oi, of = kb.array("oi", i16), kb.array("of", f32)
    i = kb.gid()
    x, y = kb.load(a, i), kb.load(b, i)
    kb.store(oi, i, kb.op("fma", x, x, kb.c(7, i16)))
    cond = kb.cmp("gt", y, kb.c(0.0, f32))
    kb.store(of, i, kb.op("select", cond, kb.op("fma", y, y, y), kb.c(-2.0, f32)))
    rng = np.random.default_rng()
    av = rng.integers(-3000, 3000, N).astype(np.int16)
    bv = rng.standard_normal(N).astype(np.float32)
    ri, rf = np.zeros(N, np.int16), np.zeros(N, np.float32)
    kb.run([av, bv, ri, rf])
    np.testing.assert_array_equal(ri.astype(object), [wrap(int(x) * int(x) + 7, i16) for x in av])
    np.testing.assert_allclose(rf, np.where(bv > 0, bv * bv + bv, -2), rtol=1e-6)


def test_line_types_of_f16_stay_f16():
    kb = KB("f16line", cube_dim=(8, 1, 1))
    a, out = kb.array("a", f16, width=2, mutable=False), kb.array("out", f16, width=2)
    i = kb.gid()
    x = kb.load(a, i)
    kb.store(out, i, kb.op("mul", kb.op("add", x, x), x))
    av = np.random.default_rng().uniform(-2, 2, (8, 2)).astype(np.float16)
    res = np.zeros((8, 2), np.float16)
    kb.run([av, res])
    np.testing.assert_array_equal(res, (av + av) * av)
