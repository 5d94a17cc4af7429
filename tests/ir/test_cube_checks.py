"""Bounds checks tested once per cube (cubepy.ir.cube_checks): the CPU's versioned kernels give the
answers and the out-of-bounds reports of per-access checks, on every kind of affine index and on
parameters chosen to make the 32-bit arithmetic wrap. The interpreter runs the versioned IR with
its proof oracle on (a proven access out of bounds is an AssertionError), so an unsound interval
fails here even where the memory it would touch is harmless."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32
from cubepy.ir.nodes import walk
from tests.conftest import poisoned
from tests.kernels import triad

PER_CUBE = {"interp-per-cube": lambda: cb.device("interp", checks_per_cube=True),
            "interp-guards": lambda: cb.device("interp", checks_per_cube=True, guards_per_cube=True),
            "interp-launch": lambda: cb.device("interp", checks_per_cube=True, checks_per_launch=True),
            "cpu": lambda: cb.device("cpu")}


def _switch(compiled) -> list:
    return [op for op in walk(compiled.ir_module.body) if op.opcode == "if" and op.attrs.get("cube_checks")]


@cb.kernel
def affine(x: Array[f32], out: Mut[Array[f32]], c: i32, d: i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i * c + d]


@cb.kernel
def window(x: Array[f32], out: Mut[Array[f32]], start: i32, stop: i32, e: i32, d: i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        s = f32(0.0)
        for j in range(start, stop):
            s += x[i + j * e + d]
        out[i] = s


@cb.kernel
def tile2d(x: Array[f32], out: Mut[Array[f32]], c: i32, d: i32):
    k = cb.UNIT_POS_Y * c + cb.UNIT_POS_X + d
    out[cb.ABSOLUTE_POS] = x[k]


def _outcome(kernel, count, dim, args, dev):
    """What a launch leaves: the outputs, or the out-of-bounds report's text."""
    dev = cb.device(dev) if isinstance(dev, str) else dev
    try:
        kernel[count, dim](*args, device=dev)
        dev.synchronize()
    except cb.OutOfBoundsError as err:
        return "error", str(err).splitlines()[0]
    return "ok", [a.copy() for a in args if isinstance(a, np.ndarray)]


def _same(a, b) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] == b[1]
    else:
        for p, q in zip(a[1], b[1]):
            np.testing.assert_array_equal(p, q)


def test_an_elementwise_kernel_is_versioned_and_its_fast_side_has_no_check():
    x = np.ones(1000, np.float32)
    compiled = triad.compile(x, x, x.copy(), 2.0, dim=256, device=cb.device("interp", checks_per_cube=True))
    switch, = _switch(compiled)
    fast, slow = switch.blocks
    assert not any(op.opcode == "report_oob" for op in walk(fast))
    assert sum(op.opcode == "report_oob" for op in walk(slow)) == 2            # y and z
    plain = triad.compile(x, x, x.copy(), 2.0, dim=256, device="interp")
    assert not _switch(plain)


