"""Regions holding a per-unit loop run as gangs (vectors of units under masks): results and
out-of-bounds reports must match the interpreter, at odd cube sizes and every plane size."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i8, i32, i64
from tests.kernels import poly


@cb.kernel
def ragged(x: Array[f64], idx: Array[i32], perm: Array[i32], out: Mut[Array[f64]], out2: Mut[Array[f64]],
           flags: Mut[Array[i8]], m: i32):
    """Per-unit trip counts, break/continue, gathers and a scatter, a local array, a barrier, then
    a return inside a loop in a region reading values kept across the barrier."""
    buf = cb.LocalArray(f64, 4)
    sm = cb.SharedMemory(f64, 128)
    t = cb.UNIT_POS_X
    i = cb.ABSOLUTE_POS
    n = len(x)
    acc = 0.0
    hits = 0
    if i < n:
        for k in range(i % 7):
            j = idx[(i * 5 + k) % n]
            if j % 3 == 0:
                continue
            if j > m:
                break
            acc += x[j] * (k + 1)
            buf[hits % 4] = acc
            hits += 1
        out[perm[i]] = acc
    sm[t] = acc
    cb.sync_cube()
    if i < n:
        if t + 1 < cb.CUBE_DIM_X:
            out2[i] = sm[t + 1]
        w = 0
        while True:
            if w >= hits:
                break
            if w == 3:
                return
            out2[i] += buf[w % 4] * (w + 1)
            w += 1
        flags[i] = i8(hits)


@cb.kernel
def oob_in_loop(x: Array[f32], y: Mut[Array[f32]], k: i32):
    i = cb.ABSOLUTE_POS
    acc = 0.0
    for j in range(3):
        if i == k:
            acc += x[i + j + 20]
        else:
            acc += x[i % 4]
    y[i] = acc


def both(kernel, count, dim, make, plane):
    a, b = make(), make()
    kernel[count, dim](*a, device=cb.device("cpu", plane_dim=plane))
    kernel[count, dim](*b, device=cb.device("interp", plane_dim=plane))
    return a, b


@pytest.mark.parametrize("dim", [64, 100, 7])
def test_poly_gang(dim):
    n = 1000
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    c, i = both(poly, -(-n // dim), dim, lambda: [x, np.full(n, np.nan, np.float32), np.int32(9)], 8)
    np.testing.assert_array_equal(c[1], i[1])
    ref = np.zeros(n, np.float32)
    for _ in range(9):
        ref = ref * x + np.float32(0.5)
    np.testing.assert_allclose(c[1], ref, rtol=1e-6)


@pytest.mark.parametrize("plane", [1, 8, 32])
@pytest.mark.parametrize("dim", [128, 100])
def test_ragged_gang(plane, dim):
    n = 300
    r = np.random.default_rng(plane + dim)
    x = r.random(n)
    idx = r.integers(0, n, n).astype(np.int32)
    perm = r.permutation(n).astype(np.int32)
    c, i = both(ragged, 3, dim, lambda: [x, idx, perm, np.zeros(n), np.zeros(n), np.full(n, -1, np.int8),
                                         np.int32(200)], plane)
    np.testing.assert_allclose(c[3], i[3], rtol=1e-12)
    np.testing.assert_allclose(c[4], i[4], rtol=1e-12)
    np.testing.assert_array_equal(c[5], i[5])
    assert (c[5] >= 0).sum() > 0


def test_gang_source_is_vectorized():
    x = np.ones(64, np.float32)
    src = poly.source(x, x.copy(), 3, device="cpu", dim=64)
    assert "g_head" in src


@pytest.mark.parametrize("k", [10, 47, 63, 90])
def test_oob_in_gang_matches_interpreter(k):
    msgs = []
    for dev in ("cpu", "interp"):
        with pytest.raises(cb.OutOfBoundsError) as e:
            oob_in_loop[2, 48](np.ones(30, np.float32), np.zeros(96, np.float32), np.int32(k), device=dev)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_oob_lowest_unit_first_access_scalar_region():
    @cb.kernel
    def two_bad(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        y[i] = x[i + 24] * 0.0 + x[i * 2] + x[i + 24]

    with pytest.raises(cb.OutOfBoundsError) as e:
        two_bad[1, 64](np.ones(64, np.float32), np.zeros(64, np.float32), device="cpu")
    assert "index (64,)" in str(e.value) and "unit (32, 0, 0)" in str(e.value)


@cb.kernel
def grid_stride_sum(x: Array[f32], out: Mut[Array[f32]], start: i32, step: i32):
    acc = f32(0.0)
    for j in range(start + cb.ABSOLUTE_POS, len(x), step):
        acc += x[j]
    out[cb.ABSOLUTE_POS] = acc


@pytest.mark.parametrize("start,step", [(0, 96), (5, 96), (0, 7), (-40, 96)])
def test_grid_stride_gang_with_prefetch(start, step):
    """Grid-stride loads are prefetched ahead (past the array's end too, harmlessly); results and
    the report of a negative start match the interpreter."""
    x = np.random.default_rng(1).random(1000).astype(np.float32)
    src = grid_stride_sum.source(x, np.zeros(96, np.float32), 0, 96, device="cpu", dim=48, form="source")
    assert "llvm.prefetch" in src
    outs, errs = [], []
    for dev in ("cpu", "interp"):
        out = np.zeros(96, np.float32)
        try:
            grid_stride_sum[2, 48](x, out, np.int32(start), np.int32(step), device=dev)
            errs.append(None)
        except cb.OutOfBoundsError as e:
            errs.append(str(e))
        outs.append(out)
    assert errs[0] == errs[1]
    if errs[0] is None:
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5)


@cb.kernel
def rare_branch(q: Mut[Array[f64]], d: Array[f64], a: Array[f64], b: Array[f64], floor: f64):
    """ENERGY's shape: a branch on loaded data whose side loads and takes a square root."""
    i = cb.ABSOLUTE_POS
    if i < len(q):
        if d[i] <= 0.0:
            s = a[i] * b[i] - d[i]
            r = floor
            if s > floor:
                r = cb.sqrt(s)
            q[i] = r * a[i] + b[i]


@pytest.mark.parametrize("taken", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("plane,dim", [(8, 100), (32, 256), (1, 7)])
def test_branch_on_loaded_data_runs_as_gang(taken, plane, dim):
    """A gang runs a side only where some lane takes it; results match the interpreter whether
    no unit, some or all take the branch, and units that skip it leave the output alone."""
    n = 1000
    r = np.random.default_rng(int(taken * 10) + dim)
    d = np.where(r.random(n) < taken, -r.random(n), r.random(n) + 0.1)
    a, b = r.random(n) * 2, r.random(n)
    src = rare_branch.source(np.zeros(n), d, a, b, 0.25, device="cpu", dim=dim)
    assert "g_head" in src and "gif_run" in src
    c, i = both(rare_branch, -(-n // dim), dim, lambda: [np.full(n, np.nan), d, a, b, np.float64(0.25)], plane)
    np.testing.assert_array_equal(c[0], i[0])
    assert np.isnan(c[0][d > 0]).all() and not np.isnan(c[0][d <= 0]).any()


def test_guard_and_cheap_branches_stay_unit_loops():
    """ENERGY's fourth loop: a bounds guard and two clamps, which LLVM's if-conversion does best."""
    from cubepy.bench.apps.energy import energy4

    n = 512
    src = energy4.source(np.zeros(n), np.zeros(n), 0.1, 0.0, device="cpu", dim=256)
    assert "g_head" not in src and "u_head" in src


@cb.kernel
def poly_any(x: Array, y: Mut[Array], iters: i32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        acc = x[i] * 0.0
        for _ in range(iters):
            acc = acc * x[i] + 0.5
        y[i] = acc


@pytest.mark.parametrize("dtype,lanes", [(np.float32, 32), (np.float64, 16)])
def test_gang_width_is_four_vectors_of_the_kernels_float(dtype, lanes):
    """A gang is four SIMD vectors of the widest float the kernel computes in (AVX2 here: 8 f32,
    4 f64): 32 f64 lanes would be 8 ymm registers a value, and a few live values spill."""
    x = np.random.default_rng(3).random(64).astype(dtype)
    dev = cb.device("cpu", isa="avx2")
    src = poly_any.source(x, x.copy(), 3, device=dev, dim=64)
    assert f"<{lanes} x {'float' if dtype == np.float32 else 'double'}>" in src
    y = np.full(64, np.nan, dtype)
    poly_any[1, 64](x, y, 3, device=dev)
    np.testing.assert_allclose(y, ((0.5 * x + 0.5) * x + 0.5), rtol=1e-6)


def test_fuzz_kernels_run_as_gangs_wherever_they_can(monkeypatch):
    """The gang emitter on every region it can emit, not only where the heuristics choose it:
    random kernels of the differential fuzzer (gathers, scatters, loops, branches, early returns)
    must give the interpreter's answer at plane size 8 (CI's fuzzer makes few gangs)."""
    from cubepy.backends.cpu.gang_choice import GangChoiceMixin

    from tests.fuzz.campaign import check

    gangs = []

    def every_lowerable_region(self, ops):
        lowerable = self._gang_lowerable(ops)[0]
        gangs.append(lowerable)
        return lowerable
    monkeypatch.setattr(GangChoiceMixin, "_gang_ok", every_lowerable_region)
    monkeypatch.setenv("CUBEPY_TRACE_INDEX", "0")      # a trace on disk would bring back its own build
    failed, compared = {}, 0
    for seed in range(622400000, 622400040):           # at LLVM -O0: the gangs' code as emitted
        status = check(seed, ("cpu-p8-O0",), model=False)["targets"].get("cpu-p8-O0", ("invalid", ""))
        compared += status[0] == "ok"
        if status[0] in ("error", "mismatch"):
            failed[seed] = status
    assert not failed, failed
    assert compared >= 8 and sum(gangs) >= 8, (compared, sum(gangs))


@cb.kernel
def table_reads(x: Array[f64], coeff: Array[f64], shift: Array[i32], trips: Array[i32], out: Mut[Array[f64]]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        s = 0.0
        for j in range(trips[i]):
            s += coeff[j + shift[i]] * x[i + j]
        out[i] = s


@pytest.mark.parametrize("plane,dim", [(8, 256), (32, 100), (1, 7)])
def test_a_table_read_at_one_index_on_every_lane_matches_the_interpreter(monkeypatch, plane, dim):
    """A gang loads ``coeff[k]`` once and gives it to every lane when all active lanes read the
    same k (FIR's taps), and gathers when they do not: blocks of units sharing ``shift`` and trip
    count, sharing ``shift`` with lanes whose loop has ended, mixing both, and a last gang whose
    lanes past the end are off."""
    from cubepy.backends.cpu.gang_choice import GangChoiceMixin

    monkeypatch.setattr(GangChoiceMixin, "_gang_ok", lambda self, ops: self._gang_lowerable(ops)[0])
    monkeypatch.setenv("CUBEPY_TRACE_INDEX", "0")
    n, taps = 1000, 9
    r = np.random.default_rng(plane + dim)
    x, coeff = r.random(n + taps), r.random(taps + 1)
    u = np.arange(n)
    # shift shared by all units but in [400, 600) and from 850; trip counts shared below 600
    shift = np.where(((u >= 400) & (u < 600)) | (u >= 850), r.integers(0, 2, n), 0).astype(np.int32)
    trips = np.where(u < 600, taps, r.integers(0, taps + 1, n)).astype(np.int32)
    assert "ga_uniform" in table_reads.source(x, coeff, shift, trips, np.zeros(n), device="cpu", dim=dim)
    c, i = both(table_reads, -(-n // dim), dim, lambda: [x, coeff, shift, trips, np.full(n, np.nan)], plane)
    np.testing.assert_array_equal(c[4], i[4])
    ref = [sum(coeff[j + shift[u]] * x[u + j] for j in range(trips[u])) for u in range(n)]
    np.testing.assert_allclose(c[4], ref, rtol=1e-12)


@cb.kernel
def corners(zones: Array[i64], x: Array[f64], out: Mut[Array[f64]], jp: i32):
    ii = cb.ABSOLUTE_POS
    if ii < len(zones):
        i = zones[ii]
        out[i] = x[i + 1] + 2.0 * x[i + jp] - x[i] * x[i + 1 + jp]


def _zone_list(n_rows: int, row: int, jp: int, rng) -> np.ndarray:
    """A mesh's real zones: rows of consecutive zones with a gap between rows, the last rows
    shuffled (a gang of those gathers)."""
    zones = np.concatenate([np.arange(r * jp + 1, r * jp + 1 + row) for r in range(n_rows)]).astype(np.int64)
    tail = zones[-3 * row:]
    zones[-3 * row:] = rng.permutation(tail)
    return zones


@pytest.mark.parametrize("checked", [True, False])
@pytest.mark.parametrize("plane,dim", [(8, 256), (32, 100), (1, 7)])
def test_gathers_through_a_zone_list_run_as_gangs(checked, plane, dim):
    """Accesses at indices read from memory make a loop-free region a gang one vector wide, which
    loads a vector where its lanes' zones are consecutive and gathers where they are not."""
    from cubepy.backends.cpu.jit import simd_f32_lanes

    rng = np.random.default_rng(plane + dim)
    jp = 53
    zones = _zone_list(20, 50, jp, rng)
    x = rng.random(21 * jp + 2)
    src = corners.source(zones, x, np.zeros_like(x), np.int32(jp), device="cpu", dim=dim, checked=checked)
    assert "g_head" in src and f"<{simd_f32_lanes() // 2} x double>" in src
    c, i = both(corners, -(-len(zones) // dim), dim,
                lambda: [zones, x, np.full_like(x, np.nan), np.int32(jp)], plane)
    np.testing.assert_array_equal(c[2], i[2])
    want = np.full_like(x, np.nan)
    want[zones] = x[zones + 1] + 2.0 * x[zones + jp] - x[zones] * x[zones + 1 + jp]
    np.testing.assert_array_equal(c[2], want)


@pytest.mark.parametrize("bad", [0, 333, 999])
def test_a_zone_out_of_range_in_a_gang_is_reported_as_the_interpreter_does(bad):
    rng = np.random.default_rng(bad)
    jp = 53
    zones = _zone_list(20, 50, jp, rng)
    zones[bad] = 21 * jp + 1                  # its x[i + 1] is the first access out of bounds
    x = rng.random(21 * jp + 2)
    msgs, outs = [], []
    for dev in ("cpu", "interp"):
        out = np.full_like(x, np.nan)
        with pytest.raises(cb.OutOfBoundsError) as e:
            corners[4, 256](zones, x, out, np.int32(jp), device=dev)
        msgs.append(str(e.value))
        outs.append(out)
    assert msgs[0] == msgs[1] and "array 'x'" in msgs[0]
    # the gang of the bad zone runs the checked side for all its lanes: the others' values too
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.isnan(outs[0][zones]).any()


@cb.kernel
def grid_stride_axpy(x: Array[f32], y: Mut[Array[f32]], n: i32, step: i32):
    for j in range(cb.ABSOLUTE_POS, n, step):
        y[j] = 2.0 * x[j] + y[j]


@pytest.mark.parametrize("isa", ["avx2", "native"])
@pytest.mark.parametrize("n", [1000, 960, 7])
def test_gangs_without_native_masks_take_whole_vectors_only_where_every_lane_is_active(isa, n):
    """AVX2 has no mask registers: a gang whose lanes are all active loads and stores plain
    vectors (`vmaskmovps` cost a Zen 4 3.7x on a grid-stride sum: benchmarks/cpu/gang_masks.py),
    and a gang with inactive lanes (the loop's last step, the padded second gang of a 48-unit
    cube) still writes only its active lanes' elements. AVX-512 code keeps its masked accesses."""
    from cubepy.backends.cpu import jit

    if isa == "native" and not jit.host_has("avx512f"):
        pytest.skip("the host has no AVX-512")
    rng = np.random.default_rng(n)
    x, y0 = rng.random(1100, dtype=np.float32), rng.random(1100, dtype=np.float32)
    dev = cb.device("cpu", isa=isa)
    src = grid_stride_axpy.source(x, y0.copy(), n, 96, device=dev, dim=48, form="source")
    assert "g_head" in src and ("ga_full" in src) == (isa == "avx2")
    y, want = y0.copy(), y0.copy()
    grid_stride_axpy[2, 48](x, y, np.int32(n), np.int32(96), device=dev)
    grid_stride_axpy[2, 48](x, want, np.int32(n), np.int32(96), device="interp")
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(y[n:], y0[n:])
    np.testing.assert_array_equal(y[:n], np.float32(2.0) * x[:n] + y0[:n])
