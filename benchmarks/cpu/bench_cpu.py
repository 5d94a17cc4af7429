"""CPU backend benchmarks: cubepy "cpu" vs numba (parallel) and C (gcc -O3 -march=native -fopenmp).

    python benchmarks/cpu/bench_cpu.py [--reps 20] [--out benchmarks/cpu/results.json]

Rows: triad/saxpy over 2^25 f32 (unchecked, and checked: the default), a compute-bound
polynomial, sum reductions (shared memory; plane_sum + atomic), the warm launch overhead of a
1024-element kernel, the cold compile of saxpy, and a fresh process launching with a warm disk
cache. Each figure is the median of many repetitions; the saxpy and triad rows (issue 10's
1.1x-numba target) are timed interleaved with numba, round by round, and also give the median of
the per-round ratios. Every implementation of saxpy, triad and the polynomial is checked against
NumPy (or cubepy's polynomial) before or after it is timed, outputs poisoned where write-only, so
a row never times wrong code. ``CUBEPY_CPU_ISA=avx2`` measures the AVX2 code (numba and C are built for
the same target). Rows whose competitor is not installed (numba, gcc) are skipped with a note.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

# The peers' OpenMP threads (numba's omp layer, the C build) spin for a while after each parallel
# region; on a machine of few cores that spinning took the cores from the contender timed next
# (interleaved, cubepy's saxpy measured 1.42x numba with spinning peers, 1.13x without): they wait
# passively here, as cubepy's own workers do.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

import cubepy as cb  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from benchmarks.fresh_process import child_env, describe  # noqa: E402
from tests.kernels import (  # noqa: E402
    poly_unchecked,
    reduce_chunks,
    reduce_plane,
    reduce_sum,
    saxpy,
    saxpy_unchecked,
    triad,
    triad_unchecked,
)

N = 1 << 25
POLY_N = 1 << 22
POLY_ITERS = 64


C_SOURCE = r"""
void triad(const float* restrict x, float* restrict y, float a, long n) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
void poly(const float* restrict x, float* restrict y, long n, int iters) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; i++) {
        float v = x[i], acc = 0.0f;
        for (int k = 0; k < iters; k++) acc = acc * v + 0.5f;
        y[i] = acc;
    }
}
/* The same polynomial with the loops interchanged by hand (blocks of 64 elements, the iteration
   loop outside, the lanes inside), which GCC vectorizes; the plain version above it does not
   ("control flow in loop"). */
void poly_blocked(const float* restrict x, float* restrict y, long n, int iters) {
    #pragma omp parallel for schedule(static)
    for (long b = 0; b < n; b += 64) {
        float v[64], acc[64];
        long m = n - b < 64 ? n - b : 64;
        for (long j = 0; j < m; j++) { v[j] = x[b + j]; acc[j] = 0.0f; }
        for (int k = 0; k < iters; k++)
            for (long j = 0; j < 64; j++) acc[j] = acc[j] * v[j] + 0.5f;
        for (long j = 0; j < m; j++) y[b + j] = acc[j];
    }
}
float sum(const float* restrict x, long n) {
    float s = 0.0f;
    #pragma omp parallel for simd reduction(+:s) schedule(static)
    for (long i = 0; i < n; i++) s += x[i];
    return s;
}
"""


def median_time(fn, reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def interleaved(fns: dict, reps: int, warmup: int = 2) -> dict:
    """Median seconds of each function, timed round by round (each once per round, in an order
    that rotates), so that a noisy neighbour slows every contender alike; also, under the key
    ``(name, "ratio")``, the median over rounds of each time divided by the first function's."""
    names = list(fns)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict = {name: [] for name in names}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t)
    out = {name: statistics.median(ts) for name, ts in times.items()}
    first = times[names[0]]
    out.update({(name, "ratio"): statistics.median(t / f for t, f in zip(times[name], first)) for name in names})
    return out


def build_c():
    try:
        tmp = Path(tempfile.mkdtemp(prefix="cubepy-bench-"))
        (tmp / "k.c").write_text(C_SOURCE)
        isa = ["-mno-avx512f"] if cb.settings.cpu_isa() == "avx2" else []     # the same ISA as cubepy's code
        subprocess.run(["gcc", "-O3", "-march=native", *isa, "-fopenmp", "-shared", "-fPIC", "-o", str(tmp / "k.so"),
                        str(tmp / "k.c")], check=True, capture_output=True)
        lib = ctypes.CDLL(str(tmp / "k.so"))
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"gcc unavailable: {e}"
    fp = ctypes.POINTER(ctypes.c_float)
    lib.triad.argtypes = [fp, fp, ctypes.c_float, ctypes.c_long]
    lib.poly.argtypes = [fp, fp, ctypes.c_long, ctypes.c_int]
    lib.poly_blocked.argtypes = [fp, fp, ctypes.c_long, ctypes.c_int]
    lib.sum.argtypes = [fp, ctypes.c_long]
    lib.sum.restype = ctypes.c_float
    return lib, None


