"""How a candidate is timed, so that two tunings give the same answer.

*Host devices* (``cpu``, ``interp``: a launch returns when its work is done): the host clock
(``perf_counter``) around a batch of launches, after a warm-up.

*Queued devices* (``cuda``, ``opencl``, ``hip``): the device's own events around a batch of
launches that waits in the queue behind a *spin kernel* (one unit running a dependent loop, sized
to outlast the host's time to enqueue the batch). The batch then runs back to back on the
device, and the events measure device time only: the host's launch overhead, queueing delays and
the first launch's wait are outside the interval.

Either way a sample is one batch (``reps`` launches, or as many as fill ``sample_ms``); at least
``rounds`` samples are taken, and more, up to ``max_rounds``, until the 95% confidence interval of
their median (distribution-free, from order statistics) is within ``rel_ci`` of it. The time of a
config is that median, which outliers (a preempted sample, a clock step) do not move; samples
beyond the upper quartile plus three interquartile ranges are counted as outliers and reported.

A slow spell longer than one config's measurement (another process on the machine, a GPU's clock
change) moves a whole median. So at the end of a search the best few configs are timed again
*interleaved* (`time_interleaved`: rounds of one sample each, the order rotating), and the choice
is made on those times.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f32, i32
from cubepy.runtime.devices import Device


@dataclass(frozen=True)
class Measure:
    """How to time one candidate (see the module's docstring)."""

    reps: int | None = None        # launches per sample; None: as many as fill sample_ms
    rounds: int = 5                # samples at least
    max_rounds: int = 40           # samples at most
    rel_ci: float = 0.01           # stop when the 95% interval of the median is within +-1% of it
    sample_ms: float = 2.0         # target length of one sample when reps is None
    warmup_ms: float = 10.0        # launches before the first sample (at least one)
    max_ms: float = 2000.0         # time spent sampling one config, at most (past rounds)

    def __post_init__(self):
        for name in ("rounds", "max_rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"autotune: {name}={getattr(self, name)} must be at least 1")
        if self.reps is not None and self.reps < 1:
            raise ValueError(f"autotune: reps={self.reps} must be at least 1 (or None to fill sample_ms)")


@dataclass(frozen=True)
class Timing:
    """A config's time: the median milliseconds per launch and its 95% confidence interval."""

    ms: float
    low: float
    high: float
    samples: int
    reps: int
    outliers: int = 0

    @property
    def spread(self) -> float:
        """Half the interval's width relative to the median (0.01 is +-1%)."""
        return (self.high - self.low) / 2 / self.ms if self.ms > 0 else 0.0

    def __str__(self) -> str:
        return f"{self.ms:.4f} ms +-{self.spread * 100:.1f}% ({self.samples}x{self.reps})"


def median_interval(values: list[float], z: float = 1.96) -> tuple[float, float]:
    """The distribution-free 95% interval of the median: the order statistics at ranks
    n/2 -+ z sqrt(n)/2 (the whole range below 6 samples, where no narrower one holds)."""
    xs = sorted(values)
    n = len(xs)
    if n < 6:
        return xs[0], xs[-1]
    half = z * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + half)))
    return xs[lo], xs[hi]


def outliers(values: list[float]) -> int:
    """Samples above the upper quartile plus three interquartile ranges."""
    if len(values) < 4:
        return 0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return sum(v > q3 + 3 * (q3 - q1) for v in values)


def time_launches(launch: Callable[[], None], dev: Device, measure: Measure) -> Timing:
    """Time ``launch`` (one launch of a candidate) on ``dev`` as the module's docstring says."""
    sampler = HostSampler(dev) if dev.host_memory else QueuedSampler(dev)
    began = time.perf_counter()
    launch()
    dev.synchronize()
    one = sampler.sample(launch, 1)
    while (time.perf_counter() - began) * 1e3 < measure.warmup_ms:
        one = min(one, sampler.sample(launch, 1))
    reps = measure.reps or max(1, min(10_000, int(measure.sample_ms / max(one, 1e-6))))
    samples: list[float] = []
    started = time.perf_counter()
    while True:
        samples.append(sampler.sample(launch, reps) / reps)
        n = len(samples)
        if n < measure.rounds:
            continue
        if n >= measure.max_rounds or (time.perf_counter() - started) * 1e3 > measure.max_ms:
            break
        mid = statistics.median(samples)
        low, high = median_interval(samples)
        if n >= 6 and (high - low) / 2 <= measure.rel_ci * mid:
            break
    low, high = median_interval(samples)
    return Timing(statistics.median(samples), low, high, len(samples), reps, outliers(samples))


