"""CUPTI's activity records as ``cb.profile()``'s timer on CUDA.

Two CUDA events around each profiled launch cost three driver calls (two ``cudaEventRecord`` and
one ``cudaEventElapsedTime``): about 3-4 us of host time a launch on an H200 host, more than a
warm launch itself. CUPTI, NVIDIA's profiling library, makes the driver write each kernel's (and
copy's) start and end into buffers this module hands it. A profiled launch pushes and pops an
*external correlation id* around the launch (two calls into CUPTI, no driver call); CUPTI writes
an API record for each launch, copy or memset call of the driver or the runtime
(`DRIVER_CALLS`, `RUNTIME_CALLS`: no other call is traced) and, before it, one linking that id
to the call's correlation id. The launch's device time is the span from the first start to the
last end among its kernels, copies and memsets: what two events around the launch measured, less
the gaps.

The records are read when a profile's launches are read (`ActivityTimer.collect`): that waits for
the GPUs the profile launched on, flushes CUPTI's buffers and parses them. The record layouts are
CUPTI's (``cupti_activity.h``): the fields read here keep their offsets from CUPTI 10 to 13.

CUPTI takes one client per process for activity records: where another profiler holds it (Nsight
Systems, torch.profiler) or no ``libcupti`` is found, the backend keeps its events.
``CUBEPY_PROFILE_TIMER=events`` chooses the events always.
"""

from __future__ import annotations

import atexit
import ctypes
import glob
import itertools
import os
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from cubepy.runtime import profiling
from cubepy.runtime.events import not_recorded

KIND_MEMCPY, KIND_MEMSET, KIND_KERNEL, KIND_EXTERNAL_CORRELATION = 1, 2, 10, 39
TIMED_KINDS = (KIND_MEMCPY, KIND_MEMSET, KIND_KERNEL)
# The driver calls whose API records CUPTI writes while a profile runs (``cupti_driver_cbid.h``):
# an external correlation record comes with an API record, so these are the calls a profiled
# launch's id reaches: kernel launches, copies and memsets. Every other driver call stays untraced.
LAUNCH_CALL = 307                  # cuLaunchKernel: CuPy's launch; required
DRIVER_CALLS = (
    43, 45, 47, 56, 57, 58, 60, 62, 64, 68, 69, 248, 249, 250, 251, 252, 253, 254, 276, 277, 278, 279, 280, 281,
    287, 288, 289, 290, 291, 305, 306, 307, 318, 319, 320, 321, 397, 398, 399, 405, 406, 407, 408, 409, 410,
    411, 412, 413, 414, 415, 416, 418, 421, 422, 423, 424, 425, 426, 427, 428, 429, 430, 431, 432, 433, 442,
    477, 478, 652, 653, 776, 777, 778, 779, 796, 797, 798, 799, 216, 218, 220, 222, 224, 226,
)
# The runtime's calls of the same kinds (``cupti_runtime_cbid.h``): CuPy copies with
# ``cudaMemcpyAsync``, whose work the driver's calls above do not see.
RUNTIME_CALLS = (
    13, *range(31, 53), 142, 143, 144, 145, 160, 161, 162, 163, 211, 213, 214, *range(215, 237), 243, 244, 245,
    246, 249, 250, 269, 270, 272, 430, 431, 482, 483, 484, 485, 509, 510, 511, 512,
)
EXTERNAL_KIND = 5                  # CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 (torch's Kineto uses CUSTOM0 and 1)
FLUSH_FORCED = 1
MAX_LIMIT_REACHED = 12             # cuptiActivityGetNextRecord: no more records in the buffer
BUFFER_BYTES = 4 << 20

# (offset of start, end (u64), correlation id (u32)) in each timed record; start and end sit at
# 16 and 24 in all three
CORRELATION_AT = {KIND_KERNEL: 92, KIND_MEMCPY: 44, KIND_MEMSET: 44}
_SPAN = struct.Struct("<QQ")
_U32 = struct.Struct("<I")
_EXTERNAL = struct.Struct("<IIQI")          # kind, external kind, external id, correlation id

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
    lib.cuptiActivityPushExternalCorrelationId.argtypes = (ctypes.c_int, ctypes.c_uint64)
    lib.cuptiActivityPopExternalCorrelationId.argtypes = (ctypes.c_int, ctypes.c_void_p)
    lib.cuptiActivityGetNextRecord.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    lib.cuptiActivityEnable.argtypes = lib.cuptiActivityDisable.argtypes = (ctypes.c_int,)
    lib.cuptiActivityFlushAll.argtypes = (ctypes.c_uint32,)
    lib.cuptiActivityEnableDriverApi.argtypes = (ctypes.c_int, ctypes.c_uint8)
    lib.cuptiActivityEnableRuntimeApi.argtypes = (ctypes.c_int, ctypes.c_uint8)
    return lib


