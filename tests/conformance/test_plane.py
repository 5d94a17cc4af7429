"""Every plane op at every plane size against a per-plane NumPy reference.

Cubes of 48 units make the last plane of a cube partial whenever the plane size is 32 or 64,
so the reductions see only the units that exist. (A plane op after an early return that depends
on the unit is a compile error: see tests/errors.)
"""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i32, u64
from tests.conftest import poisoned

DIM = 48
UNSPECIFIED = -9999


@cb.kernel
def plane_values(x: Array[i32], out: Mut[Array[i32]], ballot: Mut[Array[u64]], op: Comptime[str]):
    i = cb.ABSOLUTE_POS
    v = x[i]
    if op == "sum":
        r = cb.plane_sum(v)
    elif op == "prod":
        r = cb.plane_prod(v % 3 + 1)
    elif op == "min":
        r = cb.plane_min(v)
    elif op == "max":
        r = cb.plane_max(v)
    elif op == "all":
        r = i32(cb.plane_all(v > -90))
    elif op == "any":
        r = i32(cb.plane_any(v > 90))
    elif op == "inclusive":
        r = cb.plane_inclusive_sum(v)
    elif op == "exclusive":
        r = cb.plane_exclusive_sum(v)
    elif op == "elect":
        r = i32(cb.plane_elect())
    elif op == "broadcast":
        r = cb.plane_broadcast(v, 0)
    elif op == "shuffle":
        r = cb.plane_shuffle(v, cb.PLANE_DIM - 1 - cb.UNIT_POS_PLANE)
    elif op == "xor":
        r = cb.plane_shuffle_xor(v, 1)
    elif op == "up":
        r = cb.plane_shuffle_up(v, 1)
    else:
        r = cb.plane_shuffle_down(v, 2)
    ballot[i] = cb.plane_ballot(v > 0)
    out[i] = r


def _reference(x, op, plane, active):
    out = np.full(x.size, -7777, np.int64)
    ballots = np.zeros(x.size, np.uint64)
    for cube_start in range(0, x.size, DIM):
        for p_start in range(cube_start, cube_start + DIM, plane):
            lanes = np.arange(p_start, min(p_start + plane, cube_start + DIM))
            act = lanes[active[lanes]]
            v = x[act].astype(np.int64)
            lane_of = {u: u - p_start for u in lanes}
            ballot = np.uint64(sum(1 << lane_of[u] for u in act if x[u] > 0))
            for k, u in enumerate(act):
                ballots[u] = ballot
                if op == "sum":
                    r = v.sum()
                elif op == "prod":
                    r = np.prod(v % 3 + 1)
                elif op == "min":
                    r = v.min()
                elif op == "max":
                    r = v.max()
                elif op == "all":
                    r = int((v > -90).all())
                elif op == "any":
                    r = int((v > 90).any())
                elif op == "inclusive":
                    r = v[:k + 1].sum()
                elif op == "exclusive":
                    r = v[:k].sum()
                elif op == "elect":
                    r = int(k == 0)
                elif op == "broadcast":
                    r = x[p_start]
                elif op == "shuffle":
                    src = p_start + plane - 1 - lane_of[u]
                    r = x[src] if src in lane_of else UNSPECIFIED  # reading a lane that does not exist
                else:
                    src = {"xor": lane_of[u] ^ 1, "up": lane_of[u] - 1, "down": lane_of[u] + 2}[op]
                    target = p_start + src
                    ok = 0 <= src < plane and target in lane_of and active[target]
                    r = x[target] if ok else x[u]
                out[u] = r
    return out.astype(np.int32), ballots


OPS = ["sum", "prod", "min", "max", "all", "any", "inclusive", "exclusive", "elect", "broadcast", "shuffle",
       "xor", "up", "down"]


@pytest.mark.parametrize("op", OPS)
def test_plane_op_matches_reference(dev, rng, op):
    plane = dev.properties.plane_dim
    cubes = 3
    x = rng.integers(-100, 100, cubes * DIM).astype(np.int32)
    out = poisoned(x.size, np.int32)
    ballots = np.zeros(x.size, np.uint64)
    plane_values.launch(cubes, DIM, x, out, ballots, op, device=dev)
    want, want_ballots = _reference(x, op, plane, np.ones(x.size, bool))
    defined = want != UNSPECIFIED
    assert defined.sum() >= x.size // 2
    np.testing.assert_array_equal(out[defined], want[defined])
    np.testing.assert_array_equal(ballots, want_ballots)


