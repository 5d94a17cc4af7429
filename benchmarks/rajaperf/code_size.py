"""What checked mode adds to each RAJAPerf kernel's code, counted statically (no GPU needed).

    python -m benchmarks.rajaperf.code_size [--sass]

For the plain port of every app, checked and unchecked: the bounds checks left after the trace-time
proofs (`cubepy.ir.bounds`), and the PTX nvcc makes for sm_90 (instructions, global loads,
compares, branches). ``--sass`` also counts SASS instructions with cuobjdump where it exists (the
GPU machine) and the registers ptxas gives the kernel. ``--per-cube`` renders and builds as the
cuda backend does (checks per launch, cube and run): the checked columns count the build that
runs where the host proved the launch in bounds (``-DCB_LAUNCH_OK=1``), and ``unproven ptx`` the
build of the other launches (``-DCB_LAUNCH_OK=0``). The IR is specialized for 32-lane planes on
the interpreter, as CUDA specializes it (small read-only host arrays by value included), and a
shape-generic kernel gets the ``__launch_bounds__`` CUDA compiles it with for the launch's units
(`CudaBackend.units_bound`: ptxas allocates registers for it).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from cubepy.backends.cstyle import CUDA, render

import cubepy as cb

from .apps import APPS

SIZE = 100_000


def _walk(block):
    for op in block.ops:
        yield op
        for inner in op.blocks:
            yield from _walk(inner)


def _instruction(s: str) -> bool:
    return bool(s) and not s.startswith(("//", ".", "{", "}", "$")) and s.endswith(";")


def _ptx_counts(ptx: str) -> dict[str, int]:
    body = [line.strip() for line in ptx.splitlines()]
    instructions = [s for s in body if _instruction(s)]
    return {"ptx": len(instructions),
            "ld.global": sum(bool(re.match(r"ld\.global", s)) for s in instructions),
            "setp": sum(s.startswith("setp") for s in instructions),
            "bra": sum(bool(re.match(r"(@%p\d+ )?bra", s)) for s in instructions)}


def _sass_count(cubin: Path) -> int | None:
    tool = shutil.which("cuobjdump")
    if tool is None:
        return None
    listing = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    return sum(bool(re.match(r"\s*/\*[0-9a-f]{4}\*/", line)) for line in listing.splitlines())


def count(kernel_ir, folder: Path, sass: bool, defines: tuple = ()) -> dict:
    checks = sum(op.opcode == "report_oob" for op in _walk(kernel_ir.body))
    source = folder / f"{kernel_ir.name}.cu"
    source.write_text(render(kernel_ir, CUDA).source)
    nvcc = ["nvcc", "-arch=sm_90", "-std=c++17", "-w", *defines]
    subprocess.run([*nvcc, "-ptx", str(source), "-o", str(source.with_suffix(".ptx"))], check=True)
    row = {"checks": checks, **_ptx_counts(source.with_suffix(".ptx").read_text())}
    if sass:
        cubin = source.with_suffix(".cubin")
        built = subprocess.run([*nvcc, "-cubin", "-Xptxas", "-v", str(source), "-o", str(cubin)], check=True,
                               capture_output=True, text=True)
        row["sass"] = _sass_count(cubin)
        used = re.search(r"Used (\d+) registers", built.stdout + built.stderr)
        row["regs"] = int(used.group(1)) if used else None
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sass", action="store_true", help="count SASS with cuobjdump too")
    parser.add_argument("--per-cube", action="store_true",
                        help="checks tested once per launch, cube and run, as on CUDA")
    opts = parser.parse_args(argv)
    if shutil.which("nvcc") is None:
        raise SystemExit("nvcc is not on PATH")
    from cubepy.backends.cuda import INLINE_ARRAY_BYTES, CudaBackend

    cuda = CudaBackend()        # for its units bounds: no GPU needed

    device = cb.device("interp", plane_dim=32, checks_per_cube=opts.per_cube, checks_per_run=opts.per_cube,
                       checks_per_launch=opts.per_cube, inline_array_bytes=INLINE_ARRAY_BYTES)
    columns = ["checks", "ptx", "ld.global", "setp", "bra"] + (["sass", "regs"] if opts.sass else [])
    print(f"{'kernel':<24}" + "".join(f"{c + ' u/c':>16}" for c in columns)
          + (f"{'unproven ptx':>14}" if opts.per_cube else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for app in APPS.values():
            problem = app.set_up(SIZE)
            arrays = problem.copy_arrays()
            for launch in app.plain(problem, arrays, device, checked=True).launches:
                rows = {}
                for checked in (False, True):
                    compiled = launch.kernel.compile(*launch.args, dim=launch.dim, count=launch.count,
                                                     device=device, checked=checked)
                    folder = Path(tmp) / ("checked" if checked else "unchecked")
                    folder.mkdir(exist_ok=True)
                    kernel_ir = compiled.ir_module
                    if kernel_ir.units_bound is not None:   # shape-generic: CUDA's bound for these units
                        bound = cuda.units_bound(math.prod(compiled.cube_dim))
                        kernel_ir = dataclasses.replace(kernel_ir, units_bound=bound)
                    tested = checked and kernel_ir.launch_test is not None
                    rows[checked] = count(kernel_ir, folder, opts.sass, ("-DCB_LAUNCH_OK=1",) if tested else ())
                    if tested:
                        rows["unproven"] = count(kernel_ir, folder, False, ("-DCB_LAUNCH_OK=0",))
                cells = "".join(f"{f'{rows[False][c]} / {rows[True][c]}':>16}" for c in columns)
                extra = f"{rows['unproven']['ptx'] if 'unproven' in rows else '-':>14}" if opts.per_cube else ""
                print(f"{app.name + ' ' + launch.kernel.__name__:<24}{cells}{extra}")


if __name__ == "__main__":
    main()
