"""A cold build three ways: NVRTC to a cubin (what the cuda backend does) against NVRTC to PTX
and the driver's JIT, at module load or through the driver's linker (which gives a cubin to keep
in the disk cache), on the GPU.

    CUDA_CACHE_DISABLE=1 python benchmarks/gpu/ptx_jit.py [--runs 9] [--out results.json]

For an empty kernel, saxpy (its proven build, ``-DCB_LAUNCH_OK=1``, and the build with the
checks) and fuzz kernels, as the backend renders them: milliseconds from the source to a loaded
module, median of ``--runs`` builds (NVRTC's part and the load's), the ways interleaved; each
way's registers for the kernel (the driver's answer: the same PTX through another build of
ptxas may allocate differently). The driver's JIT cache must be off (``CUDA_CACHE_DISABLE=1``,
which the script sets before CUDA starts), or the PTX ways would load a cached build.
"""

from __future__ import annotations

import os

os.environ.setdefault("CUDA_CACHE_DISABLE", "1")     # before CUDA starts: every PTX load is a JIT

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: benchmarks, tests

from cubepy.backends.cstyle.flags import CUDA_FP_FLAGS  # noqa: E402

from benchmarks.cpu.nvrtc_options import saxpy_source  # noqa: E402

EMPTY = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }'


def build(cp, nvrtc, source: str, options: list[str], way: str) -> tuple[float, float, object]:
    """(seconds in NVRTC, seconds from its output to a loaded module, the module)."""
    start = time.perf_counter()
    prog = nvrtc.createProgram(source, "k.cu", [], [])
    try:
        nvrtc.compileProgram(prog, options)
        image = nvrtc.getCUBIN(prog) if way == "cubin" else nvrtc.getPTX(prog)
        image = image.encode() if isinstance(image, str) else image
    finally:
        nvrtc.destroyProgram(prog)
    compiled = time.perf_counter()
    if way == "ptx + driver link":           # the driver's JIT through its linker: a cubin to keep on disk
        link = cp.cuda.function.LinkState()
        link.add_ptr_data(image, "k.ptx")          # CuPy's LinkState takes PTX there
        image = link.complete()
    module = cp.cuda.function.Module()
    module.load(image)
    return compiled - start, time.perf_counter() - compiled, module


def registers(cp, module, name: str) -> int:
    drv = cp.cuda.driver
    return drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_NUM_REGS, module.get_function(name).ptr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--fuzz-seeds", default="5000001,5000002")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import cupy as cp
    from cupy_backends.cuda.libs import nvrtc

    cp.cuda.Device().synchronize()                   # the context first: not part of any build
    arch = "".join(map(str, cp.cuda.Device().compute_capability))
    from cubepy.backends.cuda import _include_options  # cuda_fp16.h's folder, as the backend passes it

    base = ["--std=c++17", "-default-device", "-minimal", *CUDA_FP_FLAGS[None], *_include_options(cp)]
    ways = {"cubin": [f"--gpu-architecture=sm_{arch}"], "ptx + driver JIT": [f"--gpu-architecture=compute_{arch}"],
            "ptx + driver link": [f"--gpu-architecture=compute_{arch}"]}
    from tests.fuzz.__main__ import _cuda_source

    saxpy = saxpy_source()
    cases = [("empty kernel", EMPTY, [], "k"), ("saxpy, proven build", saxpy, ["-DCB_LAUNCH_OK=1"], None),
             ("saxpy, build with checks", saxpy, ["-DCB_LAUNCH_OK=0"], None)]
    cases += [(f"fuzz kernel {s}", _cuda_source(int(s)), [], None) for s in args.fuzz_seeds.split(",") if s]
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, NVRTC {'.'.join(map(str, nvrtc.getVersion()))}, "
          f"driver {cp.cuda.runtime.driverGetVersion()}, CUDA_CACHE_DISABLE={os.environ['CUDA_CACHE_DISABLE']}; "
          f"ms from source to loaded module, median of {args.runs}")
    results = {}
    for label, source, extra, name in cases:
        name = name or re.search(r"__global__ void (?:__launch_bounds__\([^)]*\)\s*)?(\w+)\(", source).group(1)
        times: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
        modules, failed = {}, set()
        for _ in range(args.runs):
            for way, arch_option in ways.items():
                if way in failed:
                    continue
                try:
                    nvrtc_s, load_s, modules[way] = build(cp, nvrtc, source, [*base, *arch_option, *extra], way)
                except Exception as e:          # a CuPy without the linker's bindings: that way is left out
                    print(f"  {label}: {way} failed: {type(e).__name__}: {e}")
                    failed.add(way)
                    continue
                times[way].append((nvrtc_s * 1e3, load_s * 1e3))
        results[label] = {}
        cells = []
        for way, t in times.items():
            if not t:
                continue
            total = statistics.median(a + b for a, b in t)
            nv, load = statistics.median(a for a, _ in t), statistics.median(b for _, b in t)
            regs = registers(cp, modules[way], name)
            results[label][way] = {"ms": total, "nvrtc_ms": nv, "load_ms": load, "registers": regs}
            cells.append(f"{way} {total:6.1f} (NVRTC {nv:5.1f} + load {load:5.1f}, {regs} regs)")
        print(f"  {label:26s} " + "  ".join(cells))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
