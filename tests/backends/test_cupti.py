"""The CUDA profile timer from CUPTI's activity records (`cubepy.backends.cuda.cupti`), against a
stand-in CUPTI that writes records the way the real one lays them out (no GPU needed; the GPU
tests compare it with CUDA events on a device)."""

from __future__ import annotations

import ctypes
import struct

import pytest
from cubepy.backends.cuda import cupti

from cubepy.runtime import profiling


class StandInCupti:
    """CUPTI's activity calls: a per-thread stack of external ids, API records for the enabled
    driver calls, each preceded by an external correlation record for the id on top, and the
    device work's records; buffers from the client's callbacks, handed back on a flush."""

    def __init__(self):
        self.stack: list[tuple[int, int]] = []
        self.kinds: set[int] = set()
        self.driver_calls: set[int] = set()
        self.pending: list[bytes] = []
        self.correlation = 100
        self.sizes: dict[int, int] = {}       # record address -> its size
        self.flushes = 0

    def cuptiActivityRegisterCallbacks(self, requested, completed):
        self.requested, self.completed = requested, completed
        return 0

    def cuptiActivityPushExternalCorrelationId(self, kind, ident):
        self.stack.append((kind, ident))
        return 0

    def cuptiActivityPopExternalCorrelationId(self, kind, at):
        assert self.stack and self.stack[-1][0] == kind
        self.stack.pop()
        return 0

    def cuptiActivityEnable(self, kind):
        self.kinds.add(kind)
        return 0

    def cuptiActivityDisable(self, kind):
        self.kinds.discard(kind)
        return 0

    def cuptiActivityEnableDriverApi(self, call, on):
        (self.driver_calls.add if on else self.driver_calls.discard)(call)
        return 0

    def cuptiActivityEnableRuntimeApi(self, call, on):
        (self.driver_calls.add if on else self.driver_calls.discard)(-call)     # runtime calls: negative
        return 0

    def call(self, cbid: int, work: list[tuple[int, int, int]]) -> None:
        """A driver call ``cbid`` whose device work is ``work``: (kind, start ns, end ns) each."""
        self.correlation += 1
        if cbid in self.driver_calls and self.kinds:
            if cupti.KIND_EXTERNAL_CORRELATION in self.kinds:
                for kind, ident in self.stack:
                    self.pending.append(struct.pack("<IIQII", cupti.KIND_EXTERNAL_CORRELATION, kind, ident,
                                                    self.correlation, 0))
            self.pending.append(struct.pack("<I", 4) + bytes(28))          # the API record: skipped
        for kind, start, end in work:
            if kind not in self.kinds:
                continue
            record = bytearray(112 if kind == cupti.KIND_KERNEL else 48)
            struct.pack_into("<I", record, 0, kind)
            struct.pack_into("<QQ", record, 16, start, end)
            struct.pack_into("<I", record, cupti.CORRELATION_AT[kind], self.correlation)
            self.pending.append(bytes(record))

    def cuptiActivityFlushAll(self, flag):
        self.flushes += 1
        if not self.pending:
            return 0
        buffer_at, size, most = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
        self.requested(ctypes.addressof(buffer_at), ctypes.addressof(size), ctypes.addressof(most))
        data = b"".join(self.pending)
        assert len(data) <= size.value
        ctypes.memmove(buffer_at.value, data, len(data))
        at = buffer_at.value
        for record in self.pending:
            self.sizes[at] = len(record)
            at += len(record)
        self.pending = []
        self.completed(None, 0, buffer_at.value, size.value, len(data))
        return 0

    def cuptiActivityGetNextRecord(self, buffer, valid, ref):
        record = ref._obj
        at = buffer if record.value is None else record.value + self.sizes[record.value]
        if at >= buffer + valid:
            return cupti.MAX_LIMIT_REACHED
        record.value = at
        return 0


LAUNCH, COPY = 307, -41          # cuLaunchKernel; cudaMemcpyAsync (a runtime call: negative here)


@pytest.fixture
def stand_in():
    lib = StandInCupti()
    synced: list[int] = []
    timer = cupti.ActivityTimer(lib, synced.append)
    yield lib, timer, synced
    timer.disable()


def test_a_launch_takes_the_span_of_its_own_device_work(stand_in):
    lib, timer, synced = stand_in
    with profiling.profile() as p:
        first = cupti.CuptiInterval(timer, 0)
        lib.call(COPY, [(cupti.KIND_MEMCPY, 1_000, 3_000)])           # a NumPy argument's copy
        lib.call(LAUNCH, [(cupti.KIND_KERNEL, 4_000, 9_000)])
        first.stop()
        profiling.record_launch("k", first)
        lib.call(LAUNCH, [(cupti.KIND_KERNEL, 9_500, 9_900)])        # no profiled launch: not counted
        second = cupti.CuptiInterval(timer, 1)
        lib.call(LAUNCH, [(cupti.KIND_KERNEL, 10_000, 12_500)])
        second.stop()
        profiling.record_launch("k", second)
        assert not first.done()          # read when the profile ends, not before
    assert p.kernels["k"].launches == 2
    assert p.kernels["k"].kernel_ms == pytest.approx((8_000 + 2_500) / 1e6)
    assert sorted(synced) == [0, 1]      # it waited for both GPUs before reading
    assert first.elapsed_ms() == pytest.approx(0.008) and first.done()    # read again: the same
    assert lib.stack == []