@cb.kernel
def corners(x: Array[f32], out: Mut[Array[f32]], jp: i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        a, b = x[i], x[i + jp]          # names bound under control flow: locals (Vars) in the IR
        out[i] = a - b


def _vars(block) -> set:
    return {a.id for op in walk(block) for a in op.args if a.__class__.__name__ == "Var"}


def _guards(block) -> list:
    return [op for op in walk(block) if op.opcode == "if"]


@pytest.mark.parametrize("checked", [True, False])
def test_a_guard_every_unit_of_the_cube_passes_is_dropped_on_the_fast_side(checked):
    x = np.ones(1000, np.float32)
    dev = cb.device("interp", checks_per_cube=True, guards_per_cube=True)
    compiled = triad.compile(x, x, x.copy(), 2.0, dim=256, device=dev, checked=checked)
    switch, = _switch(compiled)
    fast, slow = switch.blocks           # one axis: only the last cube straddles, two versions
    assert [op.args[0].value for op in _guards(fast)] == [True]
    assert not isinstance(_guards(slow)[0].args[0], type(_guards(fast)[0].args[0]))
    # without guards_per_cube an unchecked kernel is not versioned
    plain = triad.compile(x, x, x.copy(), 2.0, dim=256, device=cb.device("interp", checks_per_cube=True),
                          checked=False)
    assert not _switch(plain)


@cb.kernel
def contraction(out: Mut[Array[f32]], a: Array[f32], b: Array[f32]):
    m = cb.ABSOLUTE_POS_X
    g = cb.ABSOLUTE_POS_Y
    if m < out.shape[1] and g < out.shape[0]:
        s = out[g, m]
        for d in range(b.shape[1]):
            s += a[m, d] * b[g, d]
        out[g, m] = s


def test_a_cube_at_a_guards_edge_runs_its_accesses_unchecked():
    """LTIMES' shape: 25 units of 32 in m pass the guard, so no cube passes it whole; the version
    for such cubes keeps the guard and drops the checks (each cube ran the checked body before)."""
    out, a, b = np.zeros((8, 25), np.float32), np.ones((25, 16), np.float32), np.ones((8, 16), np.float32)
    compiled = contraction.compile(out, a, b, dim=(32, 4), device=cb.device("interp", checks_per_cube=True,
                                                                             guards_per_cube=True))
    switch, = _switch(compiled)
    by_guards, = switch.blocks[0].ops
    fast, guarded = by_guards.blocks
    assert sum(op.opcode == "report_oob" for op in walk(switch.blocks[1])) == 2            # a and b
    for block in (fast, guarded):
        assert not any(op.opcode == "report_oob" for op in walk(block))
    assert _guards(fast)[0].args[0].value is True and not hasattr(_guards(guarded)[0].args[0], "value")


@pytest.mark.parametrize("name", PER_CUBE)
@pytest.mark.parametrize("nm, ng, nd, na", [(25, 8, 16, 25), (32, 8, 16, 32), (25, 7, 5, 25), (25, 8, 16, 24),
                                            (64, 8, 3, 64), (30, 9, 16, 30)])
def test_cubes_at_a_guards_edge_give_the_per_access_answer(name, nm, ng, nd, na, rng):
    # cubes of (32, 4): m's guard cut inside every cube (25, 30), at a cube's end (32, 64), g's
    # inside the last cube row (7, 9); a too short for m (na 24): a report as the interpreter's
    a = rng.standard_normal((na, nd)).astype(np.float32)
    b = rng.standard_normal((ng, nd)).astype(np.float32)
    start = rng.standard_normal((ng, nm)).astype(np.float32)
    count = (-(-nm // 32), -(-ng // 4))
    outcomes = [_outcome(contraction, count, (32, 4), [start.copy(), a, b], dev)
                for dev in (PER_CUBE[name](), "interp")]
    _same(*outcomes)
    if na == nm:
        np.testing.assert_allclose(outcomes[0][1][0], start + b @ a.T, rtol=1e-5, atol=1e-5)


@cb.kernel
def early_return(x: Array[f32], out: Mut[Array[f32]], n: i32):
    i = cb.ABSOLUTE_POS
    if i >= n:
        return
    out[i] = x[i] * 2.0


@pytest.mark.parametrize("name", PER_CUBE)
@pytest.mark.parametrize("checked", [True, False])
@pytest.mark.parametrize("n", [0, 1, 255, 256, 700, 1024])
def test_guards_decided_per_cube_give_the_guarded_answer(name, checked, n, rng):
    # n splits the launch's cubes anywhere: whole cubes pass, one straddles, the rest fail
    x = rng.standard_normal(1024).astype(np.float32)
    dev = PER_CUBE[name]()
    outs = []
    for d in (dev, cb.device("interp")):
        out = poisoned(1024, np.float32)
        early_return[4, 256](x, out, n, device=d, checked=checked)
        y = poisoned(max(n, 1), np.float32)
        triad[4, 256](x[:max(n, 1)], x[:max(n, 1)], y, 1.5, device=d, checked=checked)
        outs.append((out, y))
    for p, q in zip(*outs):
        np.testing.assert_array_equal(p, q)


def test_the_two_versions_share_no_local():
    # A local both versions wrote was kept in a per-unit array by the CPU backend (its two unit
    # loops both used it), which made the fast side of VOL3D 3.5x slower than unchecked code.
    x = np.ones(1000, np.float32)
    compiled = corners.compile(x, x[:900].copy(), 5, dim=256, device=cb.device("interp", checks_per_cube=True))
    switch, = _switch(compiled)
    fast, slow = (_vars(b) for b in switch.blocks)
    assert fast and slow and not fast & slow
    declared = {v.id for v in compiled.ir_module.vars}
    assert fast | slow <= declared


@pytest.mark.parametrize("name", PER_CUBE)
@pytest.mark.parametrize("n, ny", [(1000, 1000), (1000, 999), (1024, 1024), (1000, 1200)])
def test_ragged_and_short_arrays_give_the_per_access_answer(name, n, ny, rng):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(ny).astype(np.float32)
    args = lambda: (x, y, poisoned(n, np.float32), np.float32(1.5))         # noqa: E731
    count = (n + 255) // 256
    _same(_outcome(triad, count, 256, args(), PER_CUBE[name]()), _outcome(triad, count, 256, args(), "interp"))


# values that put an index at the edges: small, negative, and large enough to wrap i32
EDGES = (0, 1, -1, 2, 3, -3, 7, 63, 64, -64, 1 << 16, (1 << 30) + 1, (1 << 31) - 1, -(1 << 31), -(1 << 31) + 5)


def _pick(rng, n: int) -> list[int]:
    return [int(v) for v in rng.choice(EDGES, n)]


@pytest.mark.parametrize("name", PER_CUBE)
def test_affine_indices_at_the_edges_of_i32(name, rng):
    dev = PER_CUBE[name]()
    x = rng.standard_normal(200).astype(np.float32)
    for _ in range(40):
        c, d = _pick(rng, 2)
        args = lambda: (x, poisoned(50, np.float32), c, d)            # noqa: E731
        _same(_outcome(affine, 4, 16, args(), dev), _outcome(affine, 4, 16, args(), "interp"))


@pytest.mark.parametrize("name", PER_CUBE)
def test_loop_counters_at_the_edges_of_i32(name, rng):
    dev = PER_CUBE[name]()
    x = rng.standard_normal(300).astype(np.float32)
    for _ in range(40):
        start, e, d = _pick(rng, 3)
        stop = start + int(rng.integers(-2, 5))            # a few iterations, or none
        if not -(1 << 31) <= stop < (1 << 31):
            continue
        args = lambda: (x, poisoned(40, np.float32), start, stop, e, d)          # noqa: E731
        got = _outcome(window, 3, 16, args(), dev)
        _same(got, _outcome(window, 3, 16, args(), _per_access(name)))
        # across devices: the same outcome, outputs and violation; which unit a report names
        # where units reach theirs at different iterations follows the device's order of units
        # (docs/design.md, "report_oob"), so it is compared on the same device above
        _same(_without_unit(got), _without_unit(_outcome(window, 3, 16, args(), "interp")))


def _per_access(name: str):
    """The same device with every check at its access: the reference of a versioned kernel."""
    return cb.device("cpu", checks_per_cube=False, checks_per_run=False) if name == "cpu" else "interp"


def _without_unit(outcome):
    return (outcome[0], outcome[1].rpartition(" (unit ")[0]) if outcome[0] == "error" else outcome


@pytest.mark.parametrize("name", PER_CUBE)
def test_two_dimensional_unit_positions(name, rng):
    dev = PER_CUBE[name]()
    x = rng.standard_normal(128).astype(np.float32)
    for c, d in [(8, 0), (8, 1), (16, 0), (8, -1), (-8, 127), (1 << 30, 0)]:
        args = lambda: (x, poisoned(64, np.float32), c, d)             # noqa: E731
        _same(_outcome(tile2d, 2, (8, 4), args(), dev), _outcome(tile2d, 2, (8, 4), args(), "interp"))


def test_a_loop_kernel_is_versioned_and_sums_right(rng):
    x = rng.standard_normal(300).astype(np.float32)
    out = poisoned(40, np.float32)
    dev = cb.device("interp", checks_per_cube=True)
    compiled = window.compile(x, out, 0, 16, 1, 0, dim=16, device=dev)
    assert _switch(compiled)
    compiled[3](x, out, 0, 16, 1, 0)
    expected = np.zeros(40, np.float32)         # the kernel's order, left to right in f32 (NumPy's
    for i in range(40):                         # pairwise sum differs in the last bit)
        for v in x[i:i + 16]:
            expected[i] = np.float32(expected[i] + v)
    np.testing.assert_array_equal(out, expected)


@cb.kernel
def neighbours(x: Array[f32], y: Array[f32], out: Mut[Array[f32]], jp: i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] + x[i + 1] + y[i + 1] + x[i + jp] + x[i + jp + 1] - y[i + jp]


def test_the_cube_test_merges_neighbouring_indices_and_the_extents_they_share():
    x = np.ones(300, np.float32)
    compiled = neighbours.compile(x, x.copy(), x.copy(), 5, dim=64, device=cb.device("interp", checks_per_cube=True))
    switch, = _switch(compiled)
    body = compiled.ir_module.body.ops
    tests = body[:body.index(switch)]
    below = [op for op in tests if op.opcode == "lt"]
    above = [op for op in tests if op.opcode == "ge" and getattr(op.args[1], "value", None) == 0]
    # x[i], x[i + 1], y[i + 1] under one test, x[i + jp], x[i + jp + 1], y[i + jp] under another,
    # out[i] alone: 7 upper bounds in 3 compares (9 lower ones, all implied by i, i + jp >= 0)
    assert len(below) == 3 and len(above) <= 2


@pytest.mark.parametrize("name", list(PER_CUBE))
@pytest.mark.parametrize("nx, ny, jp", [(300, 300, 5), (300, 300, -5), (201, 300, 0), (300, 200, 0),
                                         (300, 206, 5), (300, 205, 5), (206, 300, 5), (300, 300, -300)])
def test_merged_neighbour_tests_give_the_per_access_answer(name, nx, ny, jp, rng):
    args = [rng.standard_normal(nx).astype(np.float32), rng.standard_normal(ny).astype(np.float32),
            poisoned(200, np.float32), jp]
    _same(_outcome(neighbours, 4, 64, [a.copy() if isinstance(a, np.ndarray) else a for a in args], "interp"),
          _outcome(neighbours, 4, 64, args, PER_CUBE[name]()))


@cb.kernel
def blocked(x: Array[f32], out: Mut[Array[f32]], w: i32, d: i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = x[(i // w) * d + i % w]


def test_a_quotient_and_remainder_by_a_scalar_are_tested_once_per_cube():
    x = np.ones(200, np.float32)
    compiled = blocked.compile(x, x[:50].copy(), 8, 8, dim=16, device=cb.device("interp", checks_per_cube=True))
    switch, = _switch(compiled)
    fast, slow = switch.blocks
    assert not any(op.opcode == "report_oob" for op in walk(fast))
    assert any(op.opcode == "report_oob" for op in walk(slow))


@pytest.mark.parametrize("name", PER_CUBE)
def test_quotients_and_remainders_by_scalars_at_the_edges_of_i32(name, rng):
    # divisors of 0 (cubepy's // and % give 0) and negative ones fall back to per-access checks
    dev = PER_CUBE[name]()
    x = rng.standard_normal(200).astype(np.float32)
    fixed = [(8, 8), (3, 7), (1, 1), (0, 5), (-2, 3), (5, -1), (64, 200)]
    for w, d in fixed + [tuple(_pick(rng, 2)) for _ in range(30)]:
        args = lambda: (x, poisoned(50, np.float32), w, d)            # noqa: E731
        _same(_outcome(blocked, 4, 16, args(), dev), _outcome(blocked, 4, 16, args(), _per_access(name)))
