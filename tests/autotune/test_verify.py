"""Every candidate's output is checked against the default config's before its time counts: a
candidate computing another answer is reported and skipped, whatever its speed."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
from cubepy.autotune import autotune

from tests.autotune.kernels import one_per_unit, scaled
from tests.conftest import DEVICE_PARAMS

ONE_PER_BACKEND = [p for p in DEVICE_PARAMS if p.values[0][1] in (None, 8)]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("dev", ONE_PER_BACKEND, indirect=True)
def test_a_candidate_with_another_answer_is_reported_and_never_chosen(dev, rng, caplog):
    x = rng.standard_normal(2048).astype(np.float32)
    y = (2 * x + 1 + rng.random(2048)).astype(np.float32)         # an element left unwritten is wrong
    tuned = autotune(scaled, one_per_unit, dims=[64], comptime={"mode": [0, 1, 2]}, workers=0, rounds=2)
    with caplog.at_level(logging.WARNING, logger="cubepy"):
        tuned(x, y, device=dev)
    result = next(iter(tuned.results.values()))
    assert set(result.rejected) == {"dim=64x1x1 mode=1", "dim=64x1x1 mode=2"}
    assert re.search(r"'y' differs in \d+ of 2048 elements", result.rejected["dim=64x1x1 mode=1"])
    assert "differs in 1024 of 2048 elements, first at index 1" in result.rejected["dim=64x1x1 mode=2"]
    assert result.config.label == "dim=64x1x1 mode=0" and result.times["dim=64x1x1 mode=2"] == float("inf")
    assert sum("computes another answer than the default config" in r.message for r in caplog.records) == 2
    np.testing.assert_array_equal(y, 2.0 * x)


def test_tolerances_decide_what_counts_as_the_same_answer(rng):
    x = rng.random(1024).astype(np.float32) + 0.5
    y = np.zeros_like(x)
    loose = autotune(scaled, one_per_unit, dims=[64], comptime={"mode": [0, 1]}, rtol=1e-2, workers=0, rounds=2)
    loose(x, y, device="cpu")
    assert not next(iter(loose.results.values())).rejected          # 1e-3 apart: within rtol=1e-2
    strict = autotune(scaled, one_per_unit, dims=[64], comptime={"mode": [0, 1]}, rtol=1e-5, atol=0, workers=0,
                      rounds=2)
    strict.tune(x, y, device="cpu")
    assert list(next(iter(strict.results.values())).rejected) == ["dim=64x1x1 mode=1"]


def test_the_default_config_is_the_reference(rng):
    x = rng.random(1024).astype(np.float32)
    y = np.zeros_like(x)
    tuned = autotune(scaled, one_per_unit, dims=[64], comptime={"mode": [0, 2]}, default={"mode": 2}, workers=0,
                     rounds=2)
    tuned(x, y, device="cpu")
    result = next(iter(tuned.results.values()))
    assert list(result.rejected) == ["dim=64x1x1 mode=0"] and "default config dim=64x1x1 mode=2" in \
        result.rejected["dim=64x1x1 mode=0"]
    unchecked = autotune(scaled, one_per_unit, dims=[64], comptime={"mode": [0, 2]}, verify=False, workers=0,
                         rounds=2)
    unchecked.tune(x, y, device="cpu")
    assert not next(iter(unchecked.results.values())).rejected
