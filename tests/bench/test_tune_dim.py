"""The suite's tuned ports: each build runs at the faster of the two builds' autotuned shapes, as
timed side by side in that build (benchmarks/rajaperf/app.py, `tune_dim`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from cubepy.autotune.measure import Timing
from cubepy.bench import app

from tests.kernels import saxpy


@pytest.fixture
def tuner(monkeypatch):
    """The autotuner's choices per build, and the interleaved timings the head-to-head gets."""
    state = SimpleNamespace(chosen={False: (128, 1, 1), True: (256, 1, 1)}, times=[2.0, 1.0], timed=[])

    class Chosen:
        def __init__(self, kernel, grid, **options):
            self.kernel = kernel

        def best(self, *args, device):
            return SimpleNamespace(dim=state.chosen[self.kernel.checked])

    def interleaved(launches, dev, measure, rounds):
        state.timed.append(len(launches))
        return [Timing(ms, ms, ms, rounds, 1) for ms in state.times]

    monkeypatch.setattr(app, "autotune", Chosen)
    monkeypatch.setattr(app, "time_interleaved", interleaved)
    return state


DEVICE = SimpleNamespace(properties=SimpleNamespace(backend="cuda"))


@pytest.mark.parametrize("checked", [False, True])
def test_each_build_takes_the_shape_measured_faster_side_by_side(tuner, checked):
    assert app.tune_dim(saxpy, (), 1000, DEVICE, checked) == (4, 256)       # the second shape ran faster
    tuner.times = [1.0, 2.0]
    assert app.tune_dim(saxpy, (), 1000, DEVICE, checked) == (8, 128)
    assert tuner.timed == [2, 2]


def test_one_choice_for_both_builds_is_taken_without_a_head_to_head(tuner):
    tuner.chosen = {False: (64, 1, 1), True: (64, 1, 1)}
    assert app.tune_dim(saxpy, (), 1000, DEVICE, True) == (16, 64) and tuner.timed == []


def test_a_3d_shape_stays_a_tuple(tuner):
    tuner.chosen = {False: (32, 4, 1), True: (32, 4, 1)}
    assert app.tune_dim(saxpy, (), 0, DEVICE, False, grid=lambda args, dim: (1, 2, 3)) == ((1, 2, 3), (32, 4, 1))
