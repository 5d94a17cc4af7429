"""Search strategies on a deterministic synthetic cost model (benchmarks/autotune/synthetic.py,
thousands of configs, known optimum), budgets, the neighbourhood, and bad search requests."""

from __future__ import annotations

import time

import numpy as np
import pytest
from cubepy.autotune import STRATEGIES, Budget, Config, Evaluations, Space, autotune, shapes
from cubepy.autotune.search import run

import cubepy as cb
from benchmarks.autotune import measured
from benchmarks.autotune.synthetic import GPU_LIKE, cost, space
from tests.autotune.kernels import axpy, lines_grid


def search(strategy: str, sp: Space, table: dict, seed: int, max_evals=None, max_seconds=None) -> Evaluations:
    objective = Evaluations(lambda batch, out_of_time: {c: table[c] for c in batch},
                            Budget("synthetic", max_evals, max_seconds))
    run(STRATEGIES[strategy], sp, objective, seed)
    return objective


@pytest.fixture(scope="module")
def landscape():
    sp = space()
    return sp, {c: cost(c, seed=7) for c in sp.configs}


def test_pattern_search_gets_within_2_percent_in_a_tenth_of_the_evaluations(landscape):
    sp, table = landscape
    best = min(table.values())
    assert len(sp) >= 1000
    for seed in range(5):
        found = search("pattern", sp, table, seed, max_evals=len(sp) // 10)
        assert len(found.values) <= len(sp) // 10
        assert min(found.values.values()) <= best * 1.02, f"seed {seed}"


@pytest.mark.parametrize("table", measured.names())
def test_bayes_gets_within_2_percent_in_a_tenth_of_the_evaluations_of_measured_landscapes(table):
    # Landscapes measured exhaustively on the H200 and on the CPU, where pattern search with the
    # same budget misses 2% in a quarter to a third of the seeds (docs/design.md, "Autotuning").
    sp, times = measured.load(table)
    best = min(times.values())
    for seed in range(5):
        found = search("bayes", sp, times, seed, max_evals=len(sp) // 10)
        assert len(found.values) <= len(sp) // 10
        assert min(found.values.values()) <= best * 1.02, f"{table}, seed {seed}"


def test_bayes_is_seeded_and_stops_without_a_budget():
    sp, times = measured.load("polyval-h200-n8388608")
    one, two = search("bayes", sp, times, seed=4, max_evals=40), search("bayes", sp, times, seed=4, max_evals=40)
    assert list(one.values) == list(two.values)
    free = search("bayes", sp, times, seed=4)
    assert len(free.values) < len(sp) // 4
    assert min(free.values.values()) <= min(times.values()) * 1.10


def test_auto_picks_bayes_for_a_space_the_model_covers_and_pattern_beyond_it(landscape):
    from cubepy.autotune.search import BAYES_POOL, choose

    sp, _ = measured.load("polyval-h200-n8388608")
    budget = Budget("k", 120, None)
    assert len(sp) <= BAYES_POOL and choose("auto", sp, budget, "k").__name__ == "bayes"
    big, _ = landscape
    assert len(big) > BAYES_POOL and choose("auto", big, budget, "k").__name__ == "pattern"


def test_without_a_budget_pattern_search_stops_when_it_converges(landscape):
    sp, table = landscape
    found = search("pattern", sp, table, seed=3)
    assert len(found.values) < len(sp) // 10
    assert min(found.values.values()) <= min(table.values()) * 1.10


def test_random_sampling_draws_distinct_configs_within_the_budget(landscape):
    sp, table = landscape
    found = search("random", sp, table, seed=1, max_evals=50)
    assert len(found.values) == 50 and sp.default in found.values
    again = search("random", sp, table, seed=1, max_evals=50)
    assert list(again.values) == list(found.values)                   # seeded: the same draws
    other = search("random", sp, table, seed=2, max_evals=50)
    assert set(other.values) != set(found.values)


def test_exhaustive_search_finds_the_optimum():
    sp = Space(GPU_LIKE, dims=[32, 64, 128, 256], comptime={"per_unit": [1, 2, 4, 8, 16], "unroll": [1, 2]},
               lines={("x", "y"): [1, 2]})
    table = {c: cost(c) for c in sp.configs}
    found = search("exhaustive", sp, table, seed=0)
    assert len(found.values) == len(sp) == 80
    assert found.best() == min(table, key=table.get)


def test_a_budget_in_seconds_stops_the_search(landscape):
    sp, table = landscape

    def slow(batch, out_of_time):
        out = {}
        for c in batch:
            if out and out_of_time():
                break
            time.sleep(0.002)
            out[c] = table[c]
        return out

    objective = Evaluations(slow, Budget("synthetic", None, 0.1))
    began = time.perf_counter()
    run(STRATEGIES["random"], sp, objective, 0)
    assert 1 <= len(objective.values) < len(sp) and time.perf_counter() - began < 5


def test_neighbours_are_one_step_along_one_axis_or_a_reshaped_cube():
    sp = Space(GPU_LIKE, dims=shapes(GPU_LIKE, [64, 128]), comptime={"unroll": [1, 2, 4]}, fastmath=[None, "algebraic"])
    here = Config((64, 1, 1), (("unroll", 2),))
    near = {c.label for c in sp.neighbours(here)}
    assert "dim=128x1x1 unroll=2" in near and "dim=32x1x1 unroll=2" not in near     # 32x1x1 is not in the space
    assert {"dim=64x1x1 unroll=1", "dim=64x1x1 unroll=4", "dim=64x1x1 unroll=2 fastmath=algebraic",
            "dim=32x2x1 unroll=2"} <= near
    assert all(c in sp for c in sp.neighbours(here, step=2))


def test_the_space_of_a_device_filters_shapes_and_names_its_default():
    dev = cb.device("interp", plane_dim=8)
    sp = Space(dev.properties, dims=shapes(dev.properties, [64, 256]), comptime={"k": [2, 1]}, lines={"x": [1, 4]},
               valid=lambda c: c.dim[2] == 1, default={"dim": (16, 4, 1), "k": 1})
    assert all(c.dim[0] * c.dim[1] in (64, 256) and c.dim[2] == 1 for c in sp.configs)
    assert sp.default == Config((16, 4, 1), (("k", 1),), (("x", 1),))
    assert sp.configs[0].label == "dim=64x1x1 k=2 lines:x=1"
    assert Config.from_json(sp.default.to_json()) == sp.default


def test_bad_spaces_and_budgets_name_the_problem():
    props = cb.device("interp").properties
    with pytest.raises(ValueError, match=r"autotune 'k': no cube size fits device .* tried 4096x1x1"):
        Space(props, dims=[4096], kernel_name="k")
    with pytest.raises(ValueError, match="valid\\(\\) rejects every one of the 2 configs"):
        Space(props, dims=[64, 128], valid=lambda c: False)
    with pytest.raises(ValueError, match="the values of 'unroll' are an empty list"):
        Space(props, dims=[64], comptime={"unroll": []})
    with pytest.raises(ValueError, match="default config dim=32x1x1 is not in the space"):
        Space(props, dims=[64], default=Config((32, 1, 1)))
    with pytest.raises(ValueError, match="fastmath value 'fast' is not a mode"):
        Space(props, dims=[64], fastmath=[None, "fast"])
    with pytest.raises(ValueError, match="autotune 'axpy': max_evals=0 leaves nothing to evaluate"):
        autotune(axpy, lines_grid, comptime={"per_unit": [1]}, max_evals=0)
    with pytest.raises(ValueError, match="max_seconds=0 leaves nothing"):
        autotune(axpy, lines_grid, comptime={"per_unit": [1]}, max_seconds=0)
    with pytest.raises(ValueError, match="unknown strategy 'genetic'; choose one of auto, exhaustive, random, pat"):
        autotune(axpy, lines_grid, comptime={"per_unit": [1]}, strategy="genetic")
    with pytest.raises(TypeError, match="lines names 'a', which is not an array parameter"):
        autotune(axpy, lines_grid, lines={"a": [1, 2]})
    with pytest.raises(ValueError, match="on_mismatch='ignore'"):
        autotune(axpy, lines_grid, on_mismatch="ignore")


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
def test_a_search_over_lines_and_fastmath_on_a_real_kernel_stays_within_its_budget(rng, monkeypatch, tmp_path):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))        # a second run must measure again, not resume
    x = rng.standard_normal(4096).astype(np.float32)
    y = rng.standard_normal(4096).astype(np.float32)
    y0 = y.copy()
    tuned = autotune(axpy, lines_grid, dims=[64, 128], comptime={"per_unit": [1, 2]}, lines={("x", "y"): [1, 4]},
                     fastmath=[None, "algebraic"], strategy="random", max_evals=6, seed=5)
    result = tuned.tune(x, y, 0.5, device="cpu")
    assert result.evaluations == 6 and result.measured == 6 and not result.rejected and not result.failed
    assert len(tuned.space("cpu")) == 16 and result.config in tuned.space("cpu")
    tuned(x, y, 0.5, device="cpu")
    np.testing.assert_allclose(y, y0 + 0.5 * x, rtol=1e-6)


def test_a_tiny_time_budget_still_evaluates_the_first_config(rng):
    x = rng.standard_normal(1024).astype(np.float32)
    y = rng.standard_normal(1024).astype(np.float32)
    tuned = autotune(axpy, lines_grid, dims=[32, 64, 128, 256], comptime={"per_unit": [1, 2]}, strategy="random",
                     max_seconds=1e-9, workers=0)
    result = tuned.tune(x, y, 0.5, device="cpu")
    assert result.evaluations == 1 and result.config == tuned.space("cpu").default
