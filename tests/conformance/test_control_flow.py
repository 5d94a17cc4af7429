"""Python control flow on runtime values, and its folding on compile-time values."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from tests.conftest import poisoned, require_dtype


def _per_unit(n, fn):
    return np.array([fn(i) for i in range(n)])


@cb.kernel
def branches(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i >= len(x):
        return
    v = x[i]
    if v < -50:
        r = 1
    elif v < 0:
        r = 2
    elif v == 0 or v > 90:
        r = 3
    else:
        r = v * 2
    if not (v % 3 == 0 and v > 10):
        r += 100
    out[i] = r if v % 2 == 0 else -r


def _branches_ref(v):
    if v < -50:
        r = 1
    elif v < 0:
        r = 2
    elif v == 0 or v > 90:
        r = 3
    else:
        r = v * 2
    if not (v % 3 == 0 and v > 10):
        r += 100
    return r if v % 2 == 0 else -r


def test_if_elif_else_and_or_not_and_ternary(dev, rng):
    x = rng.integers(-100, 100, 500).astype(np.int32)
    x[:5] = 0
    out = poisoned(500, np.int32)
    branches.launch(4, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, [_branches_ref(int(v)) for v in x])


@cb.kernel
def loops(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        n = x[i]
        total = 0
        for k in range(n):
            if k % 3 == 1:
                continue
            if k > 40:
                break
            total += k
        for _ in range(n, 0, -2):
            total += 1
        j = 0
        while j * j < n:
            j += 1
            if j == 7:
                break
        out[i] = total * 100 + j


def _loops_ref(n):
    total = 0
    for k in range(n):
        if k % 3 == 1:
            continue
        if k > 40:
            break
        total += k
    for _ in range(n, 0, -2):
        total += 1
    j = 0
    while j * j < n:
        j += 1
        if j == 7:
            break
    return total * 100 + j


def test_for_while_break_continue_with_per_unit_trip_counts(dev, rng):
    x = rng.integers(0, 60, 200).astype(np.int32)
    out = poisoned(200, np.int32)
    loops.launch(2, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, [_loops_ref(int(v)) for v in x])


@cb.kernel
def guarded(x: Array[f32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    # The right side of `and` must not run where the left is false: it would read out of bounds.
    if i < len(x) and x[i] > 0.0:
        out[i] = 1
    elif i < len(out):
        out[i] = 0


def test_and_short_circuits_so_a_guard_protects_an_access(dev, rng):
    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(200, np.int32)
    guarded.launch(2, 128, x, out, device=dev)   # checked mode: an unguarded read would raise
    np.testing.assert_array_equal(out[:100], (x > 0).astype(np.int32))
    np.testing.assert_array_equal(out[100:], 0)


@cb.kernel
def static_folding(out: Mut[Array[i32]], k: Comptime[int], mode: Comptime[str]):
    i = cb.ABSOLUTE_POS
    acc = 0
    for j in cb.unroll(range(k)):
        acc += j * i
    if mode == "double":
        acc = acc * 2
    step = 4
    while step > 0:
        acc += step
        step //= 2
    if i < len(out):
        out[i] = acc


def test_unroll_and_compile_time_branches_fold(dev, rng):
    out = poisoned(64, np.int32)
    static_folding.launch(1, 64, out, 5, "double", device=dev)
    i = np.arange(64)
    np.testing.assert_array_equal(out, (sum(range(5)) * i) * 2 + 7)
    text = static_folding.ir(out, 5, "double", dim=64, device=dev)
    assert "for(" not in text and "loop(" not in text


@cb.func
def clamp_add(a, b, limit):
    s = a + b
    if s > limit:
        s = limit
    return s


@cb.func
def twice(v):
    return clamp_add(v, v, 1000)


@cb.kernel
def helpers(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = twice(x[i]) + clamp_add(x[i], 1, 50)


def test_helper_functions_are_inlined_and_nest(dev, rng):
    x = rng.integers(-800, 800, 100).astype(np.int32)
    out = poisoned(100, np.int32)
    helpers.launch(1, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, np.minimum(2 * x, 1000) + np.minimum(x + 1, 50))


@cb.kernel
def variables_in_branches(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        acc = 0                   # an int literal that becomes a float accumulator
        best: f32 = -1.0e30       # a declared variable
        for k in range(4):
            v = x[i] * k
            acc += v
            if v > best:
                best = v
        out[i] = acc + best


def test_variables_widen_and_keep_their_values_across_branches_and_loops(dev, rng):
    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(100, np.float32)
    variables_in_branches.launch(1, 128, x, out, device=dev)
    ks = np.arange(4, dtype=np.float32)
    v = x[:, None] * ks
    np.testing.assert_allclose(out, v.sum(1) + v.max(1), rtol=1e-5)


@cb.kernel
def early_exit(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i >= len(x):
        return
    if x[i] < 0:
        out[i] = -1
        return
    out[i] = x[i] * 2


def test_early_return(dev, rng):
    x = rng.integers(-10, 10, 150).astype(np.int32)
    out = poisoned(150, np.int32)
    early_exit.launch(2, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, np.where(x < 0, -1, 2 * x))


@cb.kernel
def tuples(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        a, b = x[i], i
        a, b = b, a
        out[i] = a * 1000 + b


def test_tuple_assignment_swaps(dev, rng):
    x = rng.integers(0, 999, 100).astype(np.int32)
    out = poisoned(100, np.int32)
    tuples.launch(1, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, np.arange(100) * 1000 + x)


@cb.kernel
def while_true(x: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        steps = 0
        v = x[i]
        while True:                      # a runtime loop: it ends at a runtime break
            if v <= 1:
                break
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        out[i] = steps * 10 + cb.select(x[i] > 5, 1, 0)


def _collatz(v):
    steps = 0
    while v > 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def test_while_true_with_a_runtime_break_and_select_of_literals(dev, rng):
    x = rng.integers(1, 200, 100).astype(np.int32)
    out = poisoned(100, np.int32)
    while_true.launch(1, 128, x, out, device=dev)
    np.testing.assert_array_equal(out, [_collatz(int(v)) * 10 + int(v > 5) for v in x])


@cb.kernel
def comptime_first(k: Comptime[int], x: Array[f32], scale: f32, y: Mut[Array[f32]], mode: Comptime[str]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i] * scale + k if mode == "add" else x[i] * scale - k


def test_comptime_parameters_between_runtime_ones(dev, rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = poisoned(100, np.float32)
    comptime_first.launch(1, 128, 3, x, 2.0, y, "add", device=dev)
    np.testing.assert_allclose(y, x * 2 + 3, rtol=1e-6)


@cb.kernel
def guard_after_uniform_sync(x: Array[f64], out: Mut[Array[u16]], nu: i32):
    g = cb.ABSOLUTE_POS
    if x[0] < 1.0:                 # the same on every unit: a barrier may sit here
        cb.sync_cube()
        if g < nu:                 # a per-unit guard after it
            out[g] = u16(1)


@cb.kernel
def guard_after_uniform_return(x: Array[f32], out: Mut[Array[f32]], nu: i32):
    g = cb.ABSOLUTE_POS
    if x[0] == 3.0:                # a uniform early return before a barrier
        return
    cb.sync_cube()
    if g < nu:
        out[g] = 1.0


@pytest.mark.parametrize("flag", [0.0, 3.0])
def test_a_per_unit_guard_after_a_barrier_under_uniform_control_holds_back_the_units_it_should(dev, flag):
    # PoCL let every unit through both guards (found by tests/fuzz); out of bounds in checked mode
    require_dtype(dev, "float64")
    out = poisoned(256, np.uint16)
    guard_after_uniform_sync.launch(2, 128, np.full(4, flag), out, 208, device=dev)
    np.testing.assert_array_equal(out[:208], 1 if flag < 1 else poisoned(1, np.uint16)[0])
    np.testing.assert_array_equal(out[208:], poisoned(1, np.uint16)[0])
    out = poisoned(192, np.float32)
    guard_after_uniform_return.launch(3, 64, np.full(4, flag, np.float32), out, 161, device=dev)
    assert (out[:161] == 1.0).all() if flag != 3.0 else np.isnan(out).all()
    assert np.isnan(out[161:]).all()


@cb.kernel
def tail_continue(x: Array[i32], o: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        n = 0
        k = 0
        while k < x[i]:
            k += 1
            n += k
            if n % 3 == 0:
                continue
        for j in range(x[i]):
            n += j
            if j > 2:
                continue
        o[i] = n * 100 + k


def test_a_loop_body_ending_in_continue_runs_as_often_as_without_it(dev, rng):
    x = rng.integers(0, 12, 250).astype(np.int32)
    o = poisoned(250, np.int32)
    tail_continue.launch(4, 64, x, o, device=dev)
    want = [sum(range(1, v + 1)) * 100 + sum(range(v)) * 100 + v for v in x.tolist()]
    np.testing.assert_array_equal(o, want)


def test_the_c_source_has_no_continue_as_the_last_statement_of_a_loop():
    from cubepy.backends.cstyle import OPENCL, render

    ir = tail_continue.compile(np.zeros(4, np.int32), np.zeros(4, np.int32), dim=32, device="interp").ir_module
    assert "continue;" not in render(ir, OPENCL).source


@cb.kernel
def guard_after_a_loop_of_plane_ops(x: Array[i64], out: Mut[Array[u64]], nu: i32, n: u16):
    g = cb.ABSOLUTE_POS
    if x[1] <= 0:                                  # uniform, holding plane ops and a loop of them
        a = cb.plane_all(nu <= -2)
        for _ in range(i32(n) % 4):
            a = a or cb.plane_any(g == 0)
        if g < nu:
            out[g] = u64(1) + u64(a)


def test_a_per_unit_guard_after_a_loop_of_plane_ops_under_a_uniform_condition(dev):
    # found by tests/fuzz (seed 1285) on PoCL: the guard let every unit through
    out = poisoned(42, np.uint64)
    guard_after_a_loop_of_plane_ops.launch(2, (7, 3), np.zeros(4, np.int64), out, 25, 3, device=dev)
    plane = dev.properties.plane_dim
    want = np.ones(42, np.uint64)
    for cube in range(2):
        for lin in range(21):                      # the unit with g == 0 is in cube 0's first plane
            g = cube * 7 + lin % 7 + 14 * (lin // 7)
            want[g] = 2 if cube == 0 and lin // plane == 0 else 1
    np.testing.assert_array_equal(out[:25], want[:25])
    np.testing.assert_array_equal(out[25:], poisoned(1, np.uint64)[0])


@cb.kernel
def guard_after_a_loop_in_a_branch(x: Array[i64], acc: Mut[Array[u64]], out: Mut[Array[u8]], s: i16, nu: i32):
    g = cb.ABSOLUTE_POS
    cb.sync_cube()
    if (1 if cb.UNIT_POS_PLANE < 0 else s) <= 1:      # per unit to cubepy, uniform once folded
        pass
    else:
        for k in range(3):
            cb.atomic_and(acc, i32(x[k * k % len(x)]) % 6, u64(1))
        if g < nu:
            out[g] = u8(2)


def test_a_per_unit_guard_after_a_loop_in_a_branch_holds_back_the_units_it_should(dev):
    # found by tests/fuzz (seed 990264): PoCL added a barrier of its own to the loop and then let
    # every unit through the guard
    out = poisoned(128, np.uint8)
    acc = np.full(6, 7, np.uint64)
    guard_after_a_loop_in_a_branch.launch((2, 1, 2), 32, np.arange(10, dtype=np.int64), acc, out, 11, 105,
                                          device=dev)
    np.testing.assert_array_equal(out[:105], 2)
    np.testing.assert_array_equal(out[105:], poisoned(1, np.uint8)[0])
    np.testing.assert_array_equal(acc, [1, 1, 7, 7, 1, 7])


@cb.kernel
def plane_branch_in_a_barrier_loop(out: Mut[Array[f32]]):
    g = cb.ABSOLUTE_POS
    t = cb.UNIT_POS
    w = i32(0)
    while w < 1:
        w += 1
        if t // cb.PLANE_DIM == 0:
            out[g] = f32(1)
            p = cb.plane_all(u32(1) > u32(1))       # noqa: F841 (the barriers its emulation needs)
        else:
            for _k in range(0):
                pass
            q = cb.plane_shuffle_up(u8(1), 47)      # noqa: F841


def test_a_plane_branch_in_a_loop_of_barriers_runs_for_its_plane_only(dev):
    # found by tests/fuzz (seed 7000610) on PoCL: with the exits of both loops read through
    # volatiles, every work-item ran the first plane's store
    dim, plane = 20, dev.properties.plane_dim
    out = poisoned(2 * dim, np.float32)
    plane_branch_in_a_barrier_loop.launch(2, dim, out, device=dev)
    dev.synchronize()
    first_plane = (np.arange(2 * dim) % dim) < plane
    np.testing.assert_array_equal(out[first_plane], 1.0)
    assert np.isnan(out[~first_plane]).all()


@cb.kernel
def guard_after_a_barrier_loop_in_a_branch(x: Array[i32], out: Mut[Array[u8]], nu: i32):
    g = cb.ABSOLUTE_POS
    if x[0] > 0:                        # cube-uniform: the loop comes out of the if, its first exit
        w = i32(0)                      # is `if (!(x[0] > 0)) break;`, the rest is under the if again
        while w < x[1]:
            w += 1
            cb.sync_cube()
        v = x[x[2] % len(x)]            # a checked load: a branch between the loop and the guard
        if g < nu:
            out[g] = u8(v + w)


@pytest.mark.parametrize("taken", [True, False])
def test_a_per_unit_guard_after_a_barrier_loop_in_a_uniform_branch_holds_back_the_units_it_should(dev, rng,
                                                                                                  taken):
    # found by tests/fuzz (seed 9100144) on PoCL: LLVM sent the loop's first exit straight to the
    # kernel's end, and every work-item passed the guard
    x = rng.integers(1, 6, 8).astype(np.int32)
    x[0] = x[0] if taken else -x[0]
    _check_guarded_stores(dev, rng, guard_after_a_barrier_loop_in_a_branch, x, np.uint8, ((2, 1, 2), (8, 4, 1)),
                          x[x[2] % len(x)] + x[1] if taken else None)


def _check_guarded_stores(dev, rng, kernel, x, dtype, shape, value) -> None:
    """Launch ``kernel(x, out, nu)`` at ``shape`` and at (3, 20) with a random ``nu``: the units
    below ``nu`` store ``value`` (None: no unit stores), the others leave the poison."""
    for count, dim in (shape, (3, 20)):
        n = int(np.prod(count) * np.prod(dim))
        nu = int(rng.integers(n // 2, n))
        out = poisoned(n, dtype)
        kernel.launch(count, dim, x, out, nu, device=dev)
        dev.synchronize()
        want = poisoned(n, dtype)
        if value is not None:
            want[:nu] = value
        np.testing.assert_array_equal(out, want)


@cb.kernel
def barrier_loops(x: Array[i32], out: Mut[Array[i32]]):
    t = cb.UNIT_POS
    s = i32(0)
    for k in range(x[0]):               # one way out: nothing after it
        s += k
        cb.sync_cube()
    w = i32(0)
    while w < x[1]:                     # one way out
        w += 1
        cb.sync_cube()
    while True:                         # two ways out: a barrier after it on PoCL
        if w > x[2]:
            break
        w += 2
        cb.sync_cube()
        if w == x[3]:
            break
    out[t] = s + w


def test_on_pocl_only_a_barrier_loop_with_several_exits_is_followed_by_a_barrier():
    from cubepy.backends.cstyle import OPENCL, render
    from cubepy.backends.opencl import _barriers_hoisted

    ir = barrier_loops.compile(np.zeros(4, np.int32), np.zeros(32, np.int32), dim=32, device="interp").ir_module
    pocl = OPENCL.with_(opaque_loops=True, join_loop_exits=True)
    assert render(_barriers_hoisted(ir, OPENCL), OPENCL).source.count(OPENCL.barrier) == 3
    assert render(_barriers_hoisted(ir, pocl), pocl).source.count(OPENCL.barrier) == 4
    x = np.array([5, 3, 8, 9], np.int32)
    out = np.zeros(32, np.int32)
    barrier_loops.launch(1, 32, x, out, device="interp")
    np.testing.assert_array_equal(out, 10 + 9)


@cb.kernel
def a_uniform_continue_before_a_barrier(x: Array[i32], out: Mut[Array[i32]], nu: i32):
    g = cb.ABSOLUTE_POS
    for k in range(x[0]):
        if cb.CUBE_POS == x[1]:         # cube-uniform: this cube skips the rest of the iteration
            continue
        m = cb.plane_max(x[2] + k)      # a barrier on OpenCL
        if g < nu:
            out[g] = m


def test_a_guard_after_a_uniform_continue_and_a_barrier_holds_back_the_units_it_should(dev, rng):
    # found by tests/fuzz (seed 9100469) on PoCL: the continue made the rest of the body a
    # conditional, a barrier under it and the guard after it, and every work-item passed the guard
    x = rng.integers(0, 100, 4).astype(np.int32)
    x[0] = rng.integers(1, 4)
    for (cx, cy), (dx, dy) in (((1, 2), (7, 3)), ((3, 1), (20, 1))):
        n = cx * cy * dx * dy
        x[1] = rng.integers(0, cx * cy)
        nu = int(rng.integers(n // 2, n))
        out = poisoned(n, np.int32)
        a_uniform_continue_before_a_barrier.launch((cx, cy), (dx, dy), x, out, nu, device=dev)
        dev.synchronize()
        want = poisoned(n, np.int32)
        want[:nu] = x[2] + x[0] - 1
        g = np.arange(n)
        skipped = (g % (cx * dx)) // dx + cx * (g // (cx * dx) // dy) == x[1]
        want[skipped] = poisoned(n, np.int32)[skipped]
        np.testing.assert_array_equal(out, want)



@cb.kernel
def a_barrier_loop_that_always_breaks(x: Array[i32], out: Mut[Array[i32]], nu: i32):
    g = cb.ABSOLUTE_POS
    for k in range(x[0] % 4):           # at most one iteration: the body always ends in a break
        m = cb.plane_max(x[1])          # a barrier on OpenCL
        if g < nu:
            out[g] = m + k
        break


@pytest.mark.parametrize("runs", [True, False])
def test_a_guard_in_a_barrier_loop_that_always_breaks_holds_back_the_units_it_should(dev, rng, runs):
    # found by tests/fuzz (seed 9100774) on PoCL: LLVM folded the loop into an if, a barrier
    # under a conditional with the guard after it, and every work-item passed the guard
    x = rng.integers(0, 100, 4).astype(np.int32)
    x[0] = x[0] // 4 * 4 + (1 if runs else 0)
    _check_guarded_stores(dev, rng, a_barrier_loop_that_always_breaks, x, np.int32, ((2, 1, 1), (4, 4, 4)),
                          x[1] if runs else None)


@cb.kernel
def a_barrier_loop_left_by_a_constant_if(x: Array[i32], out: Mut[Array[i32]], nu: i32, K: Comptime[int]):
    g = cb.ABSOLUTE_POS
    for k in range(x[0] % 4):
        cb.sync_cube()
        if g < nu:
            out[g] = x[1] + k
        if i32(K) > 2:                  # a typed constant: an `if` on True, not a Python branch
            break
        p = cb.plane_min(i16(1))  # noqa: F841 (dead where K > 2, as is the continue)
        continue


@pytest.mark.parametrize("runs", [True, False])
def test_a_guard_in_a_barrier_loop_a_constant_if_always_leaves_holds_back_the_units_it_should(dev, rng, runs):
    # CI fuzz seed 655010257 on PoCL: the dead `continue` after `if True: break` kept the loop a
    # loop (it runs at most once), LLVM folded it into an if around the barrier and the guard,
    # and every work-item passed the guard
    x = rng.integers(0, 100, 4).astype(np.int32)
    x[0] = x[0] // 4 * 4 + (3 if runs else 0)
    for count, dim in (((1, 1, 1), (7, 3, 1)), ((3, 1, 1), (20, 1, 1))):
        n = int(np.prod(count) * np.prod(dim))
        nu = int(rng.integers(n // 3, n))
        out = poisoned(n, np.int32)
        a_barrier_loop_left_by_a_constant_if.launch(count, dim, x, out, nu, 4, device=dev)
        dev.synchronize()
        want = poisoned(n, np.int32)
        if runs:
            want[:nu] = x[1]
        np.testing.assert_array_equal(out, want)


@cb.kernel
def a_break_after_the_last_barrier_of_a_loop(x: Array[i32], out: Mut[Array[i32]]):
    w = i32(0)
    while w < x[0]:
        w += 1
        if x[1] > 0:                    # cube-uniform
            pass
        else:
            _ = cb.plane_max(x[2])      # a barrier on OpenCL, its result unused
            if x[w % len(x)] > 3:       # the exit right after it
                break
    out[cb.ABSOLUTE_POS] = w


def test_a_break_right_after_a_loops_last_barrier_compiles_and_leaves_the_loop(dev, rng):
    # found by tests/fuzz (seed 9100940): PoCL's compiler asserted ("Incoming edges to non-entry
    # block!") and aborted the process
    x = rng.integers(-2, 8, 8).astype(np.int32)
    x[0], x[1] = rng.integers(1, 5), -1
    for count, dim in (((2, 1, 1), (7, 3, 1)), (3, 20)):
        n = int(np.prod(count) * np.prod(dim))
        out = poisoned(n, np.int32)
        a_break_after_the_last_barrier_of_a_loop.launch(count, dim, x, out, device=dev)
        dev.synchronize()
        w = 0
        while w < x[0]:
            w += 1
            if x[w % len(x)] > 3:
                break
        np.testing.assert_array_equal(out, w)


@cb.kernel
def a_one_trip_barrier_loop_under_a_uniform_if(x: Array[u16], out: Mut[Array[f64]], c: i8, n: i32,
                                               trips: Comptime[int]):
    g = cb.ABSOLUTE_POS
    if c < 100:                                  # cube-uniform
        w = i32(0)
        while w < trips:                         # a runtime loop whose trip count LLVM can compute
            w += 1
            _ = cb.plane_shuffle(x[0], w)        # a barrier on PoCL, its result unused
            if g < n:
                out[g] = f64(w)


@pytest.mark.parametrize("trips", [1, 2])
def test_a_guard_in_a_one_trip_barrier_loop_under_a_uniform_if_holds_back_the_units_it_should(dev, rng, trips):
    # found by the CI fuzz budget (seed 429550188): LLVM deleted the back edge of the one-trip
    # loop, which left its barriers under the condition with the guard after them, and PoCL let
    # every work-item store
    x = rng.integers(0, 1000, 8).astype(np.uint16)
    n = int(rng.integers(33, 60))
    for c in (5, 120):
        out = poisoned(64, np.float64)
        a_one_trip_barrier_loop_under_a_uniform_if[(1, 2, 1), (8, 4, 1)](x, out, c, n, trips, device=dev)
        dev.synchronize()
        want = np.full(64, np.nan)
        if c < 100:
            want[:n] = trips
        np.testing.assert_array_equal(out, want)


@cb.kernel
def a_guard_between_barrier_pairs_in_a_loop(x2: Array[f32], x5: Array[u8], out: Mut[Array[f32]], nu: i32):
    # the fuzzer's kernel of CI seed 507500169, shrunk: two shared-memory store / sync / load /
    # sync pairs in a runtime loop, a per-unit guard between them, bounds checks in both regions
    g = cb.ABSOLUTE_POS
    t = cb.UNIT_POS
    sm12 = cb.SharedMemory(u32, 48)
    sm16 = cb.SharedMemory(u8, 48)
    for k in range(nu):
        sm12[t] = u32(1)
        cb.sync_cube()
        _ = sm12[(t + 39) % 48]
        cb.sync_cube()
        if g < nu:
            out[g * 12] = f32(i8(i16(1) | i16(x2[k % len(x2)])))
        sm16[t] = u8(1)
        cb.sync_cube()
        _ = sm16[i32(x5[(nu and nu) % len(x5)]) % 48]
        cb.sync_cube()


def test_a_guard_between_barrier_pairs_in_a_loop_holds_back_the_units_it_should(dev, rng):
    # found by the CI fuzz budget (seed 507500169): LLVM hoisted the guard's per-unit test out of
    # the loop, PoCL kept the last work-item's value of it for the whole work-group, and units
    # past the guard stored (or units before it did not)
    x2 = (rng.standard_normal(10) * 50).astype(np.float32)
    x5 = rng.integers(0, 256, 7).astype(np.uint8)
    for nu in (138, 100):
        out = poisoned(144 * 12, np.float32)
        a_guard_between_barrier_pairs_in_a_loop[3, 48](x2, x5, out, nu, device=dev)
        dev.synchronize()
        want = poisoned(144 * 12, np.float32)
        last = x2[(nu - 1) % len(x2)]
        want[:nu * 12:12] = np.float32(np.int8(np.int16(1) | np.int16(np.trunc(last))))
        np.testing.assert_array_equal(out, want)


@cb.kernel
def _return_after_barrier(x: Array[f64], pick: Array[i8], out: Mut[Array[f64]], limit: f64):
    i = cb.ABSOLUTE_POS
    if u32(1) >= u32(3):             # a return before the barrier, folded away only by the compiler
        return
    cb.sync_cube()
    # a load at an index read from memory, under a per-unit choice, decides a per-unit return
    if x[(i64(pick[127 % len(pick)]) if 1 < cb.UNIT_POS_PLANE else i64(-100)) % len(x)] < limit:
        return
    if i < len(out):
        out[i] = x[i % len(x)] + 1.0


def test_a_per_unit_return_after_a_barrier_in_a_checked_kernel(dev, rng):
    """The fuzzer's seeds 640890189 and 640890289: OpenCL's barrier lowering once left the
    barrier under the per-unit return of a checked kernel's version (a DivergenceError)."""
    x, pick = rng.random(61) * 100, rng.integers(-128, 127, 130).astype(np.int8)
    out = poisoned(192, np.float64)
    _return_after_barrier[(2, 1, 2), 48](x, pick, out, 50.0, device=dev)
    unit_plane = (np.arange(192) % 48) % dev.properties.plane_dim
    chosen = np.where(1 < unit_plane, pick[127 % len(pick)].astype(np.int64), -100) % len(x)
    want = np.where(x[chosen] < 50.0, np.nan, x[np.arange(192) % len(x)] + 1.0)
    np.testing.assert_array_equal(out, want)
