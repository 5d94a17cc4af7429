"""Kernels the GPU-backend tests render, compile and run: each with arguments for a small launch."""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i32, u32, u64
from tests.kernels import saxpy  # noqa: F401  (the GPU tests import it from here)

ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64")


def ir_of(kfn, *args, dim=(64, 1, 1), plane_dim=32, checked=True):
    """The IR kernel (bounds checks lowered) of one specialization, via the interpreter's device."""
    dev = cb.device("interp", plane_dim=plane_dim)
    return kfn.compile(*args, dim=dim, device=dev, checked=checked).ir_module


@cb.kernel
def block_sum(x: Array[f32], out: Mut[Array[f32]]):
    sm = cb.SharedMemory(f32, 256)
    t = cb.UNIT_POS
    i = cb.ABSOLUTE_POS
    v = 0.0
    if i < len(x):
        v = x[i]
    sm[t] = v
    cb.sync_cube()
    s = cb.CUBE_DIM // 2
    while s > 0:
        if t < s:
            sm[t] = sm[t] + sm[t + s]
        cb.sync_cube()
        s = s // 2
    if t == 0:
        out[cb.CUBE_POS] = sm[0]


@cb.kernel
def plane_all_ops(x: Array[f32], k: Array[i32], out: Mut[Array[f32]], iout: Mut[Array[i32]],
                  bal: Mut[Array[cb.u64]]):
    i = cb.ABSOLUTE_POS
    v = x[i]
    n = k[i]
    lane = cb.UNIT_POS_PLANE
    out[i, 0] = cb.plane_sum(v)
    out[i, 1] = cb.plane_prod(v)
    out[i, 2] = cb.plane_min(v)
    out[i, 3] = cb.plane_max(v)
    out[i, 4] = cb.plane_broadcast(v, 3)
    out[i, 5] = cb.plane_shuffle(v, n)
    out[i, 6] = cb.plane_shuffle_xor(v, 5)
    out[i, 7] = cb.plane_shuffle_up(v, 2)
    out[i, 8] = cb.plane_shuffle_down(v, 3)
    out[i, 9] = cb.plane_inclusive_sum(v)
    out[i, 10] = cb.plane_exclusive_sum(v)
    iout[i, 0] = cb.plane_sum(n)
    iout[i, 1] = cb.plane_min(n)
    iout[i, 2] = cb.plane_max(n)
    iout[i, 3] = cb.cast(cb.plane_all(n > -100), i32)
    iout[i, 4] = cb.cast(cb.plane_any(n == 7), i32)
    iout[i, 5] = cb.cast(cb.plane_elect(), i32)
    iout[i, 6] = cb.plane_inclusive_sum(n)
    iout[i, 7] = cb.plane_exclusive_sum(n)
    iout[i, 8] = cb.plane_shuffle(n, lane + 1)
    bal[i] = cb.plane_ballot(n % 3 == 0)


