"""What tracing a kernel (frontend and IR pipeline, no backend compile) costs, and the part of it
that Python's cyclic garbage collector takes, in a small process and in one that holds much.

    python benchmarks/cpu/trace_time.py [--kernels 40] [--heap 2000000]

The kernels are the differential fuzzer's (tests/fuzz, seeds from 5557000: 40-60 lines of Python,
some 1,300 IR ops each), specialized for the interpreter at plane size 32, whose own compile is
nothing. Each configuration runs in its own process: ``paused`` is cubepy as shipped (the collector
paused while a kernel compiles, `cubepy.runtime.gc_pause`), ``collecting`` leaves it running;
``--heap`` objects held alive stand for a framework's or an application's heap, which the
collector's full passes walk. Prints the median milliseconds per kernel of three passes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def measure(kernels: int, heap: int, paused: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    import contextlib

    import cubepy as cb
    import cubepy.runtime.kernel as kernel_module
    from tests.fuzz.generate import generate
    from tests.fuzz.run import arguments, load

    if not paused:
        kernel_module.collector_paused = contextlib.nullcontext
    held = [{"i": i, "pair": (i, str(i))} for i in range(heap)]      # noqa: F841 - kept alive on purpose
    dev = cb.device("interp", plane_dim=32)
    programs = [generate(seed) for seed in range(5557000, 5557000 + kernels)]
    passes = []
    for _ in range(3):
        loaded = [load(p) for p in programs]           # fresh kernel objects: nothing cached
        start = time.perf_counter()
        for program, kernel in zip(programs, loaded):
            kernel.compile(*arguments(program), dim=program.cube_dim, device=dev)
        passes.append((time.perf_counter() - start) / kernels * 1e3)
    return {"heap": heap, "paused": paused, "ms_per_kernel": statistics.median(passes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=40)
    parser.add_argument("--heap", type=int, default=2_000_000, help="objects the large process holds")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        heap, paused = args.child.split(",")
        print(json.dumps(measure(args.kernels, int(heap), paused == "1")))
        return
    env = dict(os.environ, CUBEPY_CACHE_DIR=os.path.join(os.environ.get("TMPDIR", "/tmp"), "cubepy-trace-time"))
    rows = {}
    for heap in (0, args.heap):
        for paused in (True, False):
            out = subprocess.run([sys.executable, __file__, "--kernels", str(args.kernels),
                                  "--child", f"{heap},{int(paused)}"], env=env, check=True,
                                 capture_output=True, text=True).stdout
            rows[heap, paused] = json.loads(out.strip().splitlines()[-1])["ms_per_kernel"]
    print(f"trace of a fuzz kernel, ms (median of 3 passes over {args.kernels} kernels):")
    for heap in (0, args.heap):
        on, off = rows[heap, True], rows[heap, False]
        print(f"  {heap:>9,} objects held: collector paused {on:6.1f}, collecting {off:6.1f} "
              f"(the collector's part {1 - on / off:.0%})")


if __name__ == "__main__":
    main()