@cb.kernel
def plane_float_sum(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    out[i] = cb.plane_sum(x[i]) + cb.plane_max(x[i])


def test_plane_ops_on_floats(dev, rng):
    plane = dev.properties.plane_dim
    x = rng.standard_normal(128).astype(np.float32)
    out = poisoned(128, np.float32)
    plane_float_sum.launch(2, 64, x, out, device=dev)
    groups = x.reshape(-1, plane)
    want = np.repeat(groups.sum(1) + groups.max(1), plane)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@cb.kernel
def block_reduce(x: Array[f32], out: Mut[Array[f32]]):
    """The usual block reduce: each plane's sum, then plane 0 sums those (via shared memory)."""
    sums = cb.SharedMemory(f32, 256)
    i = cb.ABSOLUTE_POS
    v = x[i] if i < len(x) else 0.0
    plane = cb.UNIT_POS // cb.PLANE_DIM
    s = cb.plane_sum(v)
    if cb.UNIT_POS_PLANE == 0:
        sums[plane] = s
    cb.sync_cube()
    total = 0.0
    if plane == 0:                         # the same on every unit of a plane
        w = 0.0
        for k in range(cb.UNIT_POS_PLANE, cb.CUBE_DIM // cb.PLANE_DIM, cb.PLANE_DIM):
            w += sums[k]
        total = cb.plane_sum(w)
    if cb.UNIT_POS == 0:
        out[cb.CUBE_POS] = total


def test_a_plane_op_under_a_plane_uniform_condition_is_the_block_reduce_idiom(dev, rng):
    x = rng.integers(-50, 50, 1000).astype(np.float32)      # integers: exact in any order
    out = poisoned(4, np.float32)
    block_reduce.launch(4, 256, x, out, device=dev)
    padded = np.concatenate([x, np.zeros(24, np.float32)])
    np.testing.assert_array_equal(out, padded.reshape(4, 256).sum(1))


@cb.kernel
def row_max(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    best = -1.0
    if cb.UNIT_POS_Y % 2 == 0:             # rows of 64 units hold whole planes
        best = cb.plane_max(x[i])
    out[i] = best


def test_unit_pos_y_is_plane_uniform_when_rows_hold_whole_planes(dev, rng):
    x = rng.standard_normal(512).astype(np.float32)
    out = poisoned(512, np.float32)
    row_max.launch(1, (64, 8), x, out, device=dev)
    plane = dev.properties.plane_dim
    want = np.repeat(x.reshape(-1, plane).max(1), plane).reshape(8, 64)
    want[1::2] = -1.0
    np.testing.assert_array_equal(out.reshape(8, 64), want)


@cb.kernel
def shifted_plane_index(x: Array[f32], out: Mut[Array[f32]]):
    t = 0.0
    if (cb.UNIT_POS + 1) // cb.PLANE_DIM == 0:   # not the same on a plane: its last unit differs
        t = cb.plane_max(x[0])
    out[cb.ABSOLUTE_POS] = t


def test_a_condition_that_differs_inside_a_plane_is_still_refused():
    with pytest.raises(cb.DivergenceError, match=r"plane_max\(\) is reached by only some units of a plane"):
        shifted_plane_index.launch(1, 64, np.zeros(4, np.float32), np.zeros(64, np.float32), device="interp")


@cb.kernel
def shuffles_by_far(x: Array[i32], d: Array[i32], out: Mut[Array[i32]]):
    i = cb.ABSOLUTE_POS
    n = len(x)
    out[i] = cb.plane_shuffle_down(x[i], d[0])
    out[n + i] = cb.plane_shuffle_up(x[i], d[1])
    out[2 * n + i] = cb.plane_shuffle_down(x[i], i32(2147483647) ^ i32(2))
    out[3 * n + i] = cb.plane_shuffle_up(x[i], i32(-2147483647) - i32(1))


def test_a_shuffle_by_an_offset_near_the_integer_limits_gives_the_units_own_value(dev, rng):
    # found by the CI fuzz budget (seed 325320216): the source lane lane + 2147483645 overflowed
    # int in the generated C, which is undefined, and PoCL's compiler crashed on it
    x = rng.integers(-1000, 1000, 21).astype(np.int32)
    for d in ((2147483645, -2147483648), (-2147483648, 2147483647)):
        out = poisoned(4 * 21, np.int32)
        shuffles_by_far[1, (7, 3, 1)](x, np.array(d, np.int32), out, device=dev)
        dev.synchronize()
        np.testing.assert_array_equal(out, np.tile(x, 4))
