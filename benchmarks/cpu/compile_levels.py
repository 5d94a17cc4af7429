"""What the CPU backend's compile of a random fuzz kernel costs at each LLVM -O level.

    python benchmarks/cpu/compile_levels.py [--kernels 12] [--levels 0,1,3]

One process per level, each with an empty disk cache; the kernels come from the differential
fuzzer (tests/fuzz, seeds from 5557000, no f16 so that the same kernels serve every level). Prints
the mean milliseconds per kernel of the whole compile, cubepy's own code generation and LLVM's part
(parse, optimize, object code, load). The fuzzer's CI budget picks its levels by these figures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def measure(level: int, kernels: int) -> str:
    sys.path.insert(0, str(ROOT))
    import cubepy.backends.cpu as cpu
    from cubepy.backends.cpu import jit

    import cubepy as cb
    from benchmarks.stage_timer import time_calls
    from tests.fuzz.generate import generate
    from tests.fuzz.run import arguments, load

    stages: dict[str, float] = {}
    time_calls(stages, cpu.CpuBackend, "generate", "cubepy codegen")
    time_calls(stages, jit, "load", "LLVM")
    dev = cb.device("cpu", plane_dim=8, opt_level=level)
    programs = [generate(seed, exclude=frozenset({"f16"})) for seed in range(5557000, 5557000 + kernels)]
    loaded = [load(p) for p in programs]
    start = time.perf_counter()
    for program, kernel in zip(programs, loaded):
        kernel.compile(*arguments(program), dim=program.cube_dim, device=dev)
    total = (time.perf_counter() - start) / kernels
    return f"-O{level}: {total * 1e3:.0f} ms per kernel; " + ", ".join(
        f"{label} {seconds / kernels * 1e3:.0f}" for label, seconds in stages.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=12)
    parser.add_argument("--levels", default="0,1,3")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(measure(args.child, args.kernels))
        return
    for level in map(int, args.levels.split(",")):
        with tempfile.TemporaryDirectory() as cache:
            done = subprocess.run([sys.executable, __file__, "--child", str(level), "--kernels", str(args.kernels)],
                                  env=dict(os.environ, CUBEPY_CACHE_DIR=cache), capture_output=True, text=True,
                                  check=True, cwd=ROOT)
            print(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
