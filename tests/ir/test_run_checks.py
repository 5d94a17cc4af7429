"""Checked loads tested once per run of code (cubepy.ir.run_checks), as CUDA and HIP lower them:
gathers through an index array give the answers and the out-of-bounds reports of per-load checks,
also where one load's index comes from another's, a variable is reassigned in a branch, or a
plane op and a store split the code. The interpreter runs the versioned IR, so every test
compares it with the interpreter's plain per-load checks."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i8, i32, i64, u8
from cubepy.ir.nodes import walk
from tests.conftest import poisoned

PLAIN = {"plane_dim": 32}
AS_GPUS = {"plane_dim": 32, "checks_per_cube": True, "checks_per_run": True}


def compiled_ir(kernel, *args, dim=64):
    return kernel.compile(*args, dim=dim, device=cb.device("interp", **AS_GPUS)).ir_module.body


def _runs(kernel, *args, dim=64) -> list:
    return [op for op in walk(compiled_ir(kernel, *args, dim=dim)) if op.opcode == "if" and "run_checks" in op.attrs]


def _outcome(kernel, count, dim, args, options):
    """What a launch leaves: the outputs, and the out-of-bounds report's first line or None."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    dev = cb.device("interp", **options)
    try:
        kernel[count, dim](*args, device=dev)
        error = None
    except cb.OutOfBoundsError as err:
        error = str(err).splitlines()[0]
    return error, [a for a in args if isinstance(a, np.ndarray)]


def _same_as_per_load_checks(kernel, count, dim, args):
    plain_error, plain = _outcome(kernel, count, dim, args, PLAIN)
    error, got = _outcome(kernel, count, dim, args, AS_GPUS)
    assert error == plain_error
    for want, have in zip(plain, got):
        np.testing.assert_array_equal(have, want)
    return error, got


@cb.kernel
def stencil(zones: Array[i64], x: Array[f64], y: Mut[Array[f64]], jp: i32):
    ii = cb.ABSOLUTE_POS
    if ii < len(zones):
        i = zones[ii]
        y[ii] = x[i - 1] + 2.0 * x[i] + x[i + 1] - x[i + jp]


@cb.kernel
def chained(zones: Array[i32], idx: Array[i32], x: Array[f32], y: Mut[Array[f32]]):
    ii = cb.ABSOLUTE_POS
    if ii < len(zones):
        i = zones[ii]
        j = idx[i] + idx[i + 1]
        y[ii] = x[j] * x[j + 1]


@cb.kernel
def reassigned(zones: Array[i32], flag: Array[i32], x: Array[f32], y: Mut[Array[f32]]):
    ii = cb.ABSOLUTE_POS
    if ii < len(zones):
        i = zones[ii]
        if flag[ii] > 0:
            i = i + 2
        y[ii] = x[i] - x[i - 1]


@cb.kernel
def split(zones: Array[i32], x: Array[f32], y: Mut[Array[f32]], z: Mut[Array[f32]]):
    i = zones[cb.ABSOLUTE_POS]
    a = x[i] + x[i + 1]
    z[cb.ABSOLUTE_POS] = a
    s = cb.plane_sum(x[i + 2] + x[i + 3])
    y[cb.ABSOLUTE_POS] = s + x[i - 1] * x[i]


def _stencil_args(rng, n=300, m=200):
    zones = rng.integers(6, n - 1, m).astype(np.int64)
    return [zones, rng.standard_normal(n), poisoned(m, np.float64), -5]


def test_the_loads_of_a_gather_are_tested_once_before_the_run_and_give_the_same_outputs(rng):
    args = _stencil_args(rng)
    runs = _runs(stencil, *args)
    assert [op.attrs["run_checks"] for op in runs] == [4]
    body = compiled_ir(stencil, *args)
    block = next(b for op in walk(body) for b in op.blocks if any("run_checks" in o.attrs for o in b.ops))
    tests = [op for op in block.ops if op.opcode == "lt"]
    assert len(tests) == 2            # x[i - 1], x[i], x[i + 1] in one compare; x[i + jp] in another
    fast, slow = runs[0].blocks
    assert not any(op.opcode == "report_oob" for op in walk(fast))
    assert sum(op.opcode == "report_oob" for op in walk(slow)) == 4
    error, (zones, x, y) = _same_as_per_load_checks(stencil, 4, 64, args)
    assert error is None
    np.testing.assert_array_equal(y, x[zones - 1] + 2.0 * x[zones] + x[zones + 1] - x[zones - 5])


