"""Timers: the host clock on devices whose launches finish before they return (``cpu``,
``interp``), the device's events on GPUs. Both time a batch of reps back to back, as RAJAPerf
does, and return seconds per rep; `interleaved` takes the median of many samples per contender,
the contenders taking turns so that drift in the machine's speed touches all alike."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


class HostTimer:
    """perf_counter around ``batch`` reps."""

    def sample(self, rep: Callable[[], None], batch: int) -> float:
        start = time.perf_counter()
        for _ in range(batch):
            rep()
        return (time.perf_counter() - start) / batch


class EventTimer:
    """Two events of the device around ``batch`` back-to-back reps (every contender's launches
    go on the device's current stream, so one timer serves cubepy and the peers alike)."""

    def __init__(self, device):
        self.device = device

    def sample(self, rep: Callable[[], None], batch: int) -> float:
        start, stop = self.device.event(), self.device.event()
        start.record()
        for _ in range(batch):
            rep()
        stop.record()
        return stop.elapsed_ms(start) / 1e3 / batch


def timer_for(device):
    return HostTimer() if device.properties.backend in ("cpu", "interp") else EventTimer(device)


def batch_size(timer, rep: Callable[[], None], target_s: float, most: int) -> int:
    """Reps per sample so that one sample lasts about ``target_s`` (at least 1, at most ``most``)."""
    one = timer.sample(rep, 1)
    return max(1, min(most, int(target_s / max(one, 1e-9))))


def interleaved(timer, contenders: dict[str, tuple[Callable[[], None], int]], samples: int) -> dict[str, list[float]]:
    """``samples`` samples of each contender (name -> (rep, batch)), taken in turns, rotating who
    goes first. Returns seconds per rep, per sample."""
    names = list(contenders)
    out = {name: [] for name in names}
    for round_ in range(samples):
        shift = round_ % max(1, len(names))
        for name in names[shift:] + names[:shift]:
            rep, batch = contenders[name]
            out[name].append(timer.sample(rep, batch))
    return out


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
