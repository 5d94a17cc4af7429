"""Kernels the CPU backend tests run on "cpu" and "interp"."""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Mut, f16, f32, f64, i8, i16, i32, i64, u8, u32, u64  # noqa: F401
from tests.kernels import saxpy  # noqa: F401  (the CPU tests import it from here)


@cb.kernel
def saxpy_any(x: Array, y: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = 3 * x[i] + y[i]


@cb.kernel
def loops(x: Array[f32], out: Mut[Array[f32]], cnt: Mut[Array[i32]], n: i32):
    i = cb.ABSOLUTE_POS
    if i >= len(x):
        return
    acc = 0.0
    j = 0
    k = 0
    while j < n:
        j += 1
        if j == 3:
            continue
        if x[i] * j > 40.0:
            break
        for q in range(j):
            if q == 2:
                continue
            if q > 5:
                break
            k += q
        acc += x[i]
    out[i] = acc
    cnt[i] = k * 100 + j


@cb.kernel
def tree_sum(x: Array[f32], out: Mut[Array[f32]], half: i32):
    sm = cb.SharedMemory(f32, 256)
    t = cb.UNIT_POS_X
    i = cb.ABSOLUTE_POS
    v = 0.0
    if i < len(x):
        v = x[i]
    sm[t] = v
    cb.sync_cube()
    s = half
    while s > 0:
        if t < s:
            sm[t] = sm[t] + sm[t + s]
        cb.sync_cube()
        s = s // 2
    if t == 0:
        out[cb.CUBE_POS_X] = sm[0]


@cb.kernel
def plane_ops(x: Array[i32], f: Array[f32], out: Mut[Array[i32]], fout: Mut[Array[f32]], b: Mut[Array[u64]]):
    i = cb.ABSOLUTE_POS
    n = len(x)
    v = x[i]
    fv = f[i]
    lane = cb.UNIT_POS_PLANE
    out[0 * n + i] = cb.plane_sum(v)
    out[1 * n + i] = cb.plane_prod(v % 3 + 1)
    out[2 * n + i] = cb.plane_min(v)
    out[3 * n + i] = cb.plane_max(v)
    out[4 * n + i] = cb.cast(cb.plane_all(v > -50), i32)
    out[5 * n + i] = cb.cast(cb.plane_any(v > 40), i32)
    out[6 * n + i] = cb.plane_broadcast(v, 1)
    out[7 * n + i] = cb.plane_shuffle(v, lane + 3)
    out[8 * n + i] = cb.plane_shuffle_xor(v, 1)
    out[9 * n + i] = cb.plane_shuffle_up(v, 1)
    out[10 * n + i] = cb.plane_shuffle_down(v, 2)
    out[11 * n + i] = cb.cast(cb.plane_elect(), i32)
    out[12 * n + i] = cb.plane_inclusive_sum(v)
    out[13 * n + i] = cb.plane_exclusive_sum(v)
    out[14 * n + i] = lane
    out[15 * n + i] = cb.PLANE_DIM
    fout[0 * n + i] = cb.plane_sum(fv)
    fout[1 * n + i] = cb.plane_max(fv)
    fout[2 * n + i] = cb.plane_min(fv)
    fout[3 * n + i] = cb.plane_inclusive_sum(fv)
    b[i] = cb.plane_ballot(v > 0)


@cb.kernel
def plane_masked(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    v = x[i]
    r = 0
    if cb.plane_sum(v) > 0:
        r = cb.plane_max(v) + cb.plane_shuffle_down(v, 1)
    else:
        r = cb.plane_min(v) * 2
    s = cb.plane_sum(r)
    k = 0
    while k < cb.plane_max(v % 4):
        s += cb.plane_sum(k)
        k += 1
    out[i] = s


@cb.kernel
def histogram(x: Array[i32], bins: Mut[Array[i32]], mx: Mut[Array[i32]], fs: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        cb.atomic_add(bins, v % len(bins), 1)
        cb.atomic_max(mx, 0, v)
        cb.atomic_min(mx, 1, v)
        cb.atomic_xor(mx, 2, v)
        cb.atomic_or(mx, 3, v)
        cb.atomic_sub(mx, 4, v)
        cb.atomic_add(fs, 0, 0.5)


@cb.kernel
def shared_hist(x: Array[i32], bins: Mut[Array[i32]]):
    sm = cb.SharedMemory(i32, 16)
    t = cb.UNIT_POS_X
    if t < 16:
        sm[t] = 0
    cb.sync_cube()
    i = cb.ABSOLUTE_POS
    if i < len(x):
        cb.atomic_add(sm, x[i] % 16, 1)
    cb.sync_cube()
    if t < 16:
        cb.atomic_add(bins, t, sm[t])


@cb.kernel
def cas_counter(ctr: Mut[Array[i32]], got: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    done = False
    while not done:
        old = ctr[0]
        if cb.atomic_cas(ctr, 0, old, old + 1) == old:
            got[i] = old
            done = True


@cb.kernel
def intops(a: Array, b: Array, out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    n = len(a)
    x = a[i]
    y = b[i]
    out[0 * n + i] = x // y
    out[1 * n + i] = x % y
    out[2 * n + i] = x + y
    out[3 * n + i] = x * y
    out[4 * n + i] = x - y
    out[5 * n + i] = x << y
    out[6 * n + i] = x >> y
    out[7 * n + i] = x & y
    out[8 * n + i] = x | y
    out[9 * n + i] = x ^ y
    out[10 * n + i] = cb.min(x, y)
    out[11 * n + i] = cb.max(x, y)
    out[12 * n + i] = cb.abs(x)
    out[13 * n + i] = -x
    out[14 * n + i] = ~x


@cb.kernel
def floatops(a: Array, b: Array, out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    n = len(a)
    x = a[i]
    y = b[i]
    out[0 * n + i] = x // y
    out[1 * n + i] = x % y
    out[2 * n + i] = x / y
    out[3 * n + i] = cb.sqrt(cb.abs(x))
    out[4 * n + i] = cb.exp(x * 0.1)
    out[5 * n + i] = cb.log(cb.abs(y) + 1.0)
    out[6 * n + i] = cb.sin(x)
    out[7 * n + i] = cb.cos(y)
    out[8 * n + i] = cb.tanh(x)
    out[9 * n + i] = cb.erf(y * 0.3)
    out[10 * n + i] = cb.floor(x)
    out[11 * n + i] = cb.ceil(y)
    out[12 * n + i] = cb.min(x, y)
    out[13 * n + i] = cb.max(x, y)
    out[14 * n + i] = cb.fma(x, y, x)
    out[15 * n + i] = cb.rsqrt(cb.abs(y) + 1.0)
    out[16 * n + i] = cb.pow(cb.abs(x) + 0.5, y * 0.25)


@cb.kernel
def promote(a: Array[i8], b: Array[u8], c: Array[i16], d: Array[u32], h: Array[f16], out: Mut[Array[f64]],
            oi: Mut[Array[i64]]):
    i = cb.ABSOLUTE_POS
    out[i] = a[i] + b[i] * c[i] + d[i] + h[i] * 2
    oi[i] = a[i] * d[i] + (b[i] < c[i])


lines_saxpy = saxpy       # launched with cb.lines arguments


@cb.kernel
def oob(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    y[i] = x[i + 1]


@cb.kernel
def local_2d(x: Array[f32], out: Mut[Array[f32]]):
    buf = cb.LocalArray(f32, 4)
    tx = cb.UNIT_POS_X
    ty = cb.UNIT_POS_Y
    sm = cb.SharedMemory(f32, 64)
    w = cb.CUBE_DIM_X
    g = cb.CUBE_POS_X * (w * cb.CUBE_DIM_Y) + ty * w + tx
    for k in range(4):
        buf[k] = x[g] * (k + 1)
    sm[ty * w + tx] = buf[0] + buf[3]
    cb.sync_cube()
    out[g] = sm[(cb.CUBE_DIM_Y - 1 - ty) * w + (w - 1 - tx)]


@cb.kernel
def early_return_sync(x: Array[f32], out: Mut[Array[f32]], stop: i32):
    sm = cb.SharedMemory(f32, 64)
    t = cb.UNIT_POS_X
    if cb.CUBE_POS_X >= stop:
        return
    sm[t] = x[cb.ABSOLUTE_POS]
    cb.sync_cube()
    out[cb.ABSOLUTE_POS] = sm[63 - t] + cb.plane_sum(sm[t])


@cb.kernel
def grid3d(out: Mut[Array[i32]]):
    ux, uy, uz = cb.UNIT_POS_X, cb.UNIT_POS_Y, cb.UNIT_POS_Z
    cx, cy, cz = cb.CUBE_POS_X, cb.CUBE_POS_Y, cb.CUBE_POS_Z
    units = cb.CUBE_DIM_X * cb.CUBE_DIM_Y * cb.CUBE_DIM_Z
    cube = cx + cb.CUBE_COUNT_X * (cy + cb.CUBE_COUNT_Y * cz)
    lin = ux + cb.CUBE_DIM_X * (uy + cb.CUBE_DIM_Y * uz)
    g = cube * units + lin
    out[g] = ((cx * 8 + cy) * 8 + cz) * 1000 + (ux * 8 + uy) * 8 + uz