def time_interleaved(launches: list[Callable[[], None]], dev: Device, measure: Measure,
                     rounds: int = 9) -> list[Timing]:
    """Time several candidates in turns: ``rounds`` rounds of one sample each, the order rotating
    every round, so that a slow spell of the machine (another process, a clock change) falls on
    all of them alike rather than on whichever was being measured then."""
    sampler = HostSampler(dev) if dev.host_memory else QueuedSampler(dev)
    reps = []
    for launch in launches:
        launch()
        dev.synchronize()
        one = min(sampler.sample(launch, 1) for _ in range(3))
        reps.append(measure.reps or max(1, min(10_000, int(measure.sample_ms / max(one, 1e-6)))))
    samples: list[list[float]] = [[] for _ in launches]
    order = list(range(len(launches)))
    for r in range(rounds):
        shift = r % len(order)
        for i in order[shift:] + order[:shift]:
            samples[i].append(sampler.sample(launches[i], reps[i]) / reps[i])
    out = []
    for values, count in zip(samples, reps):
        low, high = median_interval(values)
        out.append(Timing(statistics.median(values), low, high, len(values), count, outliers(values)))
    return out


class HostSampler:
    """The host clock around ``reps`` launches (devices whose launches finish before they return)."""

    def __init__(self, dev: Device):
        self.dev = dev

    def sample(self, launch: Callable[[], None], reps: int) -> float:
        start = time.perf_counter()
        for _ in range(reps):
            launch()
        self.dev.synchronize()
        return (time.perf_counter() - start) * 1e3


@cb.kernel(checked=False)
def spin(state: Mut[Array[f32]], iterations: i32):
    """One unit running a dependent loop: keeps the queue busy while the host enqueues a batch."""
    v = state[0]
    for _ in range(iterations):
        v = v * 0.9999999 + 0.0000001
    state[0] = v


class QueuedSampler:
    """Device events around ``reps`` launches queued behind `spin` (asynchronous devices)."""

    _rates: dict[int, float] = {}        # spin iterations per millisecond, per device

    def __init__(self, dev: Device):
        self.dev = dev
        self.state = cb.preload_mut(np.zeros(1, np.float32), device=dev)
        self.enqueue_ms = 0.05
        rate = self._rates.get(id(dev))
        self.rate = rate if rate is not None else self._calibrate()

    def _calibrate(self) -> float:
        iterations = 1 << 12
        while True:
            ms = self._spin_ms(iterations)
            if ms > 0.5 or iterations >= 1 << 28:
                break
            iterations *= 4
        rate = iterations / max(ms, 1e-6)
        self._rates[id(self.dev)] = rate
        return rate

    def _spin_ms(self, iterations: int) -> float:
        start, stop = self.dev.event(), self.dev.event()
        start.record()
        spin[1, 1](self.state, iterations, device=self.dev)
        stop.record()
        return stop.elapsed_ms(start)

    def sample(self, launch: Callable[[], None], reps: int) -> float:
        # The spin outlasts twice the last batch's enqueue time, so the batch is queued whole
        # before the device reaches the first event.
        iterations = int(min(2 ** 30, self.rate * (2 * self.enqueue_ms + 0.05)))
        spin[1, 1](self.state, iterations, device=self.dev)
        start, stop = self.dev.event(), self.dev.event()
        host = time.perf_counter()
        start.record()
        for _ in range(reps):
            launch()
        stop.record()
        self.enqueue_ms = (time.perf_counter() - host) * 1e3
        return stop.elapsed_ms(start)
