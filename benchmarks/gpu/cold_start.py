"""Where a fresh process's first launch spends its time: cold (empty cache) and warm (disk cache).

    python benchmarks/gpu/cold_start.py [--device cuda] [--runs 5] [--out results.json]

Each run is a new Python process that imports cubepy, asks for the device, launches saxpy once on
4096 float32 (CuPy arrays on cuda, NumPy on cpu) and waits for the result. The child times each
stage with wrappers around cubepy's own functions: Python imports, the device probe, tracing,
rendering/codegen, the backend compile (NVRTC or LLVM), loading the module, the trace index's
restore, the launch and the wait. Three processes per run share one cache folder: cold (empty),
warm (the compiled code and the trace on disk: restored untraced, `cubepy.runtime.trace_index`)
and warm without the trace index (``CUBEPY_TRACE_INDEX=0``: traced and rendered again to find the
compiled code). Targets (issue 10): cold compile <= 30 ms, a warm disk cache's first result
<= 20 ms after import, on CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))      # the repository root
from benchmarks.fresh_process import child_env, describe, warm_up  # noqa: E402

CHILD = textwrap.dedent(r'''
    import json, os, sys, time
    stages = {}
    t0 = time.perf_counter()
    import numpy as np
    import cubepy as cb
    from cubepy import Array, Mut, f32
    stages["import cubepy"] = time.perf_counter() - t0
    where = sys.argv[1]
    sys.path.insert(0, sys.argv[2])         # the repository, after cubepy's import was timed
    from benchmarks.stage_timer import time_calls

    import cubepy.runtime.kernel as kernel_module
    time_calls(stages, kernel_module, "trace_kernel", "trace")
    t1 = time.perf_counter()
    if where == "cuda":             # the user's own work first: CuPy's import and the CUDA context
        import cupy as cp
        x, y = cp.ones(4096, cp.float32), cp.ones(4096, cp.float32)
        cp.cuda.Device().synchronize()
    else:
        x, y = np.ones(4096, np.float32), np.ones(4096, np.float32)
    stages["the user's arrays (CuPy's import, the CUDA context)"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    dev = cb.device(where)
    stages["device probe"] = time.perf_counter() - t1
    backend = type(dev.backend)
    if where == "cuda":
        import cubepy.backends.cuda as cuda_backend
        time_calls(stages, backend, "render", "render")
        time_calls(stages, cuda_backend, "_nvrtc_cubin", "NVRTC")
        time_calls(stages, backend, "_load", "disk cache, NVRTC and module load")
    else:
        import cubepy.backends.cpu.jit as jit
        time_calls(stages, jit, "optimize", "LLVM optimize")
        time_calls(stages, jit, "Loaded", "object load")
    time_calls(stages, backend, "compile", "backend compile (total)")
    import cubepy.runtime.trace_index as trace_index
    time_calls(stages, trace_index, "restore", "trace index: look up, check the reads, restore")
    time_calls(stages, trace_index, "store", "trace index: store")

    @cb.kernel
    def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]

    profile_to = os.environ.get("COLD_START_PROFILE")
    if profile_to:                  # --profile: cProfile around the first launch call
        import cProfile
        profiler = cProfile.Profile()
        profiler.enable()
    t2 = time.perf_counter()
    saxpy[16, 256](x, y, 2.0, device=dev)
    t3 = time.perf_counter()
    if profile_to:
        profiler.disable()
        profiler.dump_stats(profile_to)
    dev.synchronize()
    t4 = time.perf_counter()
    stages["first launch call (restore or trace and compile, launch)"] = t3 - t2
    stages["wait for the result"] = t4 - t3
    stages["cubepy's part: probe to the first result"] = t4 - t1
    print(json.dumps({**{k: v * 1e3 for k, v in stages.items()}, "stats": cb.compile_stats()}))
''')


def write_script(folder: str) -> str:
    script = os.path.join(folder, "first_launch.py")       # a file: kernels need their source
    with open(script, "w") as f:
        f.write(CHILD)
    return script


def run(device: str, cache: str, bytecode: bool, trace_index: bool = True, profile: str | None = None) -> dict:
    script = write_script(cache)
    env = child_env(cache, bytecode)
    env["CUBEPY_TRACE_INDEX"] = "1" if trace_index else "0"
    if profile:
        env["COLD_START_PROFILE"] = profile
    done = subprocess.run([sys.executable, script, device, str(ROOT)], capture_output=True, text=True,
                          env=env, timeout=300)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after the runs, one more cold process under cProfile: print its N costliest "
                             "calls (cumulative) in the first launch call")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="the children compile every module from source (benchmarks/fresh_process.py)")
    args = parser.parse_args()
    bytecode = not args.no_bytecode_cache
    print(f"children: {describe(bytecode)}")
    with tempfile.TemporaryDirectory() as folder:
        warm_up(write_script(folder), args.device, str(ROOT), bytecode=bytecode)
    # warm: the disk cache holds the cubin (or object code) and the trace; "warm, no trace index":
    # it holds the compiled code only (CUBEPY_TRACE_INDEX=0), so the process traces and renders again
    results = {"cold": [], "warm": [], "warm, no trace index": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            results["cold"].append(run(args.device, cache, bytecode))
            results["warm"].append(run(args.device, cache, bytecode))
            results["warm, no trace index"].append(run(args.device, cache, bytecode, trace_index=False))
    for kind, runs in results.items():
        print(f"{kind} ({args.runs} fresh processes, median ms; compiles/disk loads/restored: "
              f"{[r['stats']['compiles'] for r in runs]}/{[r['stats']['disk_loads'] for r in runs]}/"
              f"{[r['stats']['restored'] for r in runs]})")
        for stage in dict.fromkeys(k for r in runs for k in r):
            if stage != "stats":
                print(f"  {stage:58s} {statistics.median(r.get(stage, 0.0) for r in runs):8.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    if args.profile:
        import pstats

        with tempfile.TemporaryDirectory() as cache:
            stats_file = os.path.join(cache, "cold.prof")
            run(args.device, cache, bytecode, profile=stats_file)
            print("cold first launch call under cProfile (cumulative):")
            pstats.Stats(stats_file).sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
