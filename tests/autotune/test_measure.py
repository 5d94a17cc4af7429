"""Measurement that gives the same answer twice: the interval of the median, outliers, and ten
tunings in a row that pick the same config where the costs differ by far more than the noise
(no time is asserted: only which config wins a race it cannot lose)."""

from __future__ import annotations

import numpy as np
import pytest
from cubepy.autotune import Measure, autotune
from cubepy.autotune.measure import median_interval, outliers, time_launches

import cubepy as cb
from tests.autotune.kernels import busy_copy, one_per_unit


def test_the_interval_of_the_median_is_the_order_statistics_around_it(rng):
    samples = list(rng.normal(10.0, 1.0, 101))
    low, high = median_interval(samples)
    ordered = sorted(samples)
    assert ordered[39] <= low < float(np.median(samples)) < high <= ordered[61]
    assert median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)         # too few samples: the whole range
    assert outliers([1.0 + 0.01 * k for k in range(-5, 6)] + [50.0]) == 1
    assert outliers([1.0, 2.0]) == 0


def test_settings_of_measurement_are_checked():
    with pytest.raises(ValueError, match="rounds=0 must be at least 1"):
        Measure(rounds=0)
    with pytest.raises(ValueError, match="reps=0"):
        Measure(reps=0)


def test_a_timing_reports_its_samples_and_interval(rng):
    dev = cb.device("cpu")
    x = rng.random(4096).astype(np.float32)
    y = np.zeros_like(x)
    launch = busy_copy.compile(x, y, 4, dim=64, device=dev)[64]
    timing = time_launches(lambda: launch(x, y, 4), dev, Measure(rounds=6, max_rounds=12))
    assert 6 <= timing.samples <= 12 and timing.reps >= 1
    assert 0 < timing.low <= timing.ms <= timing.high
    np.testing.assert_array_equal(y, x)


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("name, runs, n, work", [
    ("cpu", 10, 1 << 16, [256, 1, 64]),
    ("opencl", 4, 1 << 16, [256, 1, 64]),           # PoCL: the queued timer, behind the spin kernel
    ("cuda", 10, 1 << 22, [1024, 1, 256]),          # enough work per launch that launches do not hide it
])
def test_ten_tunings_in_a_row_pick_the_same_config(name, runs, n, work, rng, tmp_path, monkeypatch):
    if not next(d for d in cb.devices() if d.backend_name == name).available:
        pytest.skip(f"no {name} device")
    # One thread: a launch split over threads waits for the slowest, which another process on a
    # shared machine can hold up for a whole time slice.
    device = cb.device("cpu", threads=1) if name == "cpu" else cb.device(name)
    x = rng.random(n).astype(np.float32)
    picks = []
    for run in range(runs):
        monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path / str(run)))      # nothing cached: measured anew
        y = np.zeros_like(x)
        tuned = autotune(busy_copy, one_per_unit, dims=[64], comptime={"work": work}, workers=0)
        tuned(x, y, device=device)
        result = tuned.results[next(iter(tuned.results))]
        assert result.origin == "measured" and result.measured == 3
        picks.append(dict(result.config.comptime)["work"])
        np.testing.assert_array_equal(y, x)
    assert picks == [1] * runs
