"""Why the checked plain FIR's proven build runs about 1% slower than the unchecked kernel at the
default size with the GPU's time alone, though both compile to the same SASS (docs/benchmarks.md,
"The twenty-first session"): the launch's parameter block, or something else.

    python benchmarks/gpu/fir_proven.py [--samples 21]      # needs CuPy and an NVIDIA GPU

At RAJAPerf's default size (1e6 iterates, 16 taps, f64), GPU time per launch with the suite's
queued timer (`benchmarks.rajaperf.timing.QueuedEventTimer`: each sample enqueued behind a held
stream), every variant interleaved, median of ``--samples``:

- cubepy's ``fir`` with the taps as a NumPy array (by value in the parameters, as the suite
  passes them) and as a CuPy array, checked (the proven build) and unchecked;
- Base_CUDA's FIR kernel (taps in ``__constant__``) through ``cupy.RawKernel``, alone and with
  unused parameters appended: an int and a pointer (what the checked build adds: its launch
  test's answer and its error record), 16 doubles (the size of the taps by value), and both.

- cubepy's two CUDA sources (`CompiledKernel.source`), checked (built with ``-DCB_LAUNCH_OK=1``,
  as the proven build is) and unchecked, compiled by ``cupy.RawModule`` with cubepy's NVRTC
  options (strict floating point: ``--fmad=false``) and launched with ``cuLaunchKernel`` on
  parameters packed here (the taps as 16 doubles by value): the same code without cubepy's
  launch path, to tell a cost of the code from one of the launch; each built three ways (CuPy's
  RawModule, NVRTC to a cubin as cubepy builds it, NVRTC to PTX for the driver's JIT), to tell
  the launch from the build.

Each variant's output is checked against NumPy after it is poisoned.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: benchmarks.rajaperf
from cubepy.backends.cstyle.flags import CUDA_FP_FLAGS  # noqa: E402

from benchmarks.rajaperf.apps.fir import COEFFICIENTS, fir  # noqa: E402
from benchmarks.rajaperf.timing import QueuedEventTimer, interleaved, print_against  # noqa: E402

N = 1_000_000
_DOUBLES = ", ".join(f"double u{k}" for k in range(16))
SOURCE = r'''
__constant__ double taps_const[16];
#define BODY long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
  if (i < iend) { double s = 0.0; for (long long j = 0; j < coefflen; ++j) s += taps_const[j] * in[i + j]; out[i] = s; }
extern "C" __global__ void __launch_bounds__(256)
fir_base(double* out, const double* in, long long coefflen, long long iend) { BODY }
extern "C" __global__ void __launch_bounds__(256)
fir_int_ptr(double* out, const double* in, long long coefflen, long long iend, int ok, int* err) { BODY }
extern "C" __global__ void __launch_bounds__(256)
fir_16_doubles(double* out, const double* in, long long coefflen, long long iend, DOUBLES) { BODY }
extern "C" __global__ void __launch_bounds__(256)
fir_16_doubles_int_ptr(double* out, const double* in, long long coefflen, long long iend, DOUBLES, int ok, int* err)
{ BODY }
'''.replace("DOUBLES", _DOUBLES)


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=21)
    parser.add_argument("--batch", type=int, default=100,
                        help="launches per sample (the timer takes fewer where the host is slower)")
    opts = parser.parse_args()
    dev = cb.device("cuda")
    module = cp.RawModule(code=SOURCE, options=("--std=c++17",))
    taps_host = np.array(COEFFICIENTS)
    taps_device = cp.asarray(taps_host)
    cp.ndarray((16,), cp.float64, memptr=module.get_global("taps_const"))[...] = taps_device
    inp = cp.asarray(np.random.default_rng(1).random(N + 15))
    out = cp.zeros(N)
    err = cp.zeros(64, cp.int32)
    want = sum(c * inp[j:j + N] for j, c in enumerate(COEFFICIENTS))
    g = (N + 255) // 256
    base_args = (out, inp, np.int64(16), np.int64(N))
    unused_doubles = tuple(np.float64(k) for k in range(16))
    raw = {name: module.get_function(name) for name in ("fir_base", "fir_int_ptr", "fir_16_doubles",
                                                           "fir_16_doubles_int_ptr")}
    raw_launch = {f"{name}, {how}": _raw_launcher(cp, source, g, out, inp, taps_host, err, how)
                  for name, source in _cubepy_sources(dev, g, out, inp, taps_host).items()
                  for how in ("RawModule", "NVRTC cubin", "NVRTC PTX, driver JIT")}
    variants = {
        "cubepy fir, NumPy taps, unchecked": lambda: fir[g, 256](out, inp, taps_host, device=dev, checked=False),
        "cubepy fir, NumPy taps, checked": lambda: fir[g, 256](out, inp, taps_host, device=dev, checked=True),
        "cubepy fir, CuPy taps, unchecked": lambda: fir[g, 256](out, inp, taps_device, device=dev, checked=False),
        "cubepy fir, CuPy taps, checked": lambda: fir[g, 256](out, inp, taps_device, device=dev, checked=True),
        "Base_CUDA fir": lambda: raw["fir_base"]((g,), (256,), base_args),
        "  + int, pointer": lambda: raw["fir_int_ptr"]((g,), (256,), (*base_args, np.int32(1), err)),
        "  + 16 doubles": lambda: raw["fir_16_doubles"]((g,), (256,), (*base_args, *unused_doubles)),
        "  + 16 doubles, int, pointer": lambda: raw["fir_16_doubles_int_ptr"](
            (g,), (256,), (*base_args, *unused_doubles, np.int32(1), err)),
        **raw_launch,
    }
    for name, launch in variants.items():
        out[...] = cp.nan                                 # poisoned: an unwritten element fails the check
        launch()
        dev.synchronize()
        if not bool(cp.allclose(out, want, rtol=1e-12)):
            raise SystemExit(f"{name}: wrong output")
    timer = QueuedEventTimer(dev)
    samples = interleaved(timer, {name: (launch, opts.batch) for name, launch in variants.items()}, opts.samples)
    print(f"{dev.properties.name}; FIR at {N} iterates; GPU time per launch (queued), median of {opts.samples}")
    print_against(samples, "Base_CUDA fir")


def _cubepy_sources(dev, g: int, out, inp, taps) -> dict[str, tuple[str, bool]]:
    return {f"cubepy's {'checked' if checked else 'unchecked'} source, raw launch":
            (fir.compile(out, inp, taps, dim=256, count=g, device=dev, checked=checked).source(), checked)
            for checked in (False, True)}


def _raw_launcher(cp, built: tuple[str, bool], g: int, out, inp, taps, err, how: str):
    """A launch of cubepy's FIR source through cuLaunchKernel, its parameters packed here: out,
    its extent, inp, its extent, the taps by value, their count (and, checked, the launch test's
    answer, 1, and the error record). Built by ``cupy.RawModule`` (``how="RawModule"``), as cubepy
    builds it (NVRTC to a cubin for the GPU's architecture, loaded as a module; written to $OUT
    where set), or by NVRTC to PTX that the driver compiles when it loads it."""
    import ctypes

    source, checked = built
    options = ("--std=c++17", "-default-device", "-minimal", *CUDA_FP_FLAGS[None],
               *(("-DCB_LAUNCH_OK=1",) if checked else ()))
    module = None
    if how == "RawModule":
        function = cp.RawModule(code=source, options=options).get_function("fir")
        function = getattr(function, "kernel", function)          # the driver-level Function
    else:
        from cupy_backends.cuda.libs import nvrtc

        arch = cp.cuda.Device().compute_capability
        ptx = how.startswith("NVRTC PTX")
        prog = nvrtc.createProgram(source, "fir.cu", [], [])
        nvrtc.compileProgram(prog, [*options, f"--gpu-architecture={'compute' if ptx else 'sm'}_{arch}"])
        built = nvrtc.getPTX(prog) if ptx else nvrtc.getCUBIN(prog)
        nvrtc.destroyProgram(prog)
        if not ptx and os.environ.get("OUT"):          # for nvdisasm
            Path(os.environ["OUT"], f"fir_{'checked' if checked else 'unchecked'}.cubin").write_bytes(built)
        module = cp.cuda.function.Module()
        module.load(built.encode() if isinstance(built, str) else built)
        function = module.get_function("fir")
    values = [ctypes.c_uint64(out.data.ptr), ctypes.c_int32(out.size), ctypes.c_uint64(inp.data.ptr),
              ctypes.c_int32(inp.size), (ctypes.c_double * 16)(*taps), ctypes.c_int32(16)]
    if checked:
        values += [ctypes.c_int32(1), ctypes.c_uint64(err.data.ptr)]
    pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))

    def launch() -> None:
        cp.cuda.driver.launchKernel(function.ptr, g, 1, 1, 256, 1, 1, 0, cp.cuda.get_current_stream().ptr,
                                    ctypes.addressof(pointers), 0)
    launch.keep = (values, pointers, function, module)          # alive as long as the launcher
    return launch


if __name__ == "__main__":
    main()
