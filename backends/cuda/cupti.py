"""CUPTI's activity records as ``cb.profile()``'s timer on CUDA.

Two CUDA events around each profiled launch cost three driver calls (two ``cudaEventRecord`` and
one ``cudaEventElapsedTime``): about 4 us of host time a launch on an H100 host, more than a warm
launch itself. CUPTI, NVIDIA's profiling library, makes the driver write each kernel's start and
end into buffers this module hands it, for about 0.7 us a launch and no call of ours.

The records carry the kernel's entry name, not cubepy's launch, so a profiled launch only adds one
to its entry's `Tally` (no call, no object: `cubepy.runtime.profiling.LaunchTally`), and the n-th
record of that name, in the driver's order of calls (correlation ids), is launch n's time; a
profile reads the launches numbered between its start and its end. That holds while every launch
of the name goes through cubepy's runtime; where CUPTI saw launches of the name that cubepy did not
count (XLA's FFI calls, another library's kernel of that name, a record lost), the counts differ,
and that kernel's launches are NaN, with a RuntimeWarning that names the kernel and the fix
(``CUBEPY_PROFILE_TIMER=events``). Copies are not kernels: a NumPy argument's copies are counted
(bytes, count) but not in the device time, where events around the launch included them.

The records are read when a profile ends (`ActivityTimer.collect`): that waits for the GPUs the
profile launched on, flushes CUPTI's buffers and parses them. The record's layout is CUPTI's
``CUpti_ActivityKernel4`` to ``10`` (``cupti_activity.h``): the fields read here keep their
offsets from CUPTI 10 to 13.

CUPTI takes one client per process for activity records: where another profiler holds it (Nsight
Systems, torch.profiler) or no ``libcupti`` is found, the backend keeps its events.
``CUBEPY_PROFILE_TIMER=events`` chooses the events always.
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import math
import os
import struct
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from cubepy.runtime import profiling

KIND_KERNEL = 10                   # CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
FLUSH_FORCED = 1
MAX_LIMIT_REACHED = 12             # cuptiActivityGetNextRecord: no more records in the buffer
BUFFER_BYTES = 4 << 20
_KERNEL = struct.Struct("<QQ")     # start, end (ns) at offset 16
CORRELATION_AT, NAME_AT = 92, 104  # the driver call's correlation id (u32), the entry name (char *)
_U32 = struct.Struct("<I")
_POINTER = struct.Struct("<Q")

_REQUESTED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_COMPLETED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                              ctypes.c_size_t)


def library_candidates() -> list[str]:
    """Where ``libcupti`` may be: CUBEPY_CUPTI_LIBRARY, the NVIDIA wheels on ``sys.path`` (torch
    depends on one), the CUDA toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda*), the loader's path."""
    from cubepy import settings

    explicit = settings.cupti_library()
    if explicit:
        return [explicit]
    found: list[str] = []
    for entry in sys.path:
        nvidia = Path(entry or ".") / "nvidia"
        if nvidia.is_dir():
            found += sorted(glob.glob(str(nvidia / "**" / "libcupti.so*"), recursive=True), reverse=True)
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")] + sorted(glob.glob("/usr/local/cuda*"))
    for root in filter(None, roots):
        for sub in ("extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib"):
            found += sorted(glob.glob(os.path.join(root, sub, "libcupti.so*")), reverse=True)
    return found + ["libcupti.so"]


def typed(lib: ctypes.CDLL) -> ctypes.CDLL:
    """``lib`` with the argument types of the CUPTI calls `ActivityTimer` makes."""
    lib.cuptiActivityGetNextRecord.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    lib.cuptiActivityEnable.argtypes = lib.cuptiActivityDisable.argtypes = (ctypes.c_int,)
    lib.cuptiActivityFlushAll.argtypes = (ctypes.c_uint32,)
    return lib


class Tally:
    """One CUDA entry name's profiled launches (a `cubepy.runtime.profiling.LaunchTally`): a
    launch adds one to ``launched``; launch n's time is the n-th record of the name."""

    __slots__ = ("timer", "entry", "kernel", "launched")

    def __init__(self, timer: ActivityTimer, entry: str, kernel: str):
        self.timer, self.entry, self.kernel, self.launched = timer, entry, kernel, 0

    def times_ms(self, first: int, last: int) -> list[float]:
        return self.timer.times_ms(self, first, last)


