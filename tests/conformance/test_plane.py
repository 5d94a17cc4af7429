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
