"""Kernels several modules launch: test modules and the benchmarks.

The benchmarks (``benchmarks/cpu``, ``benchmarks/gpu``, ``benchmarks/frameworks``,
``benchmarks/interp``) time these kernels and tests/conformance/test_benchmark_kernels.py checks
them on every device, so a figure is always the figure of a kernel the suite has checked. A
benchmark kernel's body is its benchmark's: changing it changes the figures in docs/benchmarks.md.
An ``*_unchecked`` kernel is the same function compiled without bounds checks.
"""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i32

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