def test_the_timer_records_only_while_a_profile_is_active(stand_in):
    lib, timer, _ = stand_in
    with profiling.profile():
        with profiling.profile() as inner:
            interval = cupti.CuptiInterval(timer, 0)
            lib.call(LAUNCH, [(cupti.KIND_KERNEL, 0, 1_000)])
            interval.stop()
            profiling.record_launch("k", interval)
        assert inner.kernels["k"].kernel_ms == pytest.approx(0.001)
        assert lib.kinds and lib.driver_calls     # the outer profile still runs
    assert not lib.kinds and not lib.driver_calls
    assert LAUNCH in cupti.DRIVER_CALLS and -COPY in cupti.RUNTIME_CALLS


def test_other_clients_ids_and_untimed_calls_are_left_out(stand_in):
    lib, timer, _ = stand_in
    with profiling.profile() as p:
        lib.cuptiActivityPushExternalCorrelationId(3, 77)          # another client's id (CUSTOM0)
        interval = cupti.CuptiInterval(timer, 0)
        lib.call(LAUNCH, [(cupti.KIND_KERNEL, 0, 2_000)])
        interval.stop()
        lib.cuptiActivityPopExternalCorrelationId(3, None)
        profiling.record_launch("k", interval)
        empty = cupti.CuptiInterval(timer, 0)
        lib.call(999, [])                    # a driver call with no API record: no record, no work
        empty.stop()
    assert p.kernels["k"].kernel_ms == pytest.approx(0.002)
    with pytest.raises(RuntimeError, match="CUBEPY_PROFILE_TIMER=events"):
        empty.elapsed_ms()


def test_a_discarded_interval_pops_its_id_and_cannot_be_read(stand_in):
    lib, timer, _ = stand_in
    with profiling.profile():
        interval = cupti.CuptiInterval(timer, 0)
        assert lib.stack == [(cupti.EXTERNAL_KIND, 1)]
        interval.discard()
        assert lib.stack == []
        with pytest.raises(Exception, match="not recorded|record"):
            interval.elapsed_ms()


def test_buffers_are_handed_back_and_reused(stand_in):
    lib, timer, _ = stand_in
    for round_ in range(3):
        with profiling.profile() as p:
            interval = cupti.CuptiInterval(timer, 0)
            lib.call(LAUNCH, [(cupti.KIND_KERNEL, 0, 1_000 * (round_ + 1))])
            interval.stop()
            profiling.record_launch("k", interval)
        assert p.kernels["k"].kernel_ms == pytest.approx(0.001 * (round_ + 1))
    assert timer.buffers() == 1              # one buffer served all three profiles


def test_the_events_setting_and_the_library_path_are_honoured(monkeypatch, tmp_path):
    monkeypatch.setenv("CUBEPY_CUPTI_LIBRARY", str(tmp_path / "libcupti.so.13"))
    assert cupti.library_candidates() == [str(tmp_path / "libcupti.so.13")]
    monkeypatch.setenv("CUBEPY_PROFILE_TIMER", "events")
    assert cupti.find_timer(lambda index: None) is None
    monkeypatch.setenv("CUBEPY_PROFILE_TIMER", "cupti")
    with pytest.raises(ValueError, match="CUBEPY_PROFILE_TIMER='cupti': use auto or events"):
        cupti.find_timer(lambda index: None)
    monkeypatch.setenv("CUBEPY_PROFILE_TIMER", "auto")       # a library that is not there: events
    assert cupti.find_timer(lambda index: None) is None


def test_a_backend_whose_cupti_cannot_record_times_with_events(monkeypatch):
    from cubepy.backends import cuda as cuda_backend

    from tests.backends.test_cuda_interval import FakeDeviceRuntime, fake_cupy

    class Refusing(StandInCupti):
        def cuptiActivityEnable(self, kind):
            super().cuptiActivityEnable(kind)
            return 0 if kind == cupti.KIND_EXTERNAL_CORRELATION else 999       # CUPTI_ERROR_UNKNOWN

    lib = Refusing()
    monkeypatch.setattr(cupti, "_TIMER", [cupti.ActivityTimer(lib, lambda index: None)])
    monkeypatch.setattr(cuda_backend, "_cupy", lambda: fake_cupy(FakeDeviceRuntime(), 55))
    backend = cuda_backend.CudaBackend()
    backend._devices = {"gpu0": 0}
    interval = backend.interval("gpu0")
    assert isinstance(interval, cuda_backend.CudaInterval)
    assert not lib.kinds and lib.stack == []       # what it had enabled is off again, nothing pushed
    assert cupti.timer(lambda index: None) is None and isinstance(backend.interval("gpu0"), cuda_backend.CudaInterval)
