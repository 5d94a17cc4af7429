"""CUPTI's activity records as ``cb.profile()``'s timer on CUDA.

Two CUDA events around each profiled launch cost three driver calls (two ``cudaEventRecord`` and
one ``cudaEventElapsedTime``): about 4 us of host time a launch on an H100 host, more than a warm
launch itself. CUPTI, NVIDIA's profiling library, makes the driver write each kernel's start and
end into buffers this module hands it, for about 0.7 us a launch and no call of ours.

The records carry the kernel's entry name, not cubepy's launch: a profiled launch takes the next
number among its kernel's launches (a counter in Python, `ActivityTimer.start`), and the n-th
record of that name, in the driver's order of calls (correlation ids), is its time. That holds
while every launch of the name goes through cubepy's runtime; where CUPTI saw launches of the
name that cubepy did not make (XLA's FFI calls, another library's kernel of that name), the
counts differ, and those launches' times are NaN, with a RuntimeWarning that names the kernel
and the fix (``CUBEPY_PROFILE_TIMER=events``). Copies are not kernels: a NumPy argument's copies
are counted (bytes, count) but not in the device time, where events around the launch included
them.

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
from cubepy.runtime.events import not_recorded

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


class ActivityTimer:
    """CUPTI's kernel records for one process, on while a ``cb.profile()`` is active: `start`
    numbers a launch among its kernel's, `collect` reads the records, `span_ms` gives a launch's
    time."""

    def __init__(self, lib: ctypes.CDLL, synchronize: Callable[[int], None]):
        self._lib, self._synchronize = lib, synchronize
        self._enabled = False
        self._devices: set[int] = set()            # the GPUs launched on since the last collect
        self._launched: dict[str, int] = {}        # entry name -> profiled launches numbered so far
        self._times: dict[str, list] = {}          # entry name -> its launches' ms, in call order
        self._skipped: dict[str, set] = {}         # entry name -> numbers that launched nothing
        self._names: dict[int, str] = {}           # a record's name pointer -> the name
        self._lock = threading.Lock()
        self._free: list = []                      # buffers to hand CUPTI again
        self._lent: dict[int, ctypes.Array] = {}   # address -> buffer CUPTI holds or filled
        self._filled: list[tuple[int, int]] = []   # (address, valid bytes), not parsed yet
        self._callbacks = (_REQUESTED(self._requested), _COMPLETED(self._completed))   # kept alive
        check(lib.cuptiActivityRegisterCallbacks(*self._callbacks), "cuptiActivityRegisterCallbacks")

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
    def start(self, device: int, name: str) -> int:
        """The number of this launch of entry ``name`` (on GPU ``device``), made next on this thread."""
        if not self._enabled:
            self._enable()
        self._devices.add(device)
        launched = self._launched
        number = launched.get(name, 0)
        launched[name] = number + 1
        return number

    def span_ms(self, name: str, number: int) -> float | None:
        """Launch ``number`` of ``name``'s device time if its record is read, else None."""
        times = self._times.get(name)
        return times[number] if times is not None and number < len(times) else None

    def buffers(self) -> int:
        """How many record buffers this timer has made (they are reused)."""
        with self._lock:
            return len(self._free) + len(self._lent)

    def collect(self) -> None:
        """Wait for the GPUs launched on, flush CUPTI's buffers and read their records."""
        devices, self._devices = self._devices, set()
        for device in devices:
            self._synchronize(device)
        check(self._lib.cuptiActivityFlushAll(FLUSH_FORCED), "cuptiActivityFlushAll")
        with self._lock:
            filled, self._filled = self._filled, []
        found: dict[str, list] = {}
        for address, valid in filled:
            self._parse(address, valid, found)
            with self._lock:
                self._free.append(self._lent.pop(address))
        for name, made in self._launched.items():
            records = found.get(name, [])
            records.sort()                        # by correlation id: the order of the launch calls
            times = self._times.setdefault(name, [])
            skipped = self._skipped.get(name, ())
            ms = iter([m for _, m in records])
            while len(times) < made:              # number n's record is the n-th, numbers that launched nothing aside
                times.append(None if len(times) in skipped else next(ms, None))
            if next(ms, None) is not None or None in (times[n] for n in range(len(times)) if n not in skipped):
                self._disown(name)

    def give_back(self, name: str, number: int) -> None:
        """Launch ``number`` of ``name`` launched nothing."""
        self._skipped.setdefault(name, set()).add(number)

    def _disown(self, name: str) -> None:
        """CUPTI saw launches of ``name`` that cubepy did not number: which record is whose is not
        known, so none of them is told."""
        made = self._launched[name]
        self._times[name] = [math.nan] * made
        warnings.warn(f"cb.profile(): CUPTI's records of the CUDA kernel '{name}' are not the {made} launches "
                      "cubepy made (another library launched a kernel of that name, or XLA's FFI did): their "
                      "device times are NaN in this profile; set CUBEPY_PROFILE_TIMER=events to time each "
                      "launch with CUDA events", RuntimeWarning, stacklevel=2)

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

    def _enable(self) -> None:
        check(self._lib.cuptiActivityEnable(KIND_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)")
        self._enabled = True
        profiling.when_profiles_end(self.disable)

    def disable(self) -> None:
        """Stop recording (the last profile ended): launches outside a profile pay nothing."""
        if self._enabled:
            self._enabled = False
            self._lib.cuptiActivityDisable(KIND_KERNEL)
            self._lib.cuptiActivityFlushAll(FLUSH_FORCED)
            with self._lock:
                filled, self._filled = self._filled, []
                for address, _ in filled:         # nothing reads them any more
                    self._free.append(self._lent.pop(address))
            self._launched.clear()
            self._times.clear()
            self._skipped.clear()
            self._names.clear()


class CuptiInterval:
    """One profiled launch's `cubepy.runtime.events.Interval` from CUPTI's records."""

    __slots__ = ("_timer", "_name", "_number", "_ms")

    def __init__(self, timer: ActivityTimer, device: int, name: str):
        self._timer, self._name, self._ms = timer, name, None
        self._number = timer.start(device, name)

    def stop(self) -> None:
        pass                           # the record ends where the kernel does

    def discard(self) -> None:
        # Nothing was launched: the number goes back if no launch took one since, else the
        # counts will differ and the name's times say so (`ActivityTimer._disown`).
        self._timer.give_back(self._name, self._number)
        self._number = -1

    def done(self) -> bool:
        # Read with the others when the profile ends: nothing waits in a pool.
        return self._ms is not None

    def elapsed_ms(self) -> float:
        if self._ms is None:
            not_recorded(self._number < 0)
            timer = self._timer
            ms = timer.span_ms(self._name, self._number)
            if ms is None:
                timer.collect()
                ms = timer.span_ms(self._name, self._number)
            if ms is None:
                raise RuntimeError(f"CUPTI kept no record of launch {self._number} of CUDA kernel '{self._name}' "
                                   "in this profile: set CUBEPY_PROFILE_TIMER=events to time launches with CUDA "
                                   "events")
            self._ms = ms
        return self._ms


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
    """Drop the process's timer (it could not record): `timer` gives None from now on."""
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


__all__ = ["ActivityTimer", "CuptiInterval", "find_timer", "forget", "library_candidates", "timer", "typed"]
