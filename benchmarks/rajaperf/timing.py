"""Timers: the host clock on devices whose launches finish before they return (``cpu``,
``interp``), the device's events on GPUs. Both time a batch of reps back to back, as RAJAPerf
does, and return seconds per rep; `interleaved` takes the median of many samples per contender,
the contenders taking turns so that drift in the machine's speed touches all alike.

Events around launches that the host issues more slowly than the GPU runs them time the host's
launch rate, not the kernels. `QueuedEventTimer` (``--timer queued``, CUDA) holds the stream
behind a kernel that spins until the host has enqueued the whole sample, as nvbench's blocking
kernel does, so the events time the GPU's work alone; launch cost is measured on its own
(``benchmarks/gpu/launch_forms.py``).
"""

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


SPIN = r'''
extern "C" __global__ void cb_bench_hold(volatile int* release, int* timed_out, unsigned long long limit_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*release == 0) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > limit_ns) { *timed_out = 1; return; }
  }
}'''


class QueuedEventTimer(EventTimer):
    """`EventTimer` with the stream held until the sample is enqueued (CUDA, through CuPy): one
    thread spins on a flag in mapped host memory that the host sets after the stop event is
    recorded. The batch is cut so that enqueueing it takes at most ``hold_s`` of host time (the
    launch queue never fills); a sample whose hold timed out is taken again."""

    LIMIT_NS = 2_000_000_000

    def __init__(self, device, hold_s: float = 0.002):
        import ctypes

        import cupy as cp
        super().__init__(device)
        self.cp, self.hold_s = cp, hold_s
        self.host = cp.cuda.runtime.hostAlloc(8, 2)              # cudaHostAllocMapped: two ints
        self.flags = (ctypes.c_int * 2).from_address(self.host)
        self.release, self.timed_out = self.host, self.host + 4      # one address space (UVA): the same pointers
        self.hold = cp.RawKernel(SPIN, "cb_bench_hold")
        self.host_rep_s: dict[int, float] = {}

    def __del__(self):
        self.cp.cuda.runtime.freeHost(self.host)

    def batch_for(self, rep: Callable[[], None], batch: int) -> int:
        """``batch``, cut so that enqueueing that many reps takes at most ``hold_s`` of host time."""
        cap = self.host_rep_s.get(id(rep))
        if cap is None:                        # the host time of one rep, measured once
            t0 = time.perf_counter()
            rep()
            self.device.synchronize()
            cap = self.host_rep_s[id(rep)] = time.perf_counter() - t0
        return max(1, min(batch, int(self.hold_s / max(cap, 1e-9))))

    def sample(self, rep: Callable[[], None], batch: int) -> float:
        batch = self.batch_for(rep, batch)
        for _ in range(3):
            self.flags[0] = self.flags[1] = 0
            self.hold((1,), (1,), (self.release, self.timed_out, self.cp.uint64(self.LIMIT_NS)))
            start, stop = self.device.event(), self.device.event()
            start.record()
            for _ in range(batch):
                rep()
            stop.record()
            self.flags[0] = 1
            seconds = stop.elapsed_ms(start) / 1e3 / batch
            if not self.flags[1]:
                return seconds
        raise RuntimeError("the stream was released by the hold's time limit three times: the launches of "
                           "one sample did not fit the launch queue")


TIMERS = ("events", "queued")


def timer_for(device, kind: str = "events"):
    if device.properties.backend in ("cpu", "interp"):
        return HostTimer()
    if kind == "queued":
        if device.properties.backend != "cuda":
            raise ValueError(f"--timer queued needs a CUDA device, not {device.properties.backend}")
        return QueuedEventTimer(device)
    return EventTimer(device)


def batch_size(timer, rep: Callable[[], None], target_s: float, most: int) -> int:
    """Reps per sample so that one sample lasts about ``target_s`` (at least 1, at most ``most``)."""
    one = timer.sample(rep, 1)
    return max(1, min(most, int(target_s / max(one, 1e-9))))


def fair_batches(timer, contenders: dict[str, tuple[Callable[[], None], int]]) -> dict[str, tuple]:
    """The contenders (name -> (rep, batch)) with the batches `interleaved` takes. With the queued
    timer, one batch for all, the least any contender gets: a contender whose host path is slower
    was cut to fewer launches a sample, and whatever a sample costs beyond its launches weighed more
    on each (FIR's cubepy ports read 1-2% slower than the same kernel launched raw at 8 us a launch;
    0.5-1% at equal batches: benchmarks/gpu/fir_proven.py, docs/benchmarks.md, "The twenty-fourth
    session")."""
    batch_for = getattr(timer, "batch_for", None)
    if batch_for is None or not contenders:
        return dict(contenders)
    common = min(batch_for(rep, batch) for rep, batch in contenders.values())
    return {name: (rep, common) for name, (rep, _) in contenders.items()}


def interleaved(timer, contenders: dict[str, tuple[Callable[[], None], int]], samples: int) -> dict[str, list[float]]:
    """``samples`` samples of each contender (name -> (rep, batch)), taken in turns, rotating who
    goes first, with `fair_batches`. Returns seconds per rep, per sample."""
    contenders = fair_batches(timer, contenders)
    names = list(contenders)
    out = {name: [] for name in names}
    for round_ in range(samples):
        shift = round_ % max(1, len(names))
        for name in names[shift:] + names[:shift]:
            rep, batch = contenders[name]
            out[name].append(timer.sample(rep, batch))
    return out


def print_against(samples: dict[str, list[float]], base: str, width: int = 40) -> None:
    """One line per contender of `interleaved`'s ``samples``: its median GPU time per launch, its
    range, and its median over ``base``'s."""
    reference = statistics.median(samples[base])
    for name, values in samples.items():
        middle = statistics.median(values)
        print(f"  {name:{width}s} {middle * 1e6:9.3f} us  ({min(values) * 1e6:.3f}-{max(values) * 1e6:.3f})  "
              f"{middle / reference:6.3f}x {base}")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
