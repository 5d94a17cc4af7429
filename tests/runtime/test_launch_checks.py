"""Checks per launch (cubepy.ir.cube_checks.launch_test, cubepy.runtime.launch_checks): the host
decides before a launch that every access the cube's test covers is inside its array for every
unit, and the kernel then runs its unchecked code without evaluating the cube's test.

Soundness is tested three ways: the answer against brute force over every unit of random launches
(indices near the edges of i32 included), the interpreter's proof oracle on the versioned kernels
(tests/ir/test_cube_checks.py runs its per-access comparisons on ``interp-launch`` too), and the
conformance suite, whose ``interp-cubes`` device decides launches as CUDA does.
"""

from __future__ import annotations

import numpy as np
import pytest
from cubepy.backends.cstyle import CUDA, render

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i32
from cubepy.ir.nodes import walk
from cubepy.runtime.launch_checks import launch_check
from tests.conftest import poisoned

LAUNCH = dict(checks_per_cube=True, checks_per_launch=True)


def _device(**extra):
    return cb.device("interp", **LAUNCH, **extra)


@cb.kernel
def update(e: Mut[Array[f64]], a: Array[f64], b: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(e):
        e[i] = a[i] - 0.5 * b[i]


@cb.kernel
def corners(x: Array[f64], out: Mut[Array[f64]], jp: i32, kp: i32, lo: i32, hi: i32):
    i = lo + cb.ABSOLUTE_POS
    if i < hi:
        out[i] = x[i] + x[i + 1 + jp] - x[i + jp + kp + 1]


@cb.kernel
def tiles(x: Array[f32], out: Mut[Array[f32]], c: i32, d: i32):
    j = cb.CUBE_POS_Y * c + cb.CUBE_POS_X * cb.CUBE_DIM_X + cb.UNIT_POS_X + d
    out[cb.ABSOLUTE_POS] = x[j]


@cb.kernel
def squares(x: Array[f32], out: Mut[Array[f32]]):
    # CUBE_POS * CUBE_POS is known per cube but has no interval over a launch: no launch test
    j = cb.CUBE_POS * cb.CUBE_POS + cb.UNIT_POS
    out[cb.ABSOLUTE_POS] = x[j]


@cb.kernel
def halves(x: Array[f32], out: Mut[Array[f32]]):
    j = cb.CUBE_POS // 2 * 64 + cb.UNIT_POS
    out[cb.ABSOLUTE_POS] = x[j]


@cb.kernel
def rows_of(x: Array[f32], out: Mut[Array[f32]], w: i32, d: i32):
    # a tile's row and column from one counter, by a divisor given at run time (0 and negative
    # ones included: the host's test must answer no for those)
    for f in range(cb.UNIT_POS, 4 * cb.CUBE_DIM, cb.CUBE_DIM):
        out[cb.CUBE_POS * 4 * cb.CUBE_DIM + f] = x[(cb.CUBE_POS + f // w) * d + f % w]


def _answer(kernel, count, dim, *args) -> bool:
    compiled = kernel.compile(*args, dim=dim, device=_device())
    check = launch_check(compiled.ir_module)
    assert check is not None
    view = [a for a in args]
    return check.evaluate(tuple(count) + (1,) * (3 - len(count)), tuple(dim) + (1,) * (3 - len(dim)), view)


def test_a_checked_kernel_reads_the_hosts_answer_before_its_cube_test():
    x = np.ones(1000)
    compiled = update.compile(x.copy(), x, x, dim=256, device=_device())
    assert compiled.ir_module.launch_test is not None
    codes = [op.opcode for op in compiled.ir_module.body.ops]
    assert codes.count("launch_in_bounds") == 1 and codes[-1] == "if"
    unsure = next(op for op in compiled.ir_module.body.ops if op.opcode == "if" and not op.attrs)
    assert any(op.opcode == "lt" for op in walk(unsure.blocks[0]))       # the cube's test, only where unsure
    rendered = render(compiled.ir_module, CUDA)
    assert "int cb_launch_ok" in rendered.source and "#define CB_LAUNCH_OK (cb_launch_ok != 0)" in rendered.source
    assert [s.kind for s in rendered.args].count("launch_ok") == 1


def test_only_checked_kernels_on_devices_that_decide_launches_get_a_launch_test():
    x = np.ones(1000)
    assert update.compile(x.copy(), x, x, dim=256, device=_device(), checked=False).ir_module.launch_test is None
    assert update.compile(x.copy(), x, x, dim=256, device=cb.device("interp", checks_per_cube=True)) \
        .ir_module.launch_test is None
    x32 = np.ones(1000, np.float32)
    assert squares.compile(x32, x32.copy(), dim=64, device=_device()).ir_module.launch_test is None


@pytest.mark.parametrize("count, nx, expected", [(4, 128, True), (4, 127, False), (3, 128, True), (3, 64, False),
                                                 (5, 192, True), (5, 191, False)])
def test_a_floor_division_of_the_cube_position_over_a_launch(count, nx, expected):
    # cube c reads x[c // 2 * 64 + u]: the last cube reaches (count - 1) // 2 * 64 + 63
    x = np.ones(nx, np.float32)
    assert _answer(halves, (count,), (64,), x, np.ones(count * 64, np.float32)) is expected


def _brute_force_rows(count, dim, nx, nout, w, d) -> bool:
    """Whether every unit of a launch of `rows_of` stays inside its arrays with no i32 wrap."""
    for c in range(count):
        for u in range(dim):
            for f in range(u, 4 * dim, dim):
                q, r = (f // w, f % w) if w else (0, 0)           # cubepy's // and % by 0 give 0
                parts = (c + q, (c + q) * d, (c + q) * d + r, c * 4 * dim, c * 4 * dim + f)
                if any(not -(1 << 31) <= p < (1 << 31) for p in parts):
                    return False
                if not (0 <= parts[2] < nx and 0 <= parts[4] < nout):
                    return False
    return True


def test_floor_divisions_and_remainders_by_run_time_divisors_are_sound_on_random_launches(rng):
    edges = [0, 1, 2, 3, 7, 16, 64, -1, -3, (1 << 31) - 1, -(1 << 31), 1 << 20]
    yes = 0
    for _ in range(150):
        count, dim = int(rng.integers(1, 4)), int(rng.choice([4, 8]))
        w = int(rng.choice(edges + [int(rng.integers(-20, 20))]))
        d = int(rng.choice(edges + [int(rng.integers(-20, 40))]))
        nx, nout = int(rng.integers(0, 400)), int(rng.choice([count * 4 * dim, count * 4 * dim - 1]))
        x, out = np.ones(nx, np.float32), np.ones(nout, np.float32)
        answer = _answer(rows_of, (count,), (dim,), x, out, w, d)
        truth = _brute_force_rows(count, dim, nx, nout, w, d)
        assert not answer or truth, (count, dim, w, d, nx, nout)
        yes += answer
    assert yes > 0


@pytest.mark.parametrize("w, d, nx", [(8, 8, 100), (5, 7, 100), (8, 8, 40), (0, 3, 100), (-2, 3, 100), (3, -1, 100)])
def test_run_time_divisors_give_the_per_access_answers(w, d, nx, rng):
    x = rng.standard_normal(nx).astype(np.float32)
    results = []
    for dev in (_device(), cb.device("interp")):
        out = poisoned(3 * 4 * 8, np.float32)
        try:
            rows_of[3, 8](x, out, w, d, device=dev)
            results.append(("ok", out))
        except cb.OutOfBoundsError as err:
            results.append(("error", str(err).splitlines()[0]))
    assert results[0][0] == results[1][0], results
    if results[0][0] == "ok":
        np.testing.assert_array_equal(results[0][1], results[1][1])
    else:
        assert results[0][1] == results[1][1]


@pytest.mark.parametrize("ne, na, nb, count, expected", [
    (1000, 1000, 1000, 4, True),          # the ragged last cube: the guard bounds it
    (1000, 1000, 1000, 40, True),         # far more cubes than elements
    (1000, 1200, 1000, 4, True),
    (1000, 999, 1000, 4, False),
    (1000, 1000, 0, 4, False),
    (0, 0, 0, 4, True),                   # no unit passes the guard
])
def test_the_answer_for_arrays_of_other_lengths(ne, na, nb, count, expected):
    assert _answer(update, (count,), (256,), np.ones(ne), np.ones(na), np.ones(nb)) is expected


@pytest.mark.parametrize("jp, kp, lo, hi, expected", [
    (10, 100, 0, 4000, True), (10, 100, 0, 4900, False), (10, 100, -1, 4000, False),
    (-10, 100, 8, 4000, False), (-10, 100, 9, 4000, True), (10, 100, 0, 4889, True), (10, 100, 0, 4890, False),
])
def test_the_answer_with_offsets_from_scalars(jp, kp, lo, hi, expected):
    # 77 cubes of 64 units reach index 4927 before the guard i < hi
    assert _answer(corners, (77,), (64,), np.ones(5000), np.ones(5000), jp, kp, lo, hi) is expected


def _brute_force_tiles(count, dim, nx, nout, c, d) -> bool:
    """Whether every unit of the launch reads and writes inside its arrays with no i32 wrap."""
    gx, gy = count
    for cy in range(gy):
        for cx in range(gx):
            for u in range(dim):
                parts = (cy * c, cx * dim, cy * c + cx * dim, cy * c + cx * dim + u, cy * c + cx * dim + u + d)
                if any(not -(1 << 31) <= p < (1 << 31) for p in parts):
                    return False
                j = parts[-1]
                a = (cy * gx + cx) * dim + u
                if not (0 <= j < nx and a < nout):
                    return False
    return True


def test_the_answer_is_sound_on_random_launches(rng):
    edges = [0, 1, 5, 63, 64, 1000, (1 << 31) - 1, -(1 << 31), (1 << 30), -5, -64]
    yes = 0
    for _ in range(200):
        gx, gy, dim = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.choice([8, 16]))
        c = int(rng.choice(edges + [int(rng.integers(-100, 100))]))
        d = int(rng.choice(edges + [int(rng.integers(-100, 100))]))
        nx, nout = int(rng.integers(0, 300)), int(rng.integers(0, 200))
        x, out = np.ones(nx, np.float32), np.ones(nout, np.float32)
        answer = _answer(tiles, (gx, gy), (dim,), x, out, c, d)
        truth = _brute_force_tiles((gx, gy), dim, nx, nout, c, d)
        assert not answer or truth, (gx, gy, dim, c, d, nx, nout)
        yes += answer
    assert yes > 0                        # the test decides some launches, not none


@pytest.mark.parametrize("count", [(3, 2), (4, 1)])
def test_launches_either_way_give_the_per_access_answers(count, rng):
    # in bounds (the host's yes), and out of bounds (no: the cube's test and the report)
    x = rng.standard_normal(200).astype(np.float32)
    for c, d, n_out in [(16, 0, 96), (16, 1, 96), (16, 200, 96), (8, -1, 96), (64, 0, 48)]:
        results = []
        for dev in (_device(), cb.device("interp")):
            out = poisoned(n_out, np.float32)
            try:
                tiles[count, 16](x, out, c, d, device=dev)
                results.append(("ok", out))
            except cb.OutOfBoundsError as err:
                results.append(("error", str(err).splitlines()[0]))
        assert results[0][0] == results[1][0], (c, d, n_out, results)
        if results[0][0] == "ok":
            np.testing.assert_array_equal(results[0][1], results[1][1])
        else:
            assert results[0][1] == results[1][1]


def test_the_warm_paths_function_has_the_launch_shape_folded_in():
    x = np.ones(1000)
    compiled = corners.compile(x, x.copy(), 1, 2, 0, 10, dim=64, device=_device())
    check = launch_check(compiled.ir_module)
    known = {("count", 0): 16, ("count", 1): 1, ("count", 2): 1, ("dim", 0): 64, ("dim", 1): 1, ("dim", 2): 1}
    source, answer = check.function(known)
    assert source.startswith("def ok(x0, x1, x2, x3, x4, x5):")      # the extents of x and out, jp, kp, lo, hi
    left = [i for i in check.inputs if i not in known]
    assert [kind for kind, *_ in left].count("scalar") == 4
    values = {("extent", 0, 0): 1000, ("extent", 1, 0): 1000, ("scalar", 2): 1, ("scalar", 3): 2,
              ("scalar", 4): 0, ("scalar", 5): 10}
    assert answer(*(values[i] for i in left)) is True
    values[("scalar", 3)] = 1000
    assert answer(*(values[i] for i in left)) is False