def import_numba():
    """``(numba, None)`` set to compile for cubepy's target, or ``(None, why)``."""
    if cb.settings.cpu_isa() == "avx2":          # numba compiles for the same target as cubepy
        from cubepy.backends.cpu import jit

        os.environ.setdefault("NUMBA_CPU_NAME", jit.host()["cpu"])
        os.environ.setdefault("NUMBA_CPU_FEATURES", jit.host()["features"])
    try:
        import numba
    except ImportError as e:
        return None, f"numba unavailable: {e}"
    return numba, None


def build_numba():
    numba, why = import_numba()
    if numba is None:
        return None, why

    @numba.njit(parallel=True, fastmath=False)
    def triad(x, y, a):
        for i in numba.prange(x.shape[0]):
            y[i] = a * x[i] + y[i]

    @numba.njit(parallel=True, fastmath=False)
    def triad3(x, y, z, a):
        for i in numba.prange(x.shape[0]):
            z[i] = x[i] + a * y[i]

    @numba.njit(parallel=True)
    def total(x):
        s = np.float32(0.0)
        for i in numba.prange(x.shape[0]):
            s += x[i]
        return s

    @numba.njit(parallel=True)
    def poly_nb(x, y, iters):
        for i in numba.prange(x.shape[0]):
            v = x[i]
            acc = np.float32(0.0)
            for _ in range(iters):
                acc = acc * v + np.float32(0.5)
            y[i] = acc
    return (triad, total, poly_nb, triad3), None


def verify(benchmark: str, fns: dict, reset, result, want: np.ndarray) -> None:
    """Run each timed implementation once on inputs ``reset()`` restores (the output poisoned
    where it is write-only) and compare ``result()`` with NumPy's ``want``: a row times only
    code that computed the right answer. A fused multiply-add (C's contraction) is one rounding
    off NumPy's two, hence the tolerance."""
    for impl, fn in fns.items():
        reset()
        fn()
        got = result()
        if not np.allclose(got, want, rtol=1e-6, atol=0.0):
            bad = int(np.count_nonzero(~np.isclose(got, want, rtol=1e-6, atol=0.0)))
            raise SystemExit(f"{benchmark}: {impl} computed {bad} of {want.size} elements wrong")


def ptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