class ActivityTimer:
    """CUPTI's kernel records for one process, on while a ``cb.profile()`` is active: `tally`
    gives the counter a kernel's profiled launches add to, `times_ms` their times, read from the
    records when asked (`collect`)."""

    def __init__(self, lib: ctypes.CDLL, synchronize: Callable[[int], None]):
        self._lib, self._synchronize = lib, synchronize
        self._enabled = False
        self.retired = False                       # the backend gave up on it (`forget`): it stays off
        self._tallies: dict[str, Tally] = {}       # entry name -> its tally
        self._devices: set[int] = set()            # the GPUs the tallies' kernels run on
        self._times: dict[str, list] = {}          # entry name -> its launches' ms, in call order
        self._names: dict[int, str] = {}           # a record's name pointer -> the name
        self._lock = threading.Lock()
        self._free: list = []                      # buffers to hand CUPTI again
        self._lent: dict[int, ctypes.Array] = {}   # address -> buffer CUPTI holds or filled
        self._filled: list[tuple[int, int]] = []   # (address, valid bytes), not parsed yet
        self._callbacks = (_REQUESTED(self._requested), _COMPLETED(self._completed))   # kept alive
        check(lib.cuptiActivityRegisterCallbacks(*self._callbacks), "cuptiActivityRegisterCallbacks")
        profiling.when_profiles_start(self._start)

    # --- CUPTI's calls into this object (any thread) ------------------------------------------
    def _requested(self, buffer_at: int, size_at: int, records_at: int) -> None:
        with self._lock:
            buffer = self._free.pop() if self._free else ctypes.create_string_buffer(BUFFER_BYTES)
            address = ctypes.addressof(buffer)
            self._lent[address] = buffer
        ctypes.c_void_p.from_address(buffer_at).value = address
        ctypes.c_size_t.from_address(size_at).value = BUFFER_BYTES
        ctypes.c_size_t.from_address(records_at).value = 0          # as many as fit

    def _completed(self, context: int, stream: int, buffer: int, size: int, valid: int) -> None:
        with self._lock:
            self._filled.append((buffer, valid))

    # --- the profile's side -----------------------------------------------------------------------
    def tally(self, entry: str, kernel: str, device: int) -> Tally:
        """The tally of entry ``entry`` (cubepy's kernel ``kernel``) on GPU ``device``; recording
        starts here if a profile is active and it has not (the first profile of the process)."""
        if profiling.ACTIVE and not self._enabled:
            self._enable()
        self._devices.add(device)
        found = self._tallies.get(entry)
        if found is None:
            found = self._tallies[entry] = Tally(self, entry, kernel)
            profiling.TALLIES.append(found)
        return found

    def times_ms(self, tally: Tally, first: int, last: int) -> list[float]:
        """Launches ``first`` to ``last - 1`` of ``tally``, read from the records (waiting)."""
        times = self._times.get(tally.entry, ())
        if len(times) < last:
            self.collect()
            times = self._times[tally.entry]
        return times[first:last]

    def buffers(self) -> int:
        """How many record buffers this timer has made (they are reused)."""
        with self._lock:
            return len(self._free) + len(self._lent)

    def collect(self) -> None:
        """Wait for the GPUs launched on, flush CUPTI's buffers and read their records."""
        for device in sorted(self._devices):
            self._synchronize(device)
        check(self._lib.cuptiActivityFlushAll(FLUSH_FORCED), "cuptiActivityFlushAll")
        with self._lock:
            filled, self._filled = self._filled, []
        found: dict[str, list] = {}
        for address, valid in filled:
            self._parse(address, valid, found)
            with self._lock:
                self._free.append(self._lent.pop(address))
        for entry, tally in self._tallies.items():
            records = found.get(entry, [])
            records.sort()                        # by correlation id: the order of the launch calls
            times = self._times.setdefault(entry, [])
            times += [ms for _, ms in records]
            if len(times) != tally.launched:
                self._disown(tally)

    def _disown(self, tally: Tally) -> None:
        """CUPTI's records of ``tally``'s entry are not its launches: which is whose is not known,
        so none is told."""
        self._times[tally.entry] = [math.nan] * tally.launched
        warnings.warn(f"cb.profile(): CUPTI's records of the CUDA kernel '{tally.entry}' are not the "
                      f"{tally.launched} launches cubepy made (another library launched a kernel of that name, "
                      "or XLA's FFI did, or a launch failed): their device times are NaN in this profile; set "
                      "CUBEPY_PROFILE_TIMER=events to time each launch with CUDA events", RuntimeWarning,
                      stacklevel=2)

    def _parse(self, address: int, valid: int, found: dict) -> None:
        view = memoryview(self._lent[address])
        record = ctypes.c_void_p(None)
        next_record, ref, names = self._lib.cuptiActivityGetNextRecord, ctypes.byref(record), self._names
        while next_record(address, valid, ref) == 0:
            at = record.value - address
            if _U32.unpack_from(view, at)[0] != KIND_KERNEL:
                continue
            pointer = _POINTER.unpack_from(view, at + NAME_AT)[0]
            name = names.get(pointer)
            if name is None:
                name = names[pointer] = ctypes.string_at(pointer).decode(errors="replace") if pointer else ""
            start, end = _KERNEL.unpack_from(view, at + 16)
            found.setdefault(name, []).append((_U32.unpack_from(view, at + CORRELATION_AT)[0], (end - start) / 1e6))

    def _start(self) -> None:
        if not self._enabled and not self.retired:
            try:
                self._enable()
            except CuptiError:
                pass               # the next tally asked for finds it off and the backend keeps events

    def _enable(self) -> None:
        check(self._lib.cuptiActivityEnable(KIND_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)")
        self._enabled = True
        profiling.when_profiles_end(self.disable)

    @property
    def enabled(self) -> bool:
        return self._enabled

    def disable(self) -> None:
        """Stop recording (the last profile ended): launches outside a profile pay nothing, and
        the tallies count from 0 again."""
        if self._enabled:
            self._enabled = False
            self._lib.cuptiActivityDisable(KIND_KERNEL)
            self._lib.cuptiActivityFlushAll(FLUSH_FORCED)
            with self._lock:
                filled, self._filled = self._filled, []
                for address, _ in filled:         # nothing reads them any more
                    self._free.append(self._lent.pop(address))
        for tally in self._tallies.values():
            tally.launched = 0
        self._times.clear()
        self._names.clear()


class CuptiError(RuntimeError):
    """A CUPTI call failed (another client holds CUPTI, or the library is too old)."""


def check(result: int, call: str) -> None:
    if result != 0:
        raise CuptiError(f"{call} returned CUPTI error {result}")


_TIMER: list = []            # [ActivityTimer or None] once looked for


def timer(synchronize: Callable[[int], None]) -> ActivityTimer | None:
    """The process's CUPTI timer, or None where CUPTI cannot serve (see the module's doc)."""
    if not _TIMER:
        _TIMER.append(find_timer(synchronize))
    return _TIMER[0]


def forget() -> None:
    """Drop the process's timer (it could not record): `timer` gives None from now on, and the
    timer no longer starts with a profile."""
    if _TIMER and _TIMER[0] is not None:
        _TIMER[0].retired = True
    _TIMER[:] = [None]


def find_timer(synchronize: Callable[[int], None]) -> ActivityTimer | None:
    """A new CUPTI timer, or None where ``CUBEPY_PROFILE_TIMER=events`` or no ``libcupti`` serves;
    ``synchronize(gpu_index)`` waits for a GPU's work. (`timer` keeps one for the process.)"""
    from cubepy import settings

    if settings.profile_timer() == "events":
        return None
    for candidate in library_candidates():
        try:
            lib = ctypes.CDLL(candidate)
        except OSError:
            continue
        try:
            found = ActivityTimer(typed(lib), synchronize)
        except (CuptiError, AttributeError):
            return None
        atexit.register(found.disable)
        return found
    return None


__all__ = ["ActivityTimer", "Tally", "find_timer", "forget", "library_candidates", "timer", "typed"]