def test_only_what_the_tests_read_is_computed_before_the_run(rng):
    # x[i + 1]'s index is computed on each side where it is loaded: computed before the run, every
    # such index stays live across the checked side's branches (MATVEC_3D_STENCIL's tuned port took
    # 54 registers instead of 32 on sm_90)
    body = compiled_ir(stencil, *_stencil_args(rng))
    block = next(b for op in walk(body) for b in op.blocks if any("run_checks" in o.attrs for o in b.ops))
    run = next(op for op in block.ops if "run_checks" in op.attrs)

    def plus_one(ops) -> int:
        return sum(op.opcode == "add" and any(getattr(a, "value", None) == 1 for a in op.args) for op in ops)
    assert plus_one(block.ops[:block.ops.index(run)]) == 0
    assert [plus_one(side.ops) for side in run.blocks] == [1, 1]


@cb.kernel
def plane_op_after_a_run(x: Array[f32], z: Array[i8], y: Mut[Array[i32]]):
    t = cb.UNIT_POS
    v = cb.select(i64(x[i64(1) % len(x)]) < i64(z[i32(x[i32(3) % len(x)]) % len(z)]), i32(-2), i32(7))
    for _ in cb.unroll(range(2)):
        if t // cb.PLANE_DIM == 0:         # the first test is computed in the versioned run
            y[cb.ABSOLUTE_POS] = i32(cb.plane_exclusive_sum(u8(1))) + v


def test_a_value_the_run_computes_for_later_code_keeps_its_uniformity(rng):
    # found by the fuzzer (seed 758): a plane-uniform guard computed inside the versioned run and
    # read after it must not become a per-unit value, or the plane op under it is refused
    args = [rng.standard_normal(10).astype(np.float32), rng.integers(-5, 5, 10).astype(np.int8),
            np.full(384, -99, np.int32)]
    assert len(_runs(plane_op_after_a_run, *args, dim=128)) == 1
    error, (x, z, y) = _same_as_per_load_checks(plane_op_after_a_run, 3, 128, args)
    v = -2 if int(x[1]) < int(z[int(x[3]) % 10]) else 7
    first = np.arange(384) % 128 < 32
    assert error is None and (y[first] == np.tile(np.arange(32), 3) + v).all() and (y[~first] == -99).all()


# x[i + 1] at i = 2**63 - 1 wraps to the most negative index: one test covers x[i - 1 .. i + 1]
@pytest.mark.parametrize("bad", [-1, 298, 299, 300, 2**31 + 7, -2**40, 2**63 - 1, -2**63, -2**63 + 1])
def test_an_index_out_of_bounds_is_reported_as_per_load_checks_report_it(rng, bad):
    args = _stencil_args(rng)
    args[0][[17, 90]] = [bad, 3]
    error, _ = _same_as_per_load_checks(stencil, 4, 64, args)
    assert error is not None and "'x'" in error