FRESH = textwrap.dedent('''
    import time
    t0 = time.perf_counter()
    import numpy as np
    import cubepy as cb
    from cubepy import f32, Array, Mut
    from cubepy.backends import cpu

    @cb.kernel(checked=False)
    def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]

    x = np.ones(1024, np.float32); y = np.ones(1024, np.float32)
    dev = cb.device("cpu")
    t1 = time.perf_counter()
    saxpy[4, 256](x, y, 2.0, device=dev)
    t2 = time.perf_counter()
    print(t1 - t0, t2 - t1, cpu.stats["compiles"], cpu.stats["disk_hits"])
''')


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="time the fresh processes compiling every module from source (benchmarks/fresh_process.py)")
    args = ap.parse_args()
    reps = args.reps
    dev = cb.device("cpu")
    import llvmlite.binding as llvm
    from cubepy.bench.machine import cpu_model, simd_width_bits

    # the code's width, which is not the CPU's where the ISA or the LLVM release turns AVX-512 off
    lanes = max(int(f[len("simd_f32x"):]) for f in dev.properties.features if f.startswith("simd_f32x"))
    print(f"cpu: {cpu_model()} ({simd_width_bits()}-bit SIMD, {os.cpu_count()} cores; code for "
          f"CUBEPY_CPU_ISA={cb.settings.cpu_isa()}: {lanes * 32}-bit, LLVM "
          f"{'.'.join(map(str, llvm.llvm_version_info))}); {dev}", flush=True)
    rows: list[dict] = []

    def row(name, impl, seconds, note="", **extra):
        r = {"benchmark": name, "impl": impl, "median_s": seconds, "note": note, **extra}
        rows.append(r)
        shown = f"{seconds * 1e3:10.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:10.2f} us"
        print(f"{name:<28} {impl:<26} {shown}  {note}", flush=True)

    clib, c_why = build_c()
    nb, nb_why = build_numba()
    rng = np.random.default_rng(0)

    # --- triad / saxpy -----------------------------------------------------------------------
    x = rng.random(N, dtype=np.float32)
    y = rng.random(N, dtype=np.float32)
    gb = 12 * N / 1e9
    # the targets' rows (cubepy at most 1.1x numba): interleaved with numba, and the ratio to numba
    # is the median over rounds of the same round's times
    k, kc = saxpy_unchecked[N // 256, 256], saxpy[N // 256, 256]
    fns = {"numba parallel": lambda: nb[0](x, y, np.float32(2.0))} if nb else {}
    fns.update({"cubepy cpu (unchecked)": lambda: k(x, y, 2.0, device=dev),
                "cubepy cpu (checked)": lambda: kc(x, y, 2.0, device=dev)})
    if clib:
        px, py = ptr(x), ptr(y)
        fns["C -O3 -march=native omp"] = lambda: clib.triad(px, py, 2.0, N)
    y0 = y.copy()
    verify("saxpy", fns, lambda: np.copyto(y, y0), lambda: y, np.float32(2.0) * x + y0)
    found = interleaved(fns, reps)
    for name in fns:
        ratio = f", {found[name, 'ratio']:.3f}x numba (same rounds)" if nb else ""
        row("saxpy 2^25 f32", name, found[name], f"{gb / found[name]:.1f} GB/s{ratio}")
    if not nb:
        row("saxpy 2^25 f32", "numba parallel", float("nan"), nb_why)
    t = median_time(lambda: np.add(y, 2.0 * x, out=y), max(3, reps // 4))
    row("saxpy 2^25 f32", "numpy", t, f"{gb / t:.1f} GB/s")
    z = np.zeros(N, np.float32)
    kt, ktc = triad_unchecked[N // 256, 256], triad[N // 256, 256]
    fns = {"numba parallel": lambda: nb[3](x, y, z, np.float32(2.0))} if nb else {}
    fns.update({"cubepy cpu (unchecked)": lambda: kt(x, y, z, 2.0, device=dev),
                "cubepy cpu (checked)": lambda: ktc(x, y, z, 2.0, device=dev)})
    verify("triad", fns, lambda: z.fill(np.nan), lambda: z, x + np.float32(2.0) * y)
    found = interleaved(fns, reps)
    for name in fns:
        ratio = f", {found[name, 'ratio']:.3f}x numba (same rounds)" if nb else ""
        row("triad 2^25 f32", name, found[name], f"{gb / found[name]:.1f} GB/s{ratio}")

    # --- compute-bound polynomial ----------------------------------------------------------
    px_ = rng.random(POLY_N, dtype=np.float32)
    py_ = np.zeros(POLY_N, np.float32)
    flops = 2 * POLY_N * POLY_ITERS / 1e9
    kp = poly_unchecked[POLY_N // 256, 256]
    t = median_time(lambda: kp(px_, py_, POLY_ITERS, device=dev), reps)
    row("poly 2^22 x 64 fma", "cubepy cpu", t, f"{flops / t:.1f} GFLOP/s")
    ref = py_.copy()
    if clib:
        t = median_time(lambda: clib.poly(ptr(px_), ptr(py_), POLY_N, POLY_ITERS), reps)
        row("poly 2^22 x 64 fma", "C -O3 -march=native omp", t, f"{flops / t:.1f} GFLOP/s")
        t = median_time(lambda: clib.poly_blocked(ptr(px_), ptr(py_), POLY_N, POLY_ITERS), reps)
        row("poly 2^22 x 64 fma", "C, loops interchanged", t, f"{flops / t:.1f} GFLOP/s")
        assert np.allclose(ref, py_, rtol=1e-4)
    if nb:
        t = median_time(lambda: nb[2](px_, py_, POLY_ITERS), reps)
        row("poly 2^22 x 64 fma", "numba parallel", t, f"{flops / t:.1f} GFLOP/s")
        assert np.allclose(ref, py_, rtol=1e-4), "numba's polynomial differs from cubepy's"

    # --- reduction -------------------------------------------------------------------------
    cubes = 64 * (os.cpu_count() or 1)
    partial = np.zeros(cubes, np.float32)
    kr = reduce_sum[cubes, 256]

    def cube_sum():
        kr(x, partial, cubes * 256, device=dev)
        return float(partial.sum(dtype=np.float64))
    t = median_time(cube_sum, reps)
    row("sum 2^25 f32", "cubepy cpu, grid-stride", t, f"{4 * N / 1e9 / t:.1f} GB/s")
    assert abs(cube_sum() - float(x.sum(dtype=np.float64))) < 1e-3 * N
    kch = reduce_chunks[cubes, 256]
    chunk = -(-N // (cubes * 256))

    def chunk_sum():
        kch(x, partial, chunk, device=dev)
        return float(partial.sum(dtype=np.float64))
    t = median_time(chunk_sum, reps)
    row("sum 2^25 f32", "cubepy cpu, chunk per unit", t, f"{4 * N / 1e9 / t:.1f} GB/s")
    assert abs(chunk_sum() - float(x.sum(dtype=np.float64))) < 1e-3 * N
    kpl = reduce_plane[cubes, 256]
    total = np.zeros(1, np.float32)

    def plane_sum():
        total[0] = 0
        kpl(x, total, cubes * 256, device=dev)
        return float(total[0])
    t = median_time(plane_sum, reps)
    row("sum 2^25 f32", "cubepy cpu, plane_sum+atomic", t, f"{4 * N / 1e9 / t:.1f} GB/s")
    assert abs(plane_sum() - float(x.sum(dtype=np.float64))) < 1e-3 * N
    if nb:
        t = median_time(lambda: nb[1](x), reps)
        row("sum 2^25 f32", "numba parallel", t, f"{4 * N / 1e9 / t:.1f} GB/s")
    if clib:
        t = median_time(lambda: clib.sum(ptr(x), N), reps)
        row("sum 2^25 f32", "C -O3 -march=native omp", t, f"{4 * N / 1e9 / t:.1f} GB/s")

    # --- launch overhead -------------------------------------------------------------------
    xs = np.ones(1024, np.float32)
    ys = np.ones(1024, np.float32)
    k1 = saxpy_unchecked[4, 256]
    n_launch = 20000
    k1(xs, ys, 2.0, device=dev)

    def many():
        for _ in range(n_launch):
            k1(xs, ys, 2.0, device=dev)
    t = median_time(many, max(3, reps // 4), 1) / n_launch
    row("launch 1024 elems (warm)", "cubepy cpu, full launch", t, "incl. the runtime's argument binding")
    compiled = saxpy_unchecked.compile(xs, ys, 2.0, dim=256, device=dev)
    bound = compiled.bind((xs, ys, 2.0))

    def many_backend():
        for _ in range(n_launch):
            compiled.run((4, 1, 1), (256, 1, 1), bound)
    t = median_time(many_backend, max(3, reps // 4), 1) / n_launch
    row("launch 1024 elems (warm)", "cubepy cpu, backend.launch", t, "excl. the runtime's argument binding")

    # --- cold compile ------------------------------------------------------------------------
    cold = []
    old = os.environ.get("CUBEPY_CACHE_DIR")
    for _ in range(max(3, reps // 4)):
        with tempfile.TemporaryDirectory() as d:
            os.environ["CUBEPY_CACHE_DIR"] = d
            fresh = cb.kernel(checked=False)(saxpy_unchecked.fn)
            tt = time.perf_counter()
            fresh[4, 256](xs, ys, 2.0, device=dev)
            cold.append(time.perf_counter() - tt)
    if old is None:
        os.environ.pop("CUBEPY_CACHE_DIR", None)
    else:
        os.environ["CUBEPY_CACHE_DIR"] = old
    row("cold compile saxpy", "cubepy cpu", statistics.median(cold), "trace + codegen + O3 + object + load")

    # --- fresh process, warm disk cache --------------------------------------------------
    with tempfile.TemporaryDirectory() as d:
        env = child_env(d, bytecode=not args.no_bytecode_cache)
        script = Path(d) / "fresh.py"
        script.write_text(FRESH)
        subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True)   # fills both caches
        first_launch, wall, compiles = [], [], []
        for _ in range(max(3, reps // 4)):
            tt = time.perf_counter()
            out = subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True, text=True)
            wall.append(time.perf_counter() - tt)
            imp, launch, nc, hits = out.stdout.split()
            first_launch.append(float(launch))
            compiles.append(int(nc))
    row("fresh process, warm cache", "first launch", statistics.median(first_launch),
        f"compiles in child: {max(compiles)}; {describe(not args.no_bytecode_cache)}")
    row("fresh process, warm cache", "whole process", statistics.median(wall), "python start + import + launch")

    info = {"device": repr(dev), "cpu_count": os.cpu_count(), "numpy": np.__version__, "rows": rows}
    try:
        import llvmlite
        info["llvmlite"] = llvmlite.__version__
    except ImportError:
        pass
    Path(args.out).write_text(json.dumps(info, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
