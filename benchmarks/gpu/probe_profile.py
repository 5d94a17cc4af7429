"""Where a fresh process's ``cb.device(...)`` spends its time, after the user's own GPU work.

    python benchmarks/gpu/probe_profile.py [--device cuda]

Imports cubepy, then does what a user does first (CuPy's import and a CUDA context, for cuda),
then profiles the probe with cProfile and prints the 25 costliest calls by cumulative time. Run it
in a fresh process each time: a second probe in one process finds everything imported.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    began = time.perf_counter()
    import cubepy as cb
    imported = time.perf_counter()
    if args.device.startswith("cuda"):
        import cupy as cp

        cp.ones(8)
        cp.cuda.Device().synchronize()
    ready = time.perf_counter()
    profile = cProfile.Profile()
    profile.enable()
    cb.device(args.device).require()
    profile.disable()
    done = time.perf_counter()
    print(f"import cubepy {1e3 * (imported - began):.1f} ms, the user's own work {1e3 * (ready - imported):.1f} ms, "
          f"device probe {1e3 * (done - ready):.1f} ms (under cProfile)")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(25)
    print(text.getvalue())


if __name__ == "__main__":
    main()
