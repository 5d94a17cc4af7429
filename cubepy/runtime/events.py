"""Events: points in a device's launch order whose time can be read, for timing GPU work.

    start, stop = dev.event(), dev.event()
    start.record()
    kernel[count, dim](x, y)
    stop.record()
    print(stop.elapsed_ms(start))      # waits for ``stop``

A backend with an asynchronous queue gives events on the device's own clock (CUDA events on
CuPy's current stream, OpenCL markers with profiling). Elsewhere launches finish before they
return, and an event reads the host clock once the device's queued work is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Event(Protocol):
    def record(self) -> None:
        """Mark this point of the device's launch order (the current stream or queue)."""

    def synchronize(self) -> None:
        """Wait until the work before the mark is done."""

    def elapsed_ms(self, start: Event) -> float:
        """Milliseconds from ``start``'s mark to this one's, waiting for this one."""

    def done(self) -> bool:
        """Whether the work before the mark is known to be done, without waiting (False where the
        device cannot tell without waiting)."""


class Interval(Protocol):
    """A timed stretch of a device's launch order: it starts where it is made (on the current
    stream or queue) and ends at `stop`. ``cb.profile()`` puts one around each launch."""

    def stop(self) -> None:
        """Mark the end, on the stream the start went on."""

    def discard(self) -> None:
        """Forget an interval that was not stopped (nothing was launched in it)."""

    def done(self) -> bool:
        """Whether the work before the end mark is known to be done, without waiting."""

    def elapsed_ms(self) -> float:
        """Milliseconds from start to end, waiting for the end (nested profiles read it again)."""


class EventInterval:
    """An `Interval` from two events of the device (what a backend without a cheaper one gives)."""

    __slots__ = ("_event", "_start", "_stop")

    def __init__(self, event: Callable[[], Event]):
        self._event, self._stop = event, None
        self._start = event()
        self._start.record()

    def stop(self) -> None:
        self._stop = self._event()
        self._stop.record()

    def discard(self) -> None:
        self._start = None

    def done(self) -> bool:
        return self._stop is not None and self._stop.done()

    def elapsed_ms(self) -> float:
        not_recorded(self._stop is None)
        return self._stop.elapsed_ms(self._start)


class HostEvent:
    """An event on the host clock, for devices whose launches finish before they return."""

    def __init__(self, synchronize):
        self._synchronize = synchronize
        self._time: float | None = None

    def record(self) -> None:
        self._synchronize()
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        not_recorded(self._time is None)

    def elapsed_ms(self, start: HostEvent) -> float:
        not_recorded(self._time is None or start._time is None)
        return (self._time - start._time) * 1e3

    def done(self) -> bool:
        return self._time is not None


class HostInterval:
    """An `Interval` on the host clock, for a device whose launches finish before they return
    (nothing to wait for): two clock reads, where an `EventInterval` of `HostEvent`s makes three
    objects and two calls to ``synchronize`` (a launch inside ``cb.profile()`` on the CPU device
    cost 3 us more than one outside it)."""

    __slots__ = ("_start", "_stop")

    def __init__(self):
        self._stop = None
        self._start = time.perf_counter()

    def stop(self) -> None:
        self._stop = time.perf_counter()

    def discard(self) -> None:
        self._start = None

    def done(self) -> bool:
        return self._stop is not None

    def elapsed_ms(self) -> float:
        not_recorded(self._stop is None)
        return (self._stop - self._start) * 1e3


def not_recorded(missing: bool) -> None:
    if missing:
        raise ValueError("an event was not recorded: call event.record() first")
