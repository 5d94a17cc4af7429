"""Events time work in a device's launch order, on every device (no timing is asserted)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from tests.conftest import DEVICE_PARAMS


@cb.kernel
def scale(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = 2.0 * x[i]


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("dev", [p for p in DEVICE_PARAMS if p.values[0][1] in (None, 8)], indirect=True)
def test_events_around_launches_give_elapsed_milliseconds(dev, rng):
    x = rng.random(4096).astype(np.float32)
    y = np.full(4096, np.nan, np.float32)
    start, stop = dev.event(), dev.event()
    start.record()
    for _ in range(3):
        scale.launch(16, 256, x, y, device=dev)
    stop.record()
    ms = stop.elapsed_ms(start)
    assert isinstance(ms, float) and math.isfinite(ms) and ms >= 0
    stop.synchronize()
    np.testing.assert_array_equal(y, 2 * x)


def test_an_event_not_recorded_is_an_error():
    dev = cb.device("interp")
    start, stop = dev.event(), dev.event()
    start.record()
    with pytest.raises(ValueError, match="not recorded"):
        stop.elapsed_ms(start)
    with pytest.raises(ValueError, match="not recorded"):
        stop.synchronize()


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("dev", [p for p in DEVICE_PARAMS if p.values[0][1] in (None, 8)], indirect=True)
def test_profiled_warm_launches_each_get_an_interval_read_once_by_nested_profiles(dev, rng):
    x = rng.random(4096).astype(np.float32)
    y = np.full(4096, np.nan, np.float32)
    launcher = scale[16, 256]
    launcher(x, y, device=dev)
    with cb.profile() as outer:
        for _ in range(150):                       # past the 64 pending launches a profile reads early
            launcher(x, y, device=dev)
        with cb.profile() as inner:
            launcher(x, y, device=dev)
    ms_outer, ms_inner = outer.kernels["scale"].kernel_ms, inner.kernels["scale"].kernel_ms
    assert outer.kernels["scale"].launches == 151 and inner.kernels["scale"].launches == 1
    assert math.isfinite(ms_outer) and math.isfinite(ms_inner) and ms_outer >= ms_inner >= 0
    np.testing.assert_array_equal(y, 2 * x)


def test_a_device_that_finishes_its_launches_times_them_on_the_host_clock_alone():
    """The CPU device and the interpreter finish a launch before it returns: a profile's interval
    is two reads of the host clock (`HostInterval`), which spans the launch and is read once
    stopped; a device with a queue keeps its events."""
    from cubepy.runtime.events import EventInterval, HostInterval

    for name in ("cpu", "interp"):
        dev = cb.device(name)
        interval = dev.backend.interval(dev.properties)
        assert isinstance(interval, HostInterval) and not interval.done()
        with pytest.raises(ValueError, match="not recorded"):
            interval.elapsed_ms()
        scale.launch(1, 32, np.ones(32, np.float32), np.zeros(32, np.float32), device=dev)
        interval.stop()
        assert interval.done() and interval.elapsed_ms() > 0
    queued = type("Queued", (type(cb.device("cpu").backend),), {"finishes_launches": False})()
    assert isinstance(queued.interval(cb.device("cpu").properties), EventInterval)