class ActivityTimer:
    """CUPTI's activity records for one process: launches between `start` and `stop` are timed
    by the driver; `collect` reads them. Enabled while a ``cb.profile()`` is active."""

    def __init__(self, lib: ctypes.CDLL, synchronize: Callable[[int], None]):
        self._lib, self._synchronize = lib, synchronize
        self._push = lib.cuptiActivityPushExternalCorrelationId
        self._pop = lib.cuptiActivityPopExternalCorrelationId
        self._popped = ctypes.c_uint64(0)
        self._popped_at = ctypes.byref(self._popped)
        self._ids = itertools.count(1)
        self._enabled = False
        self._devices: set[int] = set()            # the GPUs launched on since the last collect
        self._lock = threading.Lock()
        self._free: list = []                      # buffers to hand CUPTI again
        self._lent: dict[int, ctypes.Array] = {}   # address -> buffer CUPTI holds or filled
        self._filled: list[tuple[int, int]] = []   # (address, valid bytes), not parsed yet
        self._spans: dict[int, list] = {}          # correlation id -> [start, end] (ns)
        self._external: dict[int, list] = {}       # external id -> its correlation ids
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
    def start(self, device: int) -> int:
        """A new external id, pushed for the launch that follows on this thread (on GPU ``device``)."""
        if not self._enabled:
            self._enable()
        self._devices.add(device)
        ident = next(self._ids)
        self._push(EXTERNAL_KIND, ident)
        return ident

    def stop(self) -> None:
        """Pop the id `start` pushed."""
        self._pop(EXTERNAL_KIND, self._popped_at)

    def span_ms(self, ident: int) -> float | None:
        """The device time of launch ``ident`` if its records are read, else None."""
        ids = self._external.get(ident)
        if ids is None:
            return None
        spans = [self._spans.pop(c) for c in ids if c in self._spans]
        del self._external[ident]
        if not spans:
            return 0.0              # API calls but no device work (a launch of no cube does not come here)
        return (max(s[1] for s in spans) - min(s[0] for s in spans)) / 1e6

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
        for address, valid in filled:
            self._parse(address, valid)
            with self._lock:
                self._free.append(self._lent.pop(address))

    def _parse(self, address: int, valid: int) -> None:
        view = memoryview(self._lent[address])
        record = ctypes.c_void_p(None)
        next_record, ref = self._lib.cuptiActivityGetNextRecord, ctypes.byref(record)
        spans, external = self._spans, self._external
        while next_record(address, valid, ref) == 0:
            at = record.value - address
            kind = _U32.unpack_from(view, at)[0]
            if kind == KIND_EXTERNAL_CORRELATION:
                _, external_kind, ident, correlation = _EXTERNAL.unpack_from(view, at)
                if external_kind == EXTERNAL_KIND:
                    external.setdefault(ident, []).append(correlation)
            elif kind in CORRELATION_AT:
                correlation = _U32.unpack_from(view, at + CORRELATION_AT[kind])[0]
                start, end = _SPAN.unpack_from(view, at + 16)
                found = spans.get(correlation)
                if found is None:
                    spans[correlation] = [start, end]
                else:
                    found[0], found[1] = min(found[0], start), max(found[1], end)

    def _enable(self) -> None:
        self._enabled = True
        try:
            for kind in (KIND_EXTERNAL_CORRELATION, *TIMED_KINDS):
                check(self._lib.cuptiActivityEnable(kind), f"cuptiActivityEnable({kind})")
            for call in DRIVER_CALLS:      # an older CUPTI may not know every call: only the launch is required
                result = self._lib.cuptiActivityEnableDriverApi(call, 1)
                if call == LAUNCH_CALL:
                    check(result, "cuptiActivityEnableDriverApi(cuLaunchKernel)")
            for call in RUNTIME_CALLS:
                self._lib.cuptiActivityEnableRuntimeApi(call, 1)
        except CuptiError:
            self.disable()
            raise
        profiling.when_profiles_end(self.disable)

    def disable(self) -> None:
        """Stop recording (the last profile ended): launches outside a profile pay nothing."""
        if self._enabled:
            self._enabled = False
            for call in DRIVER_CALLS:
                self._lib.cuptiActivityEnableDriverApi(call, 0)
            for call in RUNTIME_CALLS:
                self._lib.cuptiActivityEnableRuntimeApi(call, 0)
            for kind in (*TIMED_KINDS, KIND_EXTERNAL_CORRELATION):
                self._lib.cuptiActivityDisable(kind)
            self._lib.cuptiActivityFlushAll(FLUSH_FORCED)
            with self._lock:
                filled, self._filled = self._filled, []
            for address, _ in filled:             # nothing reads them any more
                with self._lock:
                    self._free.append(self._lent.pop(address))
            self._spans.clear()
            self._external.clear()


class CuptiInterval:
    """One profiled launch's `cubepy.runtime.events.Interval` from CUPTI's records."""

    __slots__ = ("_timer", "_id", "_ms")

    def __init__(self, timer: ActivityTimer, device: int):
        self._timer, self._ms = timer, None
        self._id = timer.start(device)

    def stop(self) -> None:
        self._timer.stop()

    def discard(self) -> None:
        self._timer.stop()
        self._id = 0

    def done(self) -> bool:
        # Its record is read with the others when the profile ends: nothing waits in a pool.
        return self._ms is not None

    def elapsed_ms(self) -> float:
        if self._ms is None:
            not_recorded(self._id == 0)
            timer = self._timer
            ms = timer.span_ms(self._id)
            if ms is None:
                timer.collect()
                ms = timer.span_ms(self._id)
            if ms is None:
                raise RuntimeError(f"CUPTI kept no record of profiled launch {self._id}: set "
                                   "CUBEPY_PROFILE_TIMER=events to time launches with CUDA events")
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
