"""What NVIDIA's compilers spend on cubepy's CUDA source of the fuzzer's kernels, checked and
unchecked: the lines of source, cicc's time (nvcc ``--time``) and ptxas's (run alone on the PTX,
best of two). Compile-only: runs wherever nvcc is, no GPU needed.

    python benchmarks/gpu/cuda_compile_time.py --seeds 7000000:7000005

The source is what the `cuda` backend renders (plane size 32, bounds checks once per cube), for
sm_90; the figures in docs/design.md ("The GPU backends", the report function) came from it.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cubepy.backends.cstyle import CUDA, render  # noqa: E402

import cubepy as cb  # noqa: E402
from tests.fuzz.generate import generate  # noqa: E402
from tests.fuzz.run import arguments, load  # noqa: E402


def compile_times(source: str, folder: Path, arch: str) -> tuple[float, float]:
    """(cicc seconds, ptxas seconds) for one CUDA source."""
    cu, ptx, times = folder / "k.cu", folder / "k.ptx", folder / "t.csv"
    cu.write_text(source)
    times.unlink(missing_ok=True)
    subprocess.run(["nvcc", f"-arch={arch}", "-ptx", "-std=c++17", "--fmad=false", "-w", "-o", str(ptx), str(cu),
                    "--time", str(times)], check=True, capture_output=True)
    with open(times) as f:
        cicc = next(float(row[6]) for row in csv.reader(f) if len(row) > 6 and "cicc" in row[1]) / 1000
    best = float("inf")
    for _ in range(2):
        began = time.perf_counter()
        subprocess.run(["ptxas", f"-arch={arch}", "-o", str(folder / "k.cubin"), str(ptx)], check=True)
        best = min(best, time.perf_counter() - began)
    return cicc, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="7000000:7000005", help="first:last (exclusive) fuzz seeds")
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    if shutil.which("nvcc") is None or shutil.which("ptxas") is None:
        sys.exit("nvcc and ptxas must be on PATH")
    warnings.simplefilter("ignore")
    first, last = (int(s) for s in args.seeds.split(":"))
    device = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_run=True)
    rows: dict[str, list] = {"checked": [], "unchecked": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(first, last):
            program = generate(seed)
            kernel, values = load(program), arguments(program)
            for mode in rows:
                ir = kernel.compile(*values, dim=program.cube_dim, device=device, checked=mode == "checked").ir_module
                source = render(ir, CUDA).source
                cicc, ptxas = compile_times(source, Path(tmp), args.arch)
                rows[mode].append((source.count("\n"), cicc, ptxas))
                print(f"seed {seed} {mode:9s} {source.count(chr(10)):6d} lines  cicc {cicc:.3f} s  ptxas {ptxas:.3f} s",
                      flush=True)
    for mode, got in rows.items():
        lines, cicc, ptxas = (statistics.mean(r[k] for r in got) for k in range(3))
        print(f"mean {mode:9s} {lines:8.0f} lines  cicc {cicc:.3f} s  ptxas {ptxas:.3f} s")


if __name__ == "__main__":
    main()
