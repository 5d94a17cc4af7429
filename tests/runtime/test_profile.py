"""cb.profile(): launches, device time, compiles, copies and synchronizations per kernel, on every device
(no timing is asserted, only that times are there)."""

from __future__ import annotations

import math
import weakref

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from tests.conftest import DEVICE_PARAMS

ONE_PER_BACKEND = [p for p in DEVICE_PARAMS if p.values[0][1] in (None, 8)]


def make_kernel():
    @cb.kernel
    def scale(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i]
    return scale


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("dev", ONE_PER_BACKEND, indirect=True)
def test_a_profile_counts_launches_compiles_copies_and_syncs(dev, rng):
    scale = make_kernel()                    # fresh: its compile happens inside the profile
    x = rng.random(1000).astype(np.float32)
    y = np.full(1000, np.nan, np.float32)
    moves = not dev.host_memory
    with cb.profile() as p:
        for _ in range(3):
            scale[4, 256](x, y, 2.0, device=dev)          # warm launches are profiled too
        x_dev = cb.preload(x, device=dev)
        scale[4, 256](x_dev, y, 2.0, device=dev)
        dev.synchronize()
    np.testing.assert_array_equal(y, 2 * x)
    s = p.kernels["scale"]
    assert (s.launches, s.compiles + s.disk_loads) == (4, 1)     # a preloaded x specializes like a NumPy one
    assert math.isfinite(s.kernel_ms) and s.kernel_ms >= 0 and s.compile_ms > 0
    if moves:
        assert (s.h2d_count, s.h2d_bytes) == (7, 7 * 4000)   # x and y on 3 launches, y on the last
        assert (s.d2h_count, s.d2h_bytes, s.syncs) == (4, 4 * 4000, 4)
        assert p.kernels["cb.preload"].h2d_bytes == 4000
    else:
        assert s.h2d_count == s.d2h_count == 0 and "cb.preload" not in p.kernels
    assert p.kernels["synchronize"].syncs == 1
    table = p.table()
    assert table.splitlines()[0].split()[:3] == ["kernel", "launches", "kernel"] and "scale" in table


def test_nested_profiles_both_record_and_nothing_is_recorded_outside():
    scale = make_kernel()
    x = np.ones(64, np.float32)
    with cb.profile() as outer:
        scale[1, 64](x, x.copy(), 1.0, device="cpu")
        with cb.profile() as inner:
            scale[1, 64](x, x.copy(), 1.0, device="cpu")
    scale[1, 64](x, x.copy(), 1.0, device="cpu")
    assert outer.kernels["scale"].launches == 2 and inner.kernels["scale"].launches == 1
    found = outer.kernels["scale"]
    assert found.compiles + found.disk_loads == 1 and inner.kernels["scale"].compiles == 0


def test_nested_profiles_with_equal_figures_end_each_their_own():
    from cubepy.runtime.profiling import ACTIVE

    with cb.profile() as outer:
        with cb.profile() as inner:
            assert ACTIVE == [outer, inner]
        assert ACTIVE == [outer]        # the inner one left, though its (empty) figures equal the outer's
    assert ACTIVE == []


class _Tally:
    """A backend's launch tally whose launches took 0.5 ms each."""

    def __init__(self, kernel: str):
        self.kernel, self.launched, self.read = kernel, 0, []

    def times_ms(self, first: int, last: int) -> list[float]:
        self.read.append((first, last))
        return [0.5] * (last - first)


def test_a_backends_launch_tally_counts_profiled_launches_with_no_interval(monkeypatch):
    from cubepy.runtime import profiling

    dev = cb.device("cpu")
    tally = _Tally("scale")
    monkeypatch.setattr(profiling, "TALLIES", [tally])
    monkeypatch.setattr(type(dev.backend), "launch_tally", lambda self, props, executable, name: tally)
    monkeypatch.setattr(type(dev.backend), "interval", lambda self, props: pytest.fail("an interval was made"))
    scale = make_kernel()
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    launcher = scale[1, 64]
    launcher(x, y, 2.0, device=dev)                  # compiled and warm before the profile: not counted
    with cb.profile() as outer:
        for _ in range(3):
            launcher(x, y, 2.0, device=dev)          # the warm path
        with cb.profile() as inner:
            scale.launch(1, 64, x, y, 2.0, device=dev)   # the full path
    assert outer.kernels["scale"].launches == 4 and outer.kernels["scale"].kernel_ms == 2.0
    assert inner.kernels["scale"].launches == 1 and inner.kernels["scale"].kernel_ms == 0.5
    assert tally.read == [(3, 4), (0, 4)] and tally.launched == 4
    np.testing.assert_array_equal(y, 2 * x)


class _Interval:
    """An interval whose work is done (or not yet), 1 ms long."""

    def __init__(self, finished: bool):
        self.finished = finished

    def done(self) -> bool:
        return self.finished

    def elapsed_ms(self) -> float:
        return 1.0


def test_a_long_profile_reads_finished_launches_as_it_goes_and_lets_their_intervals_go():
    from cubepy.runtime.profiling import record_launch

    alive = weakref.WeakSet()
    most = 0
    with cb.profile() as p:
        for _ in range(1000):
            interval = _Interval(True)
            alive.add(interval)
            record_launch("k", interval)
            del interval
            most = max(most, len(alive))
        late = _Interval(False)                   # not done: read when the block ends, by waiting
        record_launch("k", late)
        late.finished = True
    assert most <= 64                             # the backends' events go back to their pools
    assert p.kernels["k"].launches == 1001 and p.kernels["k"].kernel_ms == 1001.0


def test_a_profile_reads_the_finished_prefix_with_few_queries():
    from cubepy.runtime.profiling import record_launch

    class Counted(_Interval):
        queries = 0

        def done(self) -> bool:
            Counted.queries += 1
            return self.finished

    with cb.profile() as p:
        for _ in range(63):
            record_launch("k", Counted(True))
        late = Counted(False)
        record_launch("k", late)                    # the 64th, not done: the read stops before it
        assert Counted.queries <= 7
        late.finished = True
    assert p.kernels["k"].launches == 64 and p.kernels["k"].kernel_ms == 64.0
