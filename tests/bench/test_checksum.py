"""RAJAPerf's 2026 checksum: the formula against a direct Kahan sum, and facts the spec states."""

from __future__ import annotations

import math

import numpy as np
from cubepy.bench.apps import APPS
from cubepy.bench.checksum import agrees, checksum, kernel_checksum


def kahan_checksum(values) -> np.longdouble:
    """The formula term by term, as RAJAPerf's loop adds it (Kahan, long double)."""
    total = comp = np.longdouble(0)
    for j, v in enumerate(values):
        off = 1.0 if v >= 0 else 0.5
        q = (j + off) / math.pi
        mult = (q - math.floor(q)) + 0.5
        term = np.longdouble(mult) * np.longdouble(abs(v)) - comp
        t = total + term
        comp = (t - total) - term
        total = t
    return total


def test_checksum_is_the_formula(rng):
    values = rng.standard_normal(5000) * 10.0 ** rng.integers(-3, 4, 5000)
    values[::97] = 0.0
    ours, direct = checksum(values), kahan_checksum(values)
    assert abs(ours - direct) <= 1e-17 * abs(direct)
    assert agrees(ours, direct)


def test_negative_values_weigh_with_the_half_offset():
    assert checksum(np.array([-2.0])) == np.longdouble((0.5 / math.pi) + 0.5) * 2
    assert checksum(np.array([2.0])) == np.longdouble((1.0 / math.pi) + 0.5) * 2


def test_energy_and_pressure_share_their_checksum_at_the_default_size():
    """The spec: both outputs are constants of the same value, checksum 97909.139..."""
    sums = []
    for name in ("ENERGY", "PRESSURE"):
        app = APPS[name]
        problem = app.set_up(app.default_size)
        arrays = problem.copy_arrays()
        app.reference(problem, arrays)
        sums.append(kernel_checksum(arrays[k] for k in app.outputs))
    assert sums[0] == sums[1]
    assert f"{float(sums[0]):.3f}".startswith("97909.139")


def test_agreement_uses_rajaperfs_relative_tolerance():
    assert agrees(1.0 + 5e-11, 1.0) and not agrees(1.0 + 5e-10, 1.0)