def test_a_load_whose_index_a_checked_load_gives_starts_a_new_run(rng):
    n = 100
    zones = rng.integers(0, n - 1, 64).astype(np.int32)
    idx = rng.integers(0, n // 2 - 1, n).astype(np.int32)
    args = [zones, idx, rng.standard_normal(n).astype(np.float32), poisoned(64, np.float32)]
    assert [op.attrs["run_checks"] for op in _runs(chained, *args)] == [2, 2]
    error, (_, _, x, y) = _same_as_per_load_checks(chained, 2, 32, args)
    assert error is None
    j = idx[zones] + idx[zones + 1]
    np.testing.assert_array_equal(y, x[j] * x[j + 1])
    args[1][zones[5]] = n                      # j too large for x: the second run reports it
    error, _ = _same_as_per_load_checks(chained, 2, 32, args)
    assert "'x'" in error


def test_a_variable_reassigned_in_a_branch_is_read_after_it(rng):
    n = 50
    zones = rng.integers(1, n - 3, 64).astype(np.int32)
    flag = rng.integers(-1, 2, 64).astype(np.int32)
    x = rng.standard_normal(n).astype(np.float32)
    error, (_, _, _, y) = _same_as_per_load_checks(reassigned, 2, 32, [zones, flag, x, poisoned(64, np.float32)])
    assert error is None
    i = zones + 2 * (flag > 0)
    np.testing.assert_array_equal(y, x[i] - x[i - 1])


def test_stores_and_plane_ops_end_runs(rng):
    n = 80
    zones = rng.integers(1, n - 4, 64).astype(np.int32)
    args = [zones, rng.standard_normal(n).astype(np.float32), poisoned(64, np.float32), poisoned(64, np.float32)]
    assert [op.attrs["run_checks"] for op in _runs(split, *args, dim=32)] == [2, 2, 2]
    error, _ = _same_as_per_load_checks(split, 2, 32, args)
    assert error is None
    args[0][40] = n - 2                        # x[i + 2] is in bounds, x[i + 3] is not
    error, _ = _same_as_per_load_checks(split, 2, 32, args)
    assert error is not None and "'x'" in error


@cb.kernel
def looped(zones: Array[i32], x: Array[f32], y: Mut[Array[f32]]):
    u = cb.ABSOLUTE_POS
    i = zones[u]
    c = x[3] + x[4]                  # the same for every unit, in a run with per-unit loads
    s = f32(zones[0] * 0)
    w = i32(0)
    while w < 3:
        w += 1                       # the loop's counter is stored inside a versioned run
        s += x[i + w] * x[i - w]
        s += cb.plane_sum(x[i])
    if c > -100.0:
        s += cb.plane_max(s + x[i + 1] - x[i - 1])
    y[u] = s


def test_a_versioned_run_keeps_plane_ops_after_it_plane_uniform(rng):
    n = 60
    zones = rng.integers(4, n - 4, 64).astype(np.int32)
    args = [zones, rng.standard_normal(n).astype(np.float32), poisoned(64, np.float32)]
    assert len(_runs(looped, *args, dim=32)) >= 2
    error, _ = _same_as_per_load_checks(looped, 2, 32, args)
    assert error is None


@cb.kernel
def scatter_back(zones: Array[i64], x: Array[f64], y: Mut[Array[f64]]):
    ii = cb.ABSOLUTE_POS
    if ii < len(zones):
        i = zones[ii]
        y[i] = x[i - 1] + 2.0 * x[i + 1]


@pytest.mark.parametrize("bad", [None, "y", "x"])
def test_a_store_that_closes_a_run_is_tested_with_its_loads(rng, bad):
    """DEL_DOT_VEC_2D's ``div[i] = ...`` after its loads: one test covers the loads and the store
    (the fast side stores unchecked), and a zone out of range for ``y`` only, or for ``x``, is
    reported as per-access checks report it."""
    n = 120
    zones = rng.permutation(np.arange(1, n - 12))[:64].astype(np.int64)
    x, y = rng.standard_normal(n), poisoned(n - 10, np.float64)
    if bad == "y":
        zones[21] = n - 5                    # x[i - 1], x[i + 1] in bounds, y[i] not
    elif bad == "x":
        zones[21] = n - 1                    # x[i + 1] is the first access out of bounds
    args = [zones, x, y]
    runs = _runs(scatter_back, *args, dim=32)
    assert [op.attrs["run_checks"] for op in runs] == [3]
    fast, slow = runs[0].blocks
    assert not any(op.opcode == "report_oob" for op in walk(fast)) and any(op.opcode == "store" for op in walk(fast))
    error, (_, _, got) = _same_as_per_load_checks(scatter_back, 2, 32, args)
    if bad is None:
        assert error is None
        want = poisoned(n - 10, np.float64)
        want[zones] = x[zones - 1] + 2.0 * x[zones + 1]
        np.testing.assert_array_equal(got, want)
    else:
        assert error is not None and f"'{bad}'" in error


@cb.kernel
def exit_then_loop(x: Array[f64], src: Array[i32], out: Mut[Array[f64]], trips: i32):
    g = cb.ABSOLUTE_POS
    if x[len(x) - 1] <= x[1]:               # the kernel's first run: two checked loads
        return
    k = 0
    while k < trips:
        k += 1
        out[g * 4 + k] = x[src[k % len(src)] % len(x)] + f64(k)


@pytest.mark.parametrize("options", [{"checks_per_run": True}, {"checks_per_run": True, "checks_per_cube": True}],
                         ids=["per-run", "per-cube-and-run"])
def test_an_extent_read_by_a_later_run_stays_outside_the_first_runs_versions(rng, options):
    """The fuzzer's seed 640890155: without per-cube versioning first, the kernel's first run
    held ``out``'s extent; versioning it copied the extent into both sides, and the loop's tests
    read an extent defined nowhere (a VerifyError before the fix)."""
    x, src = rng.standard_normal(40), rng.integers(0, 40, 9).astype(np.int32)
    x[-1], x[1] = 2.0, -1.0                 # no unit returns
    args = [x, src, poisoned(260, np.float64), 3]
    plain_error, (_, _, want) = _outcome(exit_then_loop, 2, 32, args, PLAIN)
    error, (_, _, got) = _outcome(exit_then_loop, 2, 32, args, {"plane_dim": 32, **options})
    assert plain_error is None and error is None
    np.testing.assert_array_equal(got, want)
    assert not np.isnan(want[1:64 * 4:4]).any() and np.isnan(want[0::4]).all()
