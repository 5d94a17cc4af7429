"""Host cost of one warm launch, for every documented way to launch, measured in one run, interleaved.

    python benchmarks/gpu/launch_forms.py [--device cuda|opencl|cpu] [--out results.json]

On ``cuda`` the arrays are CuPy arrays and the peer is ``cupy.RawKernel`` (target: every form at most
RawKernel + 3 us); on ``opencl`` they are pyopencl arrays on the device's queue and the peer is the
same saxpy written in OpenCL C, called as a ``pyopencl.Kernel`` with its scalar types set; on ``cpu``
they are NumPy arrays (target: at most 10 us). The FIR rows pass 16
taps in device memory and as a NumPy array (on CUDA: by value, packed into the launch's
parameters). Median over rounds of 200 launches, the device synchronized after each round, rounds
of all forms interleaved, the first form of a round rotating. A launch inside ``cb.profile()``
cannot share those rounds (a profile spans its round): it is timed in its own rounds, and then in
rounds that alternate a fresh profile of 200 launches (its start and end untimed) with 200
RawKernel launches outside it, so that both see the same drift of the host. Run it alone on the
host (no fuzzer beside it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from cubepy.autotune import autotune

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from benchmarks.rajaperf.apps.fir import fir  # noqa: E402
from tests.kernels import saxpy, saxpy3  # noqa: E402

ROUNDS, CALLS, N = 21, 200, 4096


RAW = r'''extern "C" __global__ void saxpy1(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }'''
RAW_CL = r'''__kernel void saxpy1(__global const float* restrict x, __global float* restrict y, float a, int n) {
  int i = get_global_id(0); if (i < n) y[i] = a * x[i] + y[i]; }'''


def forms(dev, x, y, stream, upload):
    cubes = N // 256
    tuned = autotune(saxpy, lambda args, dim: (len(args[0]) + dim[0] - 1) // dim[0], dims=[256], reps=2, rounds=1)
    fns = {
        "k[16, 256](...)": lambda: saxpy[cubes, 256](x, y, 2.0, device=dev),
        "k[(16,), (256,)](...)": lambda: saxpy[(cubes,), (256,)](x, y, 2.0, device=dev),
        "k[cb.CubeCount(16), cb.CubeDim(256)](...)": lambda: saxpy[cb.CubeCount(cubes), cb.CubeDim(256)](
            x, y, 2.0, device=dev),
        "3-D: k[(4, 2, 2), (32, 4, 2)](...)": lambda: saxpy3[(4, 2, 2), (32, 4, 2)](x, y, 2.0, 0, device=dev),
        "k.launch(16, 256, ...)": lambda: saxpy.launch(cubes, 256, x, y, 2.0, device=dev),
        "default device: k[16, 256](...)": lambda: saxpy[cubes, 256](x, y, 2.0),
        "autotuned: tuned(...)": lambda: tuned(x, y, 2.0, device=dev),
    }
    if stream is not None:
        fns["k[16, 256](..., stream=s)"] = lambda: saxpy[cubes, 256](x, y, 2.0, device=dev, stream=stream)
    # FIR with 16 taps in device memory, and as a NumPy array (on CUDA: by value, in the parameters)
    taps = np.linspace(-1.0, 1.0, 16)
    out, inp, taps_on_device = upload(np.zeros(N)), upload(np.ones(N + 15)), upload(taps)
    fns["FIR, taps in device memory: k[16, 256](...)"] = lambda: fir[cubes, 256](out, inp, taps_on_device, device=dev)
    fns["FIR, taps a NumPy array: k[16, 256](...)"] = lambda: fir[cubes, 256](out, inp, taps, device=dev)
    return fns


def measure(fns: dict, sync) -> dict:
    samples = {name: [] for name in fns}
    for fn in fns.values():
        for _ in range(50):
            fn()
    sync()
    names = list(fns)
    for round_ in range(ROUNDS):
        shift = round_ % len(names)                 # who goes first rotates: drift touches all alike
        for name in names[shift:] + names[:shift]:
            fn = fns[name]
            start = time.perf_counter()
            for _ in range(CALLS):
                fn()
            samples[name].append((time.perf_counter() - start) / CALLS * 1e6)
            sync()
    return {name: statistics.median(s) for name, s in samples.items()}


def in_and_out_of_profiles(profiled, peer, sync) -> tuple[float, float]:
    """Rounds of ``CALLS`` launches inside a fresh ``cb.profile()`` (its start and end untimed) and
    ``CALLS`` of ``peer`` outside one, alternating: the profiled row against the peer's in the
    same drift of the host."""
    inside, outside = [], []
    for _ in range(ROUNDS):
        with cb.profile():
            profiled()                              # the timer's start, untimed
            sync()
            start = time.perf_counter()
            for _ in range(CALLS):
                profiled()
            inside.append((time.perf_counter() - start) / CALLS * 1e6)
            sync()
        start = time.perf_counter()
        for _ in range(CALLS):
            peer()
        outside.append((time.perf_counter() - start) / CALLS * 1e6)
        sync()
    return statistics.median(inside), statistics.median(outside)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    dev = cb.device(args.device)
    cb.set_device(dev)
    if args.device == "cuda":
        import cupy as cp
        x, y, stream = cp.ones(N, cp.float32), cp.ones(N, cp.float32), cp.cuda.Stream(non_blocking=True)
        raw = cp.RawModule(code=RAW).get_function("saxpy1")
        fns = forms(dev, x, y, stream, cp.asarray)
        fns["cupy.RawKernel (the peer)"] = lambda: raw((N // 256,), (256,), (x, y, cp.float32(2.0), cp.int32(N)))

        def sync():
            cp.cuda.Device().synchronize()
        peer = "cupy.RawKernel (the peer)"
    elif args.device == "opencl":
        import pyopencl as cl
        import pyopencl.array as cla
        queue = dev.backend.queue(dev.properties)

        def upload(a):
            return cla.to_device(queue, a)
        x, y = upload(np.ones(N, np.float32)), upload(np.ones(N, np.float32))
        raw = cl.Kernel(cl.Program(queue.context, RAW_CL).build(), "saxpy1")
        raw.set_scalar_arg_dtypes([None, None, np.float32, np.int32])
        fns = forms(dev, x, y, cl.CommandQueue(queue.context), upload)
        fns["pyopencl.Kernel (the peer)"] = lambda: raw(queue, (N,), (256,), x.data, y.data, 2.0, N)
        sync, peer = dev.synchronize, "pyopencl.Kernel (the peer)"
    else:
        x, y = np.ones(N, np.float32), np.ones(N, np.float32)
        fns, sync, peer = forms(dev, x, y, None, np.asarray), dev.synchronize, None
    times = measure(fns, sync)
    with cb.profile():                          # launches inside a profile, measured on their own
        times["inside cb.profile(): k[16, 256](...)"] = measure(
            {"p": lambda: saxpy[N // 256, 256](x, y, 2.0, device=dev)}, sync)["p"]
    if peer is not None:
        profiled, outside = in_and_out_of_profiles(lambda: saxpy[N // 256, 256](x, y, 2.0, device=dev),
                                                   fns[peer], sync)
        print(f"rounds alternating a profile of {CALLS} cubepy launches and {CALLS} {peer} launches outside "
              f"it: profiled {profiled:.2f} us, the peer {outside:.2f} us: the peer {profiled - outside:+.1f} us")
        times["in alternating rounds: inside cb.profile()"] = profiled
        times["in alternating rounds: the peer"] = outside
    base = times.get(peer)
    print(f"device: {dev.properties.name}; {N} float32, median of {ROUNDS} rounds of {CALLS} launches")
    for name, us in times.items():
        extra = f"  the peer {us - base:+.1f} us" if base is not None and name != peer else ""
        print(f"  {name:48s} {us:8.2f} us{extra}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": dev.properties.name, "us_per_launch": times}, f, indent=1)


if __name__ == "__main__":
    main()
