"""Kernels several modules launch: test modules, the codegen checks and the benchmarks.

The benchmarks (``benchmarks/cpu``, ``benchmarks/gpu``, ``benchmarks/frameworks``,
``benchmarks/interp``) time these kernels and tests/conformance/test_benchmark_kernels.py checks
them on every device, so a figure is always the figure of a kernel the suite has checked. A
benchmark kernel's body is its benchmark's: changing it changes the figures in docs/benchmarks.md.
An ``*_unchecked`` kernel is the same function compiled without bounds checks.
"""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i32, u32

# --- streaming: one pass over arrays ------------------------------------------------------------


@cb.kernel
def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]


saxpy_unchecked = cb.kernel(checked=False)(saxpy.fn)


# saxpy on a 3-D grid: the launch-form benchmark's 3-D row.
@cb.kernel
def saxpy3(x: Array[f32], y: Mut[Array[f32]], a: f32, unused: Comptime[int]):
    i = cb.ABSOLUTE_POS_X + cb.CUBE_DIM_X * cb.CUBE_COUNT_X * (cb.ABSOLUTE_POS_Y + cb.CUBE_DIM_Y * cb.CUBE_COUNT_Y
                                                              * cb.ABSOLUTE_POS_Z)
    if i < len(x):
        y[i] = a * x[i] + y[i]


@cb.kernel
def triad(x: Array[f32], y: Array[f32], z: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        z[i] = x[i] + a * y[i]


triad_unchecked = cb.kernel(checked=False)(triad.fn)


# STREAM's triad, its output first (the GPU benchmark's argument order).
@cb.kernel
def stream_triad(a: Mut[Array[f32]], b: Array[f32], c: Array[f32], s: f32):
    i = cb.ABSOLUTE_POS
    if i < len(a):
        a[i] = b[i] + s * c[i]


stream_triad_unchecked = cb.kernel(checked=False)(stream_triad.fn)


@cb.kernel
def copy(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i]


copy_unchecked = cb.kernel(checked=False)(copy.fn)


@cb.kernel
def scale(x: Array[f32], out: Mut[Array[f32]], factor: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * factor


@cb.kernel
def scatter(x: Array[f32], perm: Array[i32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[perm[i]] = x[i]


# --- compute-bound --------------------------------------------------------------------------------


@cb.kernel
def poly(x: Array[f32], y: Mut[Array[f32]], iters: i32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        acc = f32(0.0)
        for _ in range(iters):
            acc = acc * v + 0.5
        y[i] = acc


poly_unchecked = cb.kernel(checked=False)(poly.fn)


# --- sums -----------------------------------------------------------------------------------------


# One partial sum per cube of 256 units: a tree in shared memory, ``half`` = 128 at the top.
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


# One partial sum per cube of up to 256 units (a power of two): a tree halving CUBE_DIM.
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


# A grid-stride sum per unit, then unit 0 adds the cube's 256 in order: one partial per cube.
@cb.kernel(checked=False)
def reduce_sum(x: Array[f32], out: Mut[Array[f32]], stride: i32):
    sm = cb.SharedMemory(f32, 256)
    t = cb.UNIT_POS_X
    acc = f32(0.0)
    for j in range(cb.ABSOLUTE_POS, len(x), stride):
        acc += x[j]
    sm[t] = acc
    cb.sync_cube()
    if t == 0:
        s = f32(0.0)
        for k in range(256):
            s += sm[k]
        out[cb.CUBE_POS_X] = s


# reduce_sum with one contiguous chunk per unit instead of a grid stride.
@cb.kernel(checked=False)
def reduce_chunks(x: Array[f32], out: Mut[Array[f32]], chunk: i32):
    sm = cb.SharedMemory(f32, 256)
    t = cb.UNIT_POS_X
    start = cb.ABSOLUTE_POS * chunk
    stop = cb.min(start + chunk, len(x))
    acc = f32(0.0)
    for j in range(start, stop):
        acc += x[j]
    sm[t] = acc
    cb.sync_cube()
    if t == 0:
        s = f32(0.0)
        for k in range(256):
            s += sm[k]
        out[cb.CUBE_POS_X] = s


# A grid-stride sum per unit, plane_sum, one atomic add per plane into out[0].
@cb.kernel
def reduce_plane(x: Array[f32], out: Mut[Array[f32]], stride: i32):
    acc = f32(0.0)
    for j in range(cb.ABSOLUTE_POS, len(x), stride):
        acc += x[j]
    s = cb.plane_sum(acc)
    if cb.UNIT_POS_PLANE == 0:
        cb.atomic_add(out, 0, s)


# The sum of ``cb.lines(x, 4)`` into total[0]: grid stride, a tree in shared memory, an atomic per cube.
@cb.kernel(checked=False)
def cube_sum(x: Array[f32], total: Mut[Array[f32]], dim: Comptime[int]):
    partial = cb.SharedMemory(f32, dim)
    i = cb.ABSOLUTE_POS
    stride = cb.CUBE_COUNT * dim
    acc = 0.0
    while i < len(x):
        v = x[i]
        acc += v[0] + v[1] + v[2] + v[3]
        i += stride
    unit = cb.UNIT_POS
    partial[unit] = acc
    cb.sync_cube()
    step = dim // 2
    while step > 0:
        if unit < step:
            partial[unit] += partial[unit + step]
        cb.sync_cube()
        step //= 2
    if unit == 0:
        cb.atomic_add(total, 0, partial[0])


# The sum of ``cb.lines(x, 4)`` into total[0]: grid stride, plane_sum, an atomic per plane.
@cb.kernel(checked=False)
def plane_sum(x: Array[f32], total: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    stride = cb.CUBE_COUNT * cb.CUBE_DIM
    acc = 0.0
    while i < len(x):
        v = x[i]
        acc += v[0] + v[1] + v[2] + v[3]
        i += stride
    s = cb.plane_sum(acc)
    if cb.UNIT_POS_PLANE == 0:
        cb.atomic_add(total, 0, s)


# --- launched by tests/conformance and rendered by tests/gpu/test_codegen_compile.py -----------------


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
def linear_positions(out: Mut[Array[i32]]):
    """Each unit writes its linear cube position, unit position and cube count (the 3-D launch's
    linear builtins: the builds per launch shape read the y and z axes only for these)."""
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = cb.CUBE_POS * 1000 + cb.UNIT_POS + cb.CUBE_COUNT * 1000000


def make_shifted():
    """A fresh kernel object each call (its compiled kernels, builds and launchers its own, so a
    test counts only the builds its own launches made): ``out[i] = x[i + d]``, checked, with a
    launch test the host answers from ``len(x)`` and ``d``."""
    @cb.kernel
    def shifted(out: Mut[Array[f32]], x: Array[f32], d: i32):
        i = cb.ABSOLUTE_POS
        if i < len(out):
            out[i] = x[i + d]
    return shifted
