"""Every kernel's cubepy ports equal the NumPy reference (outputs poisoned first) and reproduce
its checksum, on the interpreter and the CPU backend, at tiny sizes; plus checks of the
references themselves that do not go through the reference code."""

from __future__ import annotations

import numpy as np
import pytest
from cubepy.bench.apps import APPS
from cubepy.bench.apps.matvec_3d_stencil import BASES
from cubepy.bench.runner import KernelRun, compare, parse_variants

import cubepy as cb

TINY = 1500          # a target size: 2-D 39^2 zones, 3-D 11^3 zones, LTIMES one z
# "interp-gpu": the interpreter running the IR as CUDA and HIP get it (checks per cube and per run)
DEVICES = {"interp": {}, "interp-gpu": {"plane_dim": 32, "checks_per_cube": True, "checks_per_run": True},
           "cpu": {}}


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("name", list(APPS))
def test_every_variant_matches_the_reference_and_its_checksum(name, device):
    dev = cb.device(device.partition("-")[0], **DEVICES[device])
    run = KernelRun(APPS[name], str(TINY), dev, parse_variants("plain,tuned,checked,unchecked"), [],
                    samples=1, log=lambda text: None)
    row = run.run()
    for label, result in row["contenders"].items():
        assert result.get("correct"), f"{label}: {result}"
        assert result["checksum_ok"] and result["output_matches_reference"]
    assert len(row["contenders"]) == 4
    assert row["checksum_reps"] == (50 if name == "LTIMES" else 1)


def _randomized_energy_inputs(problem, rng):
    a = problem.arrays
    n = problem.size
    a["delvc"][:] = rng.uniform(-1.0, 1.0, n)                # both branches of loops 2, 5 and 6
    for k in ("e_old", "p_old", "q_old", "work", "pHalfStep", "bvc", "pbvc", "ql_old", "qq_old", "vnewc", "p_new"):
        a[k][:] = rng.uniform(-0.5, 1.0, n)
    a["compHalfStep"][:] = rng.uniform(0.0, 1.0, n)
    s = problem.scalars
    s.update(rho0=0.7, e_cut=0.05, emin=-0.3, q_cut=0.05)


@pytest.mark.parametrize("device", ["interp", "cpu"])
@pytest.mark.parametrize("variant", ["plain", "tuned"])
def test_energy_and_pressure_on_random_data_take_every_branch(device, variant, rng):
    """RAJAPerf's data never takes ENERGY's sqrt branches nor PRESSURE's clamps: random data does."""
    dev = cb.device(device)
    energy = APPS["ENERGY"]
    problem = energy.set_up(1024)
    _randomized_energy_inputs(problem, rng)
    expected = problem.copy_arrays()
    energy.reference(problem, expected)
    assert (expected["q_new"] != 0).any() and (expected["e_new"] == 0).any() and \
        (expected["e_new"] == problem.scalars["emin"]).any()
    arrays = problem.copy_arrays()
    energy.poison(arrays)
    energy.port(variant, problem, arrays, dev, True)()
    for k in energy.outputs:
        ok, worst = compare(arrays[k], expected[k], 0.0 if variant == "plain" else 1e-10)
        assert ok, (k, worst)

    pressure = APPS["PRESSURE"]
    problem = pressure.set_up(1024)
    a = problem.arrays
    a["compression"][:] = rng.uniform(-1.5, 1.0, 1024)
    a["e_old"][:] = rng.uniform(-5.0, 5.0, 1024)
    a["vnewc"][:] = rng.uniform(0.0, 0.4, 1024)
    problem.scalars.update(p_cut=0.01, pmin=-0.05, eosvmax=0.3)
    expected = problem.copy_arrays()
    pressure.reference(problem, expected)
    p = expected["p_new"]
    assert (p == problem.scalars["pmin"]).any() and (p == 0).any() and (p > 0).any()
    arrays = problem.copy_arrays()
    pressure.poison(arrays)
    pressure.port(variant, problem, arrays, dev, True)()
    ok, worst = compare(arrays["p_new"], p, 0.0 if variant == "plain" else 1e-10)
    assert ok, worst


def test_matvec_reference_is_the_symmetric_27_point_product():
    """Materialize the 27 coefficient arrays from the 14 and their shifts, build the dense
    product independently, and check the matrix is symmetric on the interior."""
    app = APPS["MATVEC_3D_STENCIL"]
    problem = app.set_up(TINY)
    a = problem.copy_arrays()
    app.reference(problem, a)
    jp, kp = problem.params["jp"], problem.params["kp"]
    L = len(a["b"])
    shifts = {"ccr": ("ccl", 1), "cfc": ("cbc", jp), "ucc": ("dcc", kp), "ufr": ("dbl", 1 + jp + kp)}
    zones = a["real_zones"]
    for alias, (base, shift) in shifts.items():
        coef = np.zeros(L)
        coef[:L - shift] = a[base][shift:]
        # A(i -> neighbour) through the alias equals A(neighbour -> i) through the base
        k = {"ccr": 1, "cfc": jp, "ucc": kp, "ufr": 1 + jp + kp}[alias]
        np.testing.assert_array_equal(coef[zones], a[base][zones + k])
    dense = np.zeros(L)
    x = a["x"]
    for kc, ko in (("d", -kp), ("c", 0), ("u", kp)):
        for jc, jo in (("b", -jp), ("c", 0), ("f", jp)):
            for ic, io in (("l", -1), ("c", 0), ("r", 1)):
                name = kc + jc + ic
                if name in BASES:
                    coef = a[name][zones]
                else:                 # the mirror entry: the neighbour's coefficient towards this zone
                    mirror = {"d": "u", "u": "d", "c": "c"}[kc] + {"b": "f", "f": "b", "c": "c"}[jc] + \
                        {"l": "r", "r": "l", "c": "c"}[ic]
                    coef = a[mirror][zones + ko + jo + io]
                dense[zones] += coef * x[zones + ko + jo + io]
    np.testing.assert_allclose(a["b"][zones], dense[zones], rtol=1e-14)


def test_vol3d_of_the_uniform_mesh_is_dx_dy_dz():
    app = APPS["VOL3D"]
    problem = app.set_up(TINY)
    a = problem.copy_arrays()
    app.reference(problem, a)
    np.testing.assert_allclose(a["vol"][a["vol"] != 0][:5], 0.3 * 0.2 * 0.1, rtol=1e-12)
    from cubepy.bench.setup_data import domain_3d
    zones = domain_3d(TINY).real_zones()
    np.testing.assert_allclose(a["vol"][zones], 0.3 * 0.2 * 0.1, rtol=1e-12)


def test_ltimes_accumulates_across_reps():
    app = APPS["LTIMES"]
    problem = app.set_up(TINY)
    one, two = problem.copy_arrays(), problem.copy_arrays()
    app.reference(problem, one)
    app.reference(problem, two)
    app.reference(problem, two)
    expected = np.einsum("zgd,md->zgm", problem.arrays["psi"], problem.arrays["ell"])
    np.testing.assert_allclose(one["phi"], expected, rtol=1e-13)
    np.testing.assert_allclose(two["phi"], 2 * expected, rtol=1e-13)


def test_variant_names_filter_two_axes():
    assert parse_variants("plain") == [("plain", "checked"), ("plain", "unchecked")]
    assert parse_variants("tuned,unchecked") == [("tuned", "unchecked")]
    assert len(parse_variants("plain,tuned,checked,unchecked")) == 4
    with pytest.raises(ValueError, match="unknown variant"):
        parse_variants("fast")
