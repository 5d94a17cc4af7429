"""NVRTC's first compile in a fresh process against its later ones, and whether a warm-up
compile in a thread takes the first one's cost off a cold launch (CUDA machine, CuPy's NVRTC).

    python benchmarks/gpu/nvrtc_first_compile.py [--runs 7]

Each mode runs in its own fresh processes, ``--runs`` of each, in turns; medians, min and max in ms:

- ``serial``: a saxpy compiled first, then another small program (``first``, ``second``);
- ``gil``: how fast a Python loop runs while a compile runs in a thread, against alone
  (``loops_ratio``; 1.0 means the compile released the GIL all along);
- ``cold`` / ``warm``: 8 ms of Python (a trace and render stand in), then the saxpy compile;
  ``warm`` starts a compile of another program in a thread first and waits for it before its
  own (NVRTC's first-call cost off the critical path, if the overlap pays): ``total``;
- ``load``: whether the first call's cost is loading NVRTC's builtins library: the library
  NVRTC loads on its first compile (found in ``/proc/self/maps`` by a compile in an untimed
  process) is loaded with ``ctypes`` first (``dlopen``), then saxpy is compiled;
- ``load-thread``: that load in a thread beside the 8 ms of Python, then the saxpy compile
  (``total``, against ``cold``'s);
- ``populate``: the library loaded, then every mapping of NVRTC's libraries faulted in with
  ``madvise(MADV_POPULATE_READ)`` (Linux 5.14; ``populate`` ms, -1 where the kernel refuses it)
  before the saxpy compile: whether the first compile's cost is page faults. ``serial`` also
  counts the minor page faults of each compile (``faults_first``, ``faults_second``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

FIND_BUILTINS = r'''
import cupy as cp
from cupy_backends.cuda.libs import nvrtc
program = nvrtc.createProgram('extern "C" __global__ void k() {}', "k.cu", [], [])
nvrtc.compileProgram(program, ["-minimal"])
print(next((line.split()[-1] for line in open("/proc/self/maps") if "nvrtc-builtins" in line), ""))
'''

CHILD = r'''
import json, sys, threading, time
import cupy as cp
from cupy_backends.cuda.libs import nvrtc
cp.cuda.Device().synchronize()
OPTIONS = ["--std=c++17", "--gpu-architecture=sm_90", "-default-device", "-minimal", "--fmad=false"]
EMPTY = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }'
SAXPY = ('extern "C" __global__ void saxpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) '
         '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }')

import resource

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def build(source, name):
    start = time.perf_counter()
    program = nvrtc.createProgram(source, name + ".cu", [], [])
    nvrtc.compileProgram(program, OPTIONS)
    nvrtc.getCUBIN(program)
    nvrtc.destroyProgram(program)
    return (time.perf_counter() - start) * 1e3

def python_work(ms):
    end, n = time.perf_counter() + ms / 1e3, 0
    while time.perf_counter() < end:
        n += 1
    return n

mode, builtins, out = sys.argv[1], sys.argv[2], {}

def load_builtins():
    import ctypes
    start = time.perf_counter()
    ctypes.CDLL(builtins)
    out["load"] = (time.perf_counter() - start) * 1e3

def populate():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start, ok = time.perf_counter(), True
    for line in open("/proc/self/maps"):
        fields = line.split()
        if len(fields) == 6 and "libnvrtc" in fields[5] and fields[1].startswith("r"):
            lo, hi = (int(v, 16) for v in fields[0].split("-"))
            ok &= libc.madvise(lo, hi - lo, 22) == 0          # MADV_POPULATE_READ
    out["populate"] = (time.perf_counter() - start) * 1e3 if ok else -1.0

if mode == "load":
    load_builtins()
    out["saxpy"] = build(SAXPY, "s")
elif mode == "populate":
    load_builtins()
    populate()
    before = faults()
    out["saxpy"] = build(SAXPY, "s")
    out["faults"] = faults() - before
elif mode == "load-thread":
    start = time.perf_counter()
    thread = threading.Thread(target=load_builtins, daemon=True)
    thread.start()
    python_work(8)
    thread.join()
    out["saxpy"] = build(SAXPY, "s")
    out["total"] = (time.perf_counter() - start) * 1e3
elif mode == "serial":
    before = faults()
    out["first"] = build(SAXPY, "s")
    middle = faults()
    out["second"] = build(EMPTY, "e")
    out["faults_first"], out["faults_second"] = middle - before, faults() - middle
elif mode == "gil":
    alone = python_work(20)
    thread = threading.Thread(target=build, args=(EMPTY, "e"))
    thread.start()
    out["loops_ratio"] = python_work(20) / alone
    thread.join()
else:
    start = time.perf_counter()
    if mode == "warm":
        thread = threading.Thread(target=build, args=(EMPTY, "e"), daemon=True)
        thread.start()
    python_work(8)
    if mode == "warm":
        thread.join()
    out["saxpy"] = build(SAXPY, "s")
    out["total"] = (time.perf_counter() - start) * 1e3
print(json.dumps(out))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    found = subprocess.run([sys.executable, "-c", FIND_BUILTINS], capture_output=True, text=True, timeout=120)
    builtins = found.stdout.strip()
    print(f"NVRTC's builtins library: {builtins or 'not found'}")
    modes = ("serial", "gil", "cold", "warm") + (("load", "load-thread", "populate") if builtins else ())
    results: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for mode in modes:
            run = subprocess.run([sys.executable, "-c", CHILD, mode, builtins], capture_output=True, text=True,
                                 timeout=120)
            if run.returncode != 0:
                raise SystemExit(f"{mode}: {run.stderr[-2000:]}")
            for key, value in json.loads(run.stdout.strip().splitlines()[-1]).items():
                results.setdefault(f"{mode}.{key}", []).append(value)
    for key, values in results.items():
        print(f"{key:20s} median {statistics.median(values):7.2f}  min {min(values):7.2f}  max {max(values):7.2f}")


if __name__ == "__main__":
    main()
