"""What NVRTC's options cost and change, on the CPU (NVRTC builds cubins without a GPU).

    pip install nvidia-cuda-nvrtc        # NVRTC 13.x for the host; or --lib PATH/libnvrtc.so
    python benchmarks/cpu/nvrtc_options.py [--ir-dump DIR] [--fuzz-seeds 5000001,5000002,21101614]

- saxpy (its proven build, ``-DCB_LAUNCH_OK=1``, and the build with the checks) and an empty
  kernel, with and without ``-minimal``: median of 7 builds each;
- with ``--ir-dump DIR`` (a folder ``CUBEPY_DUMP_IR`` filled, e.g. while the conformance suite ran on
  the interpreter): every distinct CUDA source among the dumped kernels built with and without
  ``-minimal`` (both builds where a kernel has a launch test): how many build, whether the cubins
  are identical, the median build time;
- fuzz kernels (their CUDA source as the cuda backend renders it) at NVRTC's default and at
  ``--Ofast-compile=min|mid|max``.
Options as the CUDA backend passes them (C++17, sm_90, -default-device, strict FP); milliseconds.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import glob
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests

from cubepy.backends.cstyle import CUDA, render  # noqa: E402
from cubepy.backends.cstyle.flags import CUDA_FP_FLAGS  # noqa: E402

import cubepy as cb  # noqa: E402
from cubepy import Array, Mut, f32  # noqa: E402

BASE = ["--std=c++17", "--gpu-architecture=sm_90", "-default-device", *CUDA_FP_FLAGS[None]]


def find_nvrtc(path: str | None) -> ctypes.CDLL:
    candidates = [path] if path else []
    for site in sys.path:
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "lib", "libnvrtc.so.*")))
    candidates.append(ctypes.util.find_library("nvrtc"))
    for candidate in candidates:
        if candidate and os.path.exists(candidate) and "builtins" not in candidate:
            return ctypes.CDLL(candidate)
    raise SystemExit("no libnvrtc found: pip install nvidia-cuda-nvrtc, or pass --lib")


class Nvrtc:
    def __init__(self, lib: ctypes.CDLL, include: list[str]):
        self.lib, self.include = lib, include

    def build(self, source: str, options: list[str]) -> tuple[float | None, bytes | str]:
        """(seconds, cubin) or (None, the log)."""
        lib, prog = self.lib, ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None) == 0
        opts = [o.encode() for o in [*options, *self.include]]
        start = time.perf_counter()
        failed = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        seconds = time.perf_counter() - start
        size = ctypes.c_size_t()
        if failed:
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            lib.nvrtcDestroyProgram(ctypes.byref(prog))
            return None, log.value.decode(errors="replace")
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, cubin)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return seconds, cubin.raw

    def median_ms(self, source: str, options: list[str], runs: int = 7) -> float:
        times = []
        for _ in range(runs):
            seconds, out = self.build(source, options)
            if seconds is None:
                raise RuntimeError(out[:2000])
            times.append(seconds)
        return statistics.median(times) * 1e3


def saxpy_source() -> str:
    @cb.kernel
    def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]
    from cubepy.backends.cuda import INLINE_ARRAY_BYTES

    dev = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_launch=True, checks_per_run=True,
                    inline_array_bytes=INLINE_ARRAY_BYTES)
    x = np.ones(4096, np.float32)
    return render(saxpy.compile(x, x.copy(), 2.0, dim=256, device=dev).ir_module, CUDA).source


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=None, help="libnvrtc.so to use")
    ap.add_argument("--ir-dump", default=None, help="a CUBEPY_DUMP_IR folder: build every distinct source")
    ap.add_argument("--fuzz-seeds", default="5000001,5000002,21101614")
    args = ap.parse_args()
    version = (ctypes.c_int(), ctypes.c_int())
    lib = find_nvrtc(args.lib)
    lib.nvrtcVersion(ctypes.byref(version[0]), ctypes.byref(version[1]))
    include = [f"-I{p}" for p in ("/usr/local/cuda/include",) if os.path.isdir(p)]
    nvrtc = Nvrtc(lib, include)
    print(f"NVRTC {version[0].value}.{version[1].value}; ms, median of 7 builds")
    empty = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }'
    saxpy = saxpy_source()
    for name, source, extra in (("empty kernel", empty, []), ("saxpy, proven build", saxpy, ["-DCB_LAUNCH_OK=1"]),
                                ("saxpy, build with checks", saxpy, ["-DCB_LAUNCH_OK=0"])):
        plain, minimal = (nvrtc.median_ms(source, [*BASE, *extra, *m]) for m in ([], ["-minimal"]))
        print(f"  {name:28s} {plain:7.1f}   -minimal {minimal:7.1f}")
    if args.ir_dump:
        sources = {render(pickle.loads(p.read_bytes()), CUDA).source for p in sorted(Path(args.ir_dump).glob("*.pkl"))}
        builds = failed = different = 0
        before, after = [], []
        for source in sorted(sources):
            for extra in ([["-DCB_LAUNCH_OK=1"], ["-DCB_LAUNCH_OK=0"]] if "CB_LAUNCH_OK" in source else [[]]):
                t0, a = nvrtc.build(source, [*BASE, *extra])
                t1, b = nvrtc.build(source, [*BASE, *extra, "-minimal"])
                builds += 1
                if t0 is None or t1 is None:
                    failed += 1
                    continue
                different += a != b
                before.append(t0)
                after.append(t1)
        print(f"  {len(sources)} distinct sources, {builds} builds: {failed} failed, {different} cubins differ with "
              f"-minimal; median {statistics.median(before) * 1e3:.1f} -> {statistics.median(after) * 1e3:.1f}")
    from tests.fuzz.__main__ import _cuda_source

    print("fuzz kernels (-minimal; one build each): default, --Ofast-compile=min, mid, max")
    for seed in (int(s) for s in args.fuzz_seeds.split(",") if s):
        source = _cuda_source(seed)
        times = [nvrtc.median_ms(source, [*BASE, "-minimal", *level], runs=1)
                 for level in ([], ["--Ofast-compile=min"], ["--Ofast-compile=mid"], ["--Ofast-compile=max"])]
        print(f"  seed {seed} ({source.count(chr(10))} lines): " + ", ".join(f"{t:.0f}" for t in times))


if __name__ == "__main__":
    main()