@cb.kernel
def atomics(x: Array[i32], acc: Mut[Array[i32]], facc: Mut[Array[f32]], uacc: Mut[Array[u32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        cb.atomic_add(acc, 0, v)
        cb.atomic_sub(acc, 1, v)
        cb.atomic_min(acc, 2, v)
        cb.atomic_max(acc, 3, v)
        cb.atomic_and(acc, 4, v)
        cb.atomic_or(acc, 5, v)
        cb.atomic_xor(acc, 6, v)
        cb.atomic_cas(acc, 7, 0, v)
        cb.atomic_add(facc, 0, cb.cast(v, f32))
        cb.atomic_min(facc, 1, cb.cast(v, f32))
        cb.atomic_max(facc, 2, cb.cast(v, f32))
        cb.atomic_add(uacc, 0, cb.cast(v, u32))


@cb.kernel
def loops(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i >= len(x):
        return
    total = 0
    for k in range(x[i]):
        if k % 3 == 1:
            continue
        if k > 20:
            break
        total += k
    j = 0
    while j * j <= x[i]:
        j += 1
        if j > 5:
            break
    for k in range(10, 0, -3):
        total += k // 4
    out[i] = total * 100 + j


@cb.kernel
def transpose(a: Array[f32], b: Mut[Array[f32]]):
    x = cb.ABSOLUTE_POS_X
    y = cb.ABSOLUTE_POS_Y
    if y < a.shape[0] and x < a.shape[1]:
        b[x, y] = a[y, x]


@cb.kernel
def arith(a: Array, b: Array, out: Mut[Array], n: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < n:
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x // y
        out[i, 4] = x % y
        out[i, 5] = cb.select(x < y, x, y)
        out[i, 6] = cb.max(x, y)
        out[i, 7] = cb.min(x, y)


@cb.kernel
def copy_any(a: Array, out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        out[i] = a[i]


@cb.kernel
def oob(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    y[i] = x[i + 3]


@cb.kernel
def prints(x: Array[f32], s: Array[u64], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i]
        print("unit", i, f"x={x[i]:.3f} s={s[i]}", x[i] > 0.5)


def make_arrays(dtype: str, n: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    if dt.kind == "f":
        a = rng.uniform(-8, 8, n).astype(dt)
        b = rng.uniform(-8, 8, n).astype(dt)
        b[b == 0] = 1
        return a, b
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    a = rng.integers(lo, hi, n, dtype=dt)
    b = rng.integers(lo, hi, n, dtype=dt)
    b[:4] = 0  # division by zero gives 0
    return a, b


def codegen_cases(plane_dim: int = 32):
    """(label, IR kernel) for every kernel above (dtype variants of ``arith`` and ``copy_any``)."""
    n = 256
    x = np.ones(n, np.float32)
    cases = [
        ("saxpy", ir_of(saxpy, x, x.copy(), 2.0, dim=256, plane_dim=plane_dim)),
        ("saxpy_lines4", ir_of(saxpy, cb.lines(x, 4), cb.lines(x.copy(), 4), 2.0, dim=64, plane_dim=plane_dim)),
        ("saxpy_lines8", ir_of(saxpy, cb.lines(x, 8), cb.lines(x.copy(), 8), 2.0, dim=32, plane_dim=plane_dim)),
        ("block_sum", ir_of(block_sum, x, np.zeros(1, np.float32), dim=256, plane_dim=plane_dim)),
        ("plane_ops", ir_of(plane_all_ops, x, np.ones(n, np.int32), np.zeros((n, 11), np.float32),
                            np.zeros((n, 9), np.int32), np.zeros(n, np.uint64), dim=96, plane_dim=plane_dim)),
        ("atomics", ir_of(atomics, np.ones(n, np.int32), np.zeros(8, np.int32), np.zeros(3, np.float32),
                          np.zeros(1, np.uint32), dim=64, plane_dim=plane_dim)),
        ("loops", ir_of(loops, np.ones(n, np.int32), np.zeros(n, np.int32), dim=64, plane_dim=plane_dim)),
        ("transpose", ir_of(transpose, np.ones((8, 16), np.float32), np.zeros((16, 8), np.float32), dim=(16, 8),
                            plane_dim=plane_dim)),
        ("oob", ir_of(oob, x, x.copy(), dim=64, plane_dim=plane_dim)),
        ("oob_unchecked", ir_of(oob, x, x.copy(), dim=64, plane_dim=plane_dim, checked=False)),
        ("prints", ir_of(prints, x, np.zeros(n, np.uint64), x.copy(), dim=64, plane_dim=plane_dim)),
    ]
    for dt in ALL_DTYPES:
        a, b = make_arrays(dt, 16)
        if dt != "bool":
            cases.append((f"arith_{dt}", ir_of(arith, a, b, np.zeros((16, 8), dt), 16, dim=16, plane_dim=plane_dim)))
        cases.append((f"copy_{dt}", ir_of(copy_any, a, np.zeros(16, dt), dim=16, plane_dim=plane_dim)))
        if dt not in ("bool", "int64", "uint64", "float64"):
            w = 16 // np.dtype(dt).itemsize
            a = np.zeros(4 * w, dt)
            cases.append((f"copy_lines_{dt}", ir_of(copy_any, cb.lines(a, w), cb.lines(a.copy(), w), dim=4,
                                                    plane_dim=plane_dim)))
    return cases
