"""``cb.profile()``: what each kernel cost inside a ``with`` block.

    with cb.profile() as p:
        for _ in range(100):
            saxpy[count, dim](x, y, 2.0)
    print(p.table())

Per kernel: launches, device time (on CUDA each kernel's own start and end from CUPTI's records
where CUPTI serves, else events around each launch, which include a NumPy argument's copies; read
once when the block ends, so profiling adds no synchronization per launch), compile time and
count, host-to-device and device-to-host copies (count and bytes) and synchronizations.
``cb.preload``, ``to_host`` and ``device.synchronize()`` are counted under their own names.
While a profile is active, warm launches too are timed (`Backend.launch_tally`, else `Backend.interval`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class KernelStats:
    """What one kernel (or "cb.preload", "to_host", "synchronize") cost in a profile."""

    launches: int = 0
    kernel_ms: float = 0.0
    compiles: int = 0
    compile_ms: float = 0.0
    disk_loads: int = 0          # specializations whose compiled code came from the disk cache
    h2d_count: int = 0
    h2d_bytes: int = 0
    d2h_count: int = 0
    d2h_bytes: int = 0
    syncs: int = 0


@dataclass(eq=False)         # each profile is its own: nested ones with equal figures are not one
class Profile:
    """The statistics of a ``with cb.profile()`` block, by kernel name."""

    kernels: dict[str, KernelStats] = field(default_factory=dict)
    _timings: list = field(default_factory=list)       # (kernel, interval), not read yet
    _read_at: int = 64                                  # read the finished ones when this many are pending
    _tallied: dict = field(default_factory=dict)        # id(LaunchTally) -> its count at the start

    def stats(self, name: str) -> KernelStats:
        found = self.kernels.get(name)
        if found is None:
            found = self.kernels[name] = KernelStats()
        return found

    def read_finished(self) -> None:
        """Read the launches whose intervals are done, oldest first, without waiting: their
        device events go back to the backend's pool while a long profile runs, so a profiled
        launch records two events instead of creating them. Launches on one stream finish in
        order, so a binary search finds the finished ones with a few queries (on several streams
        a launch read early is waited for: the figure stays right)."""
        timings = self._timings
        lo, hi = 0, len(timings)
        while lo < hi:
            mid = (lo + hi) // 2
            if timings[mid][1].done():
                lo = mid + 1
            else:
                hi = mid
        for name, interval in timings[:lo]:
            self.stats(name).kernel_ms += interval.elapsed_ms()
        del timings[:lo]
        self._read_at = len(timings) + 64

    def finish(self) -> None:
        """Read the launches' intervals (this waits for them) into ``kernel_ms``."""
        timings, self._timings = self._timings, []
        for name, interval in timings:
            self.stats(name).kernel_ms += interval.elapsed_ms()

    def read_tallies(self) -> None:
        """Add the launches the backends' tallies numbered during this profile, and their times."""
        for tally in list(TALLIES):
            first, last = self._tallied.get(id(tally), 0), tally.launched
            if last > first:
                stats = self.stats(tally.kernel)
                stats.launches += last - first
                stats.kernel_ms += sum(tally.times_ms(first, last))

    def table(self) -> str:
        """The statistics as a text table, one row per kernel."""
        head = ("kernel", "launches", "kernel ms", "ms/launch", "compiles", "disk loads", "compile ms", "H2D", "H2D MB",
                "D2H", "D2H MB", "syncs")
        rows = [head]
        for name, s in sorted(self.kernels.items()):
            per = s.kernel_ms / s.launches if s.launches else math.nan
            rows.append((name, str(s.launches), f"{s.kernel_ms:.3f}", f"{per:.4f}" if s.launches else "-",
                         str(s.compiles), str(s.disk_loads), f"{s.compile_ms:.1f}", str(s.h2d_count),
                         f"{s.h2d_bytes / 1e6:.3f}",
                         str(s.d2h_count), f"{s.d2h_bytes / 1e6:.3f}", str(s.syncs)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        return "\n".join(lines)


class LaunchTally(Protocol):
    """A backend's count of one kernel's launches whose device times it reads afterwards (CUDA:
    `cubepy.backends.cuda.cupti`): a profiled launch adds one to ``launched``, nothing else; a
    profile reads the times of the launches numbered from its start to its end."""

    kernel: str                 # the profile's name for them
    launched: int               # launches numbered so far (from 0 when the backend's timer started)

    def times_ms(self, first: int, last: int) -> list[float]:
        """Device times of launches ``first`` to ``last - 1``, waiting for them."""


ACTIVE: list[Profile] = []      # the profiles of the enclosing ``with`` blocks, innermost last
TALLIES: list[LaunchTally] = []                 # every backend tally, read by each profile's end
_WHEN_STARTED: list[Callable[[], None]] = []   # called each time a profile starts where none was active
_WHEN_ENDED: list[Callable[[], None]] = []     # called once when no profile is active any more


def when_profiles_start(call: Callable[[], None]) -> None:
    """Call ``call`` whenever a profile starts and no other is active (a backend's timer that
    costs something while it runs starts there; `when_profiles_end` stops it)."""
    _WHEN_STARTED.append(call)


def when_profiles_end(call: Callable[[], None]) -> None:
    """Call ``call`` once, after the last active profile has read its launches (a backend's
    timer that costs something while it runs stops there)."""
    _WHEN_ENDED.append(call)


@contextmanager
def profile() -> Iterator[Profile]:
    """Record what kernels cost inside the block; nested profiles each see everything."""
    p = Profile()
    if not ACTIVE:
        for call in _WHEN_STARTED:
            call()
    p._tallied = {id(t): t.launched for t in TALLIES}
    ACTIVE.append(p)
    try:
        yield p
    finally:
        ACTIVE.remove(p)
        try:
            p.finish()
            p.read_tallies()
        finally:
            if not ACTIVE:
                ended, _WHEN_ENDED[:] = list(_WHEN_ENDED), []
                for call in ended:
                    call()


# What this process compiled, for the life of the process (`cubepy.compile_stats`).
TOTALS = {"traces": 0, "compiles": 0, "disk_loads": 0, "shared_shapes": 0, "restored": 0}


def compile_stats() -> dict:
    """Counts for this process: ``traces`` (specializations traced to IR), ``compiles``
    (specializations compiled by a backend), ``disk_loads`` (specializations whose compiled code
    came from the disk cache), ``shared_shapes`` (specializations that use the shape-generic
    executable compiled for another CubeDim: `cubepy.runtime.shapes`) and ``restored`` (the disk
    loads that took their trace from the disk cache too, untraced: `cubepy.runtime.trace_index`).
    A second wave of tasks on a warm worker adds nothing to any of them.

    Example::

        before = cb.compile_stats()
        saxpy[count, dim](x, y, 2.0)
        cb.compile_stats()["compiles"] - before["compiles"]    # 0 if it was compiled before
    """
    return dict(TOTALS)


def record(name: str, **counts: Any) -> None:
    """Add ``counts`` (fields of `KernelStats`) to ``name``'s statistics in every active profile."""
    for p in ACTIVE:
        stats = p.stats(name)
        for key, value in counts.items():
            setattr(stats, key, getattr(stats, key) + value)


def record_launch(name: str, interval) -> None:
    """A launch inside a stopped `cubepy.runtime.events.Interval` of the device."""
    for p in ACTIVE:
        p.stats(name).launches += 1
        p._timings.append((name, interval))
        if len(p._timings) >= p._read_at:
            p.read_finished()


__all__ = ["ACTIVE", "TALLIES", "TOTALS", "KernelStats", "LaunchTally", "Profile", "compile_stats", "profile",
           "record", "record_launch", "when_profiles_end", "when_profiles_start"]
