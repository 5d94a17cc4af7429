"""What a launch inside ``cb.profile()`` costs on the host, and how much of it CUDA's events are.

    python benchmarks/gpu/profile_cost.py [--out results.json]

Rows (us per warm launch, CuPy arrays, median over interleaved rounds as in launch_forms.py):
``cupy.RawKernel`` alone; RawKernel with the two event records a profile makes per launch
(handles from a pool of the row's own, given back unread every 64 launches); RawKernel with those
records and the profile's reads (``eventElapsedTime`` per launch, every 64 launches as
`cubepy.runtime.profiling` reads them); cubepy's warm
``k[16, 256](...)``; and the same inside ``cb.profile()``. The difference between the last row
and the third is cubepy's own cost of profiling; the third minus the first is CUDA's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from benchmarks.gpu.launch_forms import RAW, measure  # noqa: E402
from tests.kernels import saxpy  # noqa: E402

N = 4096


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
    times.update(inside)
    launches = p.kernels["saxpy"].launches
    base = times[peer]
    print(f"device: {dev.properties.name}; {N} float32; {launches} profiled launches")
    for name, us in times.items():
        print(f"  {name:52s} {us:8.2f} us  RawKernel {us - base:+.2f} us")
    events = times["RawKernel + 2 records + the reads"]
    print(f"  CUDA's part of a profiled launch: {events - base:+.2f} us; cubepy's own: "
          f"{times['inside cb.profile(): cubepy k[16, 256](...)'] - events:+.2f} us")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": dev.properties.name, "us_per_launch": times}, f, indent=1)


if __name__ == "__main__":
    main()
