"""The CUDA backend's profiling intervals against a stand-in for CuPy's runtime module: raw event
handles come from a pool and go back to it exactly once (a GPU runs them in tests/runtime/test_events.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from cubepy.backends import cuda as cuda_backend
from cubepy.backends.cuda import CudaEvent, CudaInterval, cupti


class FakeError(Exception):
    def __init__(self, status: int):
        self.status = status


class FakeRuntime:
    """cupy.cuda.runtime's event calls: handles are ints, an event is done once recorded and
    synchronized where ``late`` (eventElapsedTime then raises cudaErrorNotReady until it is)."""

    CUDARuntimeError = FakeError

    def __init__(self, late: bool = False):
        self.created, self.destroyed, self.recorded, self.late, self.waited = 0, [], [], late, []

    def eventCreate(self) -> int:
        self.created += 1
        return 1000 + self.created

    def eventDestroy(self, handle: int) -> None:
        self.destroyed.append(handle)

    def eventRecord(self, handle: int, stream: int) -> None:
        self.recorded.append((handle, stream))

    def eventQuery(self, handle: int) -> int:
        return 0 if any(h == handle for h, _ in self.recorded) else 600

    def eventSynchronize(self, handle: int) -> None:
        self.waited.append(handle)

    def eventElapsedTime(self, start: int, stop: int) -> float:
        if self.late and stop not in self.waited:
            raise FakeError(600)
        return 0.25


def test_an_interval_records_both_ends_on_its_stream_and_gives_its_handles_back_once():
    rt, pool = FakeRuntime(), []
    interval = CudaInterval(rt, pool, 77, rt.eventCreate())
    assert not interval.done()                       # not stopped yet
    interval.stop()
    assert [s for _, s in rt.recorded] == [77, 77] and interval.done()
    assert interval.elapsed_ms() == 0.25 and interval.elapsed_ms() == 0.25   # nested profiles read it twice
    assert sorted(pool) == [1001, 1002]              # each handle once
    again = CudaInterval(rt, pool, 5, pool.pop())
    again.stop()
    assert rt.created == 2 and pool == []            # a warm profile creates no events


def test_a_discarded_interval_gives_its_start_back_and_cannot_be_read():
    rt, pool = FakeRuntime(), []
    interval = CudaInterval(rt, pool, 0, rt.eventCreate())
    interval.discard()
    assert pool == [1001]
    with pytest.raises(ValueError, match="not recorded"):
        interval.elapsed_ms()


def test_a_full_pool_destroys_the_handles_it_cannot_keep(monkeypatch):
    monkeypatch.setattr(CudaEvent, "POOL_SIZE", 1)
    rt, pool = FakeRuntime(), []
    interval = CudaInterval(rt, pool, 0, rt.eventCreate())
    interval.stop()
    interval.elapsed_ms()
    assert pool == [1001] and rt.destroyed == [1002]


def test_an_interval_read_before_its_work_is_done_waits_for_it_and_one_read_done_does_not():
    rt, pool = FakeRuntime(late=True), []
    interval = CudaInterval(rt, pool, 0, rt.eventCreate())
    interval.stop()
    assert interval.elapsed_ms() == 0.25 and rt.waited == [1002]
    rt = FakeRuntime()
    interval = CudaInterval(rt, [], 0, rt.eventCreate())
    interval.stop()
    assert interval.elapsed_ms() == 0.25 and rt.waited == []


class FakeDeviceRuntime(FakeRuntime):
    """FakeRuntime that notes which GPU was current when each event was created."""

    def __init__(self):
        super().__init__()
        self.current, self.made_on = 0, {}

    def eventCreate(self) -> int:
        handle = super().eventCreate()
        self.made_on[handle] = self.current
        return handle


def fake_cupy(rt: FakeDeviceRuntime, stream_ptr: int):
    class Device:
        def __init__(self, index: int):
            self.index = index

        def __enter__(self):
            self.before, rt.current = rt.current, self.index

        def __exit__(self, *exc):
            rt.current = self.before
    stream = SimpleNamespace(ptr=stream_ptr)
    return SimpleNamespace(cuda=SimpleNamespace(runtime=rt, Device=Device, get_current_stream=lambda: stream))


def test_a_backends_intervals_use_each_gpus_own_events_and_the_launch_stream(monkeypatch):
    monkeypatch.setenv("CUBEPY_PROFILE_TIMER", "events")          # CUPTI's timer: tests/backends/test_cupti.py
    monkeypatch.setattr(cupti, "_TIMER", [])
    rt = FakeDeviceRuntime()
    monkeypatch.setattr(cuda_backend, "_cupy", lambda: fake_cupy(rt, 55))
    b = cuda_backend.CudaBackend()
    b._devices, b._several_devices = {"gpu0": 0, "gpu1": 1}, True
    first = b.interval("gpu1")
    first.stop()
    assert {rt.made_on[h] for h, _ in rt.recorded} == {1} and [s for _, s in rt.recorded] == [55, 55]
    first.elapsed_ms()
    with cuda_backend._NamedStream(99):          # a warm launch's stream=
        again = b.interval("gpu1")
    again.stop()
    assert rt.created == 2 and [s for _, s in rt.recorded[2:]] == [99, 99]     # gpu1's pool, reused
    b.interval("gpu0").stop()
    assert [rt.made_on[h] for h, _ in rt.recorded[4:]] == [0, 0]               # not gpu1's events
