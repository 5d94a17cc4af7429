"""The CUDA profile timer from CUPTI's kernel records (`cubepy.backends.cuda.cupti`), against a
stand-in CUPTI that writes records the way the real one lays them out (no GPU needed; on a GPU,
tests/gpu/test_cuda_device.py compares it with CUDA events)."""

from __future__ import annotations

import ctypes
import math
import struct

import pytest
from cubepy.backends.cuda import cupti

from cubepy.runtime import profiling


class StandInCupti:
    """CUPTI's activity calls for kernel records: each launch gets the next correlation id; a
    kernel's record (its entry name as a C string, start and end) is written when it finishes,
    in any order; buffers come from the client's callbacks and go back on a flush."""

    def __init__(self):
        self.kinds: set[int] = set()
        self.pending: list[bytes] = []
        self.correlation = 100
        self.sizes: dict[int, int] = {}       # record address -> its size
        self.strings: dict[str, ctypes.Array] = {}

    def cuptiActivityRegisterCallbacks(self, requested, completed):
        self.requested, self.completed = requested, completed
        return 0

    def cuptiActivityEnable(self, kind):
        self.kinds.add(kind)
        return 0

    def cuptiActivityDisable(self, kind):
        self.kinds.discard(kind)
        return 0

    def launch(self, name: str, start: int, end: int) -> bytes:
        """A kernel launch; its record (to `finish` now or later), or b"" while not recording."""
        self.correlation += 1
        if cupti.KIND_KERNEL not in self.kinds:
            return b""
        text = self.strings.setdefault(name, ctypes.create_string_buffer(name.encode()))
        record = bytearray(144)
        struct.pack_into("<I", record, 0, cupti.KIND_KERNEL)
        struct.pack_into("<QQ", record, 16, start, end)
        struct.pack_into("<I", record, cupti.CORRELATION_AT, self.correlation)
        struct.pack_into("<Q", record, cupti.NAME_AT, ctypes.addressof(text))
        return bytes(record)

    def finish(self, *records: bytes) -> None:
        self.pending += [r for r in records if r]

    def cuptiActivityFlushAll(self, flag):
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


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(profiling, "TALLIES", [])
    monkeypatch.setattr(profiling, "_WHEN_STARTED", [])
    lib = StandInCupti()
    synced: list[int] = []
    timer = cupti.ActivityTimer(lib, synced.append)
    yield lib, timer, synced
    timer.disable()


def profiled(lib, timer, entry: str, start: int, end: int, device: int = 0) -> bytes:
    """A profiled launch of ``entry`` as the runtime makes one: its tally counts it; its record."""
    timer.tally(entry, f"kernel {entry}", device).launched += 1
    return lib.launch(entry, start, end)


def test_each_launch_takes_its_own_record_in_the_order_of_the_calls(stand_in):
    lib, timer, synced = stand_in
    with profiling.profile() as p:
        a1 = profiled(lib, timer, "a", 1_000, 5_000)
        b1 = profiled(lib, timer, "b", 2_000, 2_500, device=1)
        a2 = profiled(lib, timer, "a", 6_000, 6_250)
        lib.finish(a2, b1, a1)                     # written as they finished, not as they were called
        lib.finish(lib.launch("other", 0, 10_000))    # another library's kernel: not cubepy's
    a, b = p.kernels["kernel a"], p.kernels["kernel b"]
    assert a.launches == 2 and a.kernel_ms == pytest.approx(0.00425)
    assert b.launches == 1 and b.kernel_ms == pytest.approx(0.0005) and len(p.kernels) == 2
    assert sorted(set(synced)) == [0, 1]          # it waited for both GPUs before reading


def test_the_timer_records_only_while_a_profile_is_active_and_nested_profiles_read_their_own(stand_in):
    lib, timer, _ = stand_in
    timer.tally("a", "kernel a", 0)                  # made outside a profile: nothing starts
    assert not lib.kinds
    lib.finish(lib.launch("a", 0, 1_000))            # before any profile: not recorded
    for _ in range(2):                               # the second time the profile's start turns it on
        with profiling.profile() as outer:
            assert lib.kinds
            lib.finish(profiled(lib, timer, "a", 0, 2_000))
            with profiling.profile() as inner:
                lib.finish(profiled(lib, timer, "a", 0, 3_000))
            assert inner.kernels["kernel a"].kernel_ms == pytest.approx(0.003)
            assert inner.kernels["kernel a"].launches == 1 and lib.kinds       # the outer one still runs
            lib.finish(profiled(lib, timer, "a", 0, 4_000))
        assert outer.kernels["kernel a"].kernel_ms == pytest.approx(0.009)
        assert outer.kernels["kernel a"].launches == 3
        assert not lib.kinds
        lib.finish(lib.launch("a", 0, 8_000))        # between profiles: not recorded


def test_launches_of_the_name_cubepy_did_not_make_give_nan_and_a_warning(stand_in):
    lib, timer, _ = stand_in
    with pytest.warns(RuntimeWarning, match="'a'.*CUBEPY_PROFILE_TIMER=events"):
        with profiling.profile() as p:
            lib.finish(profiled(lib, timer, "a", 0, 1_000), lib.launch("a", 0, 5_000),
                       profiled(lib, timer, "b", 0, 1_000))
    assert math.isnan(p.kernels["kernel a"].kernel_ms) and p.kernels["kernel a"].launches == 1
    assert p.kernels["kernel b"].kernel_ms == pytest.approx(0.001)


def test_a_launch_without_a_record_is_nan_with_a_warning_that_names_the_fix(stand_in):
    lib, timer, _ = stand_in
    with pytest.warns(RuntimeWarning, match="CUBEPY_PROFILE_TIMER=events"):
        with profiling.profile() as p:
            profiled(lib, timer, "a", 0, 1_000)        # its record never comes (CUPTI dropped it)
    assert math.isnan(p.kernels["kernel a"].kernel_ms) and p.kernels["kernel a"].launches == 1
    assert not lib.kinds                             # the timer stopped all the same


def test_buffers_are_handed_back_and_reused(stand_in):
    lib, timer, _ = stand_in
    for round_ in range(3):
        with profiling.profile() as p:
            lib.finish(profiled(lib, timer, "a", 0, 1_000 * (round_ + 1)))
        assert p.kernels["kernel a"].kernel_ms == pytest.approx(0.001 * (round_ + 1))
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
    from types import SimpleNamespace

    from cubepy.backends import cuda as cuda_backend

    class Refusing(StandInCupti):
        def cuptiActivityEnable(self, kind):
            return 999                                   # CUPTI_ERROR_UNKNOWN

    monkeypatch.setattr(profiling, "_WHEN_STARTED", [])
    monkeypatch.setattr(cupti, "_TIMER", [cupti.ActivityTimer(Refusing(), lambda index: None)])
    backend = cuda_backend.CudaBackend()
    executable = SimpleNamespace(rendered=SimpleNamespace(name="a"), device_index=0)
    refusing = cupti.timer(lambda index: None)
    with profiling.profile():
        assert backend.launch_tally("gpu0", executable, "a") is None
    assert cupti.timer(lambda index: None) is None and backend.launch_tally("gpu0", executable, "a") is None
    assert refusing.retired
    refusing._lib.cuptiActivityEnable = StandInCupti.cuptiActivityEnable.__get__(refusing._lib)    # CUPTI free again
    with profiling.profile():
        assert not refusing.enabled                  # given up on: it does not start with profiles
