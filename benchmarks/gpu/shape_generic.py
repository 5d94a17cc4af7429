"""What shape-generic code costs and how often kernels get it (docs/design.md, "Shape-generic kernels").

    python -m benchmarks.gpu.shape_generic --part registers     # needs nvcc; no GPU
    python -m benchmarks.gpu.shape_generic --part fuzz --seeds 600000:600200

- ``registers``: the plain RAJAPerf ports of VOL3D, DEL_DOT_VEC_2D and PRESSURE, checked and
  unchecked, traced as CUDA gets them (checks per cube and per run) for a cube of 256 units, and
  compiled for sm_90 with ``nvcc -Xptxas -v``: the registers and spill stores of the kernel
  compiled for its CubeDim (``__launch_bounds__(256)``) and of the shape-generic one under each
  launch bound (none, 256, 1024).
- ``fuzz``: how many of the differential fuzzer's kernels compile shape-generic on the
  interpreter, launched as the fuzzer launches them.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

import cubepy as cb


def _ptxas(source: str, folder: Path) -> tuple[int, int]:
    cu = folder / "kernel.cu"
    cu.write_text(source)
    done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", str(folder / "k.cubin"), str(cu)],
                          capture_output=True, text=True, check=True)
    registers = int(re.findall(r"Used (\d+) registers", done.stderr)[0])
    spills = int(re.findall(r"(\d+) bytes spill stores", done.stderr)[0])
    return registers, spills


def part_registers() -> None:
    from cubepy.backends.cstyle import CUDA, render

    from benchmarks.rajaperf.apps.del_dot_vec_2d import del_dot_vec_2d
    from benchmarks.rajaperf.apps.pressure import pressure2
    from benchmarks.rajaperf.apps.vol3d import vol3d

    if shutil.which("nvcc") is None:
        raise SystemExit("nvcc is not on PATH")
    n = 1000
    cases = {"VOL3D": (vol3d, [np.zeros(n) for _ in range(4)] + [10, 100, 0, 500, 1.0]),
             "DEL_DOT_VEC_2D": (del_dot_vec_2d, [np.zeros(n, np.int64)] + [np.zeros(n) for _ in range(5)]
                                + [10, 0.5, 1e-30]),
             "PRESSURE": (pressure2, [np.zeros(n) for _ in range(4)] + [1.0, 1.0, 1.0])}
    print(f"{'kernel':16s} {'mode':9s} {'static 256':>12s} {'generic none':>13s} {'generic 256':>12s} "
          f"{'generic 1024':>13s}   (registers/spill bytes, sm_90)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (kernel, args) in cases.items():
            for checked in (True, False):
                found = {}
                for generic in (False, True):
                    dev = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_run=True,
                                    shape_generic=generic)
                    ir = kernel.compile(*args, dim=256, device=dev, checked=checked).ir_module
                    source = render(ir, CUDA).source
                    if not generic:
                        found["static 256"] = _ptxas(source, Path(tmp))
                        continue
                    bound = "__launch_bounds__(1024)"     # the interpreter's units bound
                    for label, hint in (("none", ""), ("256", "__launch_bounds__(256)"), ("1024", bound)):
                        found[f"generic {label}"] = _ptxas(source.replace(bound, hint), Path(tmp))
                print(f"{name:16s} {'checked' if checked else 'unchecked':9s} "
                      + " ".join(f"{found[k][0]}/{found[k][1]}".rjust(12) for k in found))


def part_fuzz(first: int, stop: int) -> None:
    from tests.fuzz.generate import generate
    from tests.fuzz.run import arguments, load

    dev = cb.device("interp")
    tally: Counter = Counter()
    for seed in range(first, stop):
        program = generate(seed, size=40)
        try:
            kernel = load(program)
            compiled = kernel.compile(*arguments(program), dim=program.cube_dim, device=dev)
        except Exception as e:           # a program the generator got wrong, or one that does not compile
            tally[f"not compiled ({type(e).__name__})"] += 1
            continue
        tally["shape-generic" if compiled.shape_generic else "per CubeDim"] += 1
    print(f"fuzzer seeds {first}-{stop - 1} on the interpreter: " + ", ".join(f"{k} {v}" for k, v in tally.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("registers", "fuzz"), required=True)
    parser.add_argument("--seeds", default="600000:600200", help="fuzz: first:stop")
    args = parser.parse_args(argv)
    if args.part == "registers":
        part_registers()
    else:
        first, stop = (int(v) for v in args.seeds.split(":"))
        part_fuzz(first, stop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
