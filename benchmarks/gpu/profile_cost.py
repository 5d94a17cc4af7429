"""What a launch inside ``cb.profile()`` costs on the host, and how much of it CUDA's events are.

    python benchmarks/gpu/profile_cost.py [--out results.json]

Rows (us per warm launch, CuPy arrays, median over interleaved rounds as in launch_forms.py):
``cupy.RawKernel`` alone; RawKernel with the two event records a profile makes per launch
(handles from a pool of the row's own, given back unread every 64 launches); RawKernel with those
records and the profile's reads (``eventElapsedTime`` per launch, every 64 launches as
`cubepy.runtime.profiling` reads them); cubepy's warm
``k[16, 256](...)``; and the same inside ``cb.profile()``. The difference between the last row
and the third is cubepy's own cost of profiling with events; the third minus the first is CUDA's.

Inside the profile RawKernel runs unprofiled too: where CUPTI serves as the timer
(`backends.cuda.cupti`, the default), what CUPTI's kernel records cost every launch while a profile
runs. ``CUBEPY_PROFILE_TIMER=events`` runs the profile with events instead. Then the timers'
figures: a long kernel's device time by the profile against CUDA events around the same launches,
on CuPy arrays and on NumPy arrays (the events hold their copies, CUPTI's kernel records do not),
and what the profile's end (waiting, reading the records) costs per launch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from cubepy.backends.cuda import cupti  # noqa: E402

from benchmarks.gpu.launch_forms import RAW, measure  # noqa: E402
from tests.kernels import saxpy  # noqa: E402

N = 4096
LONG = 1 << 25


def timers_agree(cp, dev) -> dict:
    """A long kernel's device time: the profile's figure against CUDA events around each launch."""
    import numpy as np

    found = {}
    for name, make in (("cupy", lambda a: cp.asarray(a)), ("numpy", lambda a: a)):
        x, y = make(np.ones(LONG, np.float32)), make(np.ones(LONG, np.float32))
        saxpy[LONG // 256, 256](x, y, 2.0, device=dev)          # compiled and warm
        cp.cuda.Device().synchronize()
        events, launches = [], 20
        with cb.profile() as p:
            for _ in range(launches):
                start, stop = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                saxpy[LONG // 256, 256](x, y, 2.0, device=dev)
                stop.record()
                events.append((start, stop))
            ended = time.perf_counter()
        ended = time.perf_counter() - ended
        by_events = sum(cp.cuda.get_elapsed_time(a, b) for a, b in events)
        stats = p.kernels["saxpy"]
        found[name] = {"profile_ms": stats.kernel_ms, "events_ms": by_events, "launches": stats.launches,
                       "profile_end_us_per_launch": ended / launches * 1e6}
        print(f"  {name} arrays, {LONG} float32, {launches} launches: profile {stats.kernel_ms:.3f} ms, "
              f"events around them {by_events:.3f} ms (ratio {stats.kernel_ms / by_events:.3f}); the profile's "
              f"end {ended / launches * 1e6:.1f} us a launch")
    return found


def event_rows(cp, raw, x, y) -> dict:
    """RawKernel with a profile's CUDA calls made by hand (raw handles, each row its own pool)."""
    rt = cp.cuda.runtime
    args = (x, y, cp.float32(2.0), cp.int32(N))

    def row(read: bool):
        pool = [rt.eventCreate() for _ in range(256)]       # no creation while timed
        pending = []

        def launch() -> None:
            start, stop = pool.pop(), pool.pop()
            stream = cp.cuda.get_current_stream().ptr
            rt.eventRecord(start, stream)
            raw((N // 256,), (256,), args)
            rt.eventRecord(stop, stream)
            pending.append((start, stop))
            if len(pending) >= 64:          # as a profile reads (or, unread, gives the handles back)
                for first, last in pending:
                    if read:
                        rt.eventSynchronize(last)
                        rt.eventElapsedTime(first, last)
                    pool.append(first)
                    pool.append(last)
                pending.clear()
        return launch
    return {"RawKernel + 2 event records": row(False), "RawKernel + 2 records + the reads": row(True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import cupy as cp

    dev = cb.device("cuda")
    x, y = cp.ones(N, cp.float32), cp.ones(N, cp.float32)
    raw = cp.RawModule(code=RAW).get_function("saxpy1")
    peer = "cupy.RawKernel (the peer)"
    fns = {peer: lambda: raw((N // 256,), (256,), (x, y, cp.float32(2.0), cp.int32(N))),
           **event_rows(cp, raw, x, y),
           "cubepy k[16, 256](...)": lambda: saxpy[N // 256, 256](x, y, 2.0, device=dev)}

    def sync() -> None:
        cp.cuda.Device().synchronize()
    times = measure(fns, sync)
    with cb.profile() as p:
        inside = measure({"inside cb.profile(): cubepy k[16, 256](...)": fns["cubepy k[16, 256](...)"],
                          "inside cb.profile(): RawKernel (not profiled)": fns[peer]}, sync)
        ended = time.perf_counter()
    ended = time.perf_counter() - ended
    times.update(inside)
    launches = p.kernels["saxpy"].launches
    base = times[peer]
    found = cupti.timer(lambda index: None) is not None      # the backend's, made at the first profiled launch
    print(f"device: {dev.properties.name}; {N} float32; {launches} profiled launches; timer "
          f"{os.environ.get('CUBEPY_PROFILE_TIMER', 'auto')}, CUPTI "
          f"{'found' if found else 'not used'}; the profile's end "
          f"{ended / max(launches, 1) * 1e6:.2f} us a launch")
    for name, us in times.items():
        print(f"  {name:52s} {us:8.2f} us  RawKernel {us - base:+.2f} us")
    events = times["RawKernel + 2 records + the reads"]
    profiled, raw_inside = times["inside cb.profile(): cubepy k[16, 256](...)"], times[
        "inside cb.profile(): RawKernel (not profiled)"]
    if found:                 # the rows inside the profile ran under CUPTI's records, in their own rounds
        print(f"  CUPTI's records on a RawKernel launch: {raw_inside - base:+.2f} us (rounds apart); a profiled "
              f"cubepy launch over RawKernel in the same profile: {profiled - raw_inside:+.2f} us")
    else:
        print(f"  CUDA's event calls: {events - base:+.2f} us a launch; cubepy's own part of a profiled launch: "
              f"{profiled - events:+.2f} us")
    agree = timers_agree(cp, dev)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": dev.properties.name, "us_per_launch": times, "timers": agree,
                       "timer": os.environ.get("CUBEPY_PROFILE_TIMER", "auto")}, f, indent=1)


if __name__ == "__main__":
    main()
