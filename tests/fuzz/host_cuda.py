"""Run the CUDA source of a fuzz kernel on the host: clang++ with UBSan, one unit after another.

For a mismatch the fuzzer finds on a GPU: if the same CUDA source, compiled for the host, gives
the interpreter's results and UBSan reports nothing, then the source is well-defined for those
inputs and the difference comes from the CUDA toolchain (docs/fuzzing.md, the open CUDA
mismatches). Units run one after another, so a kernel with ``sync_cube``, plane ops or atomics is
refused: their meaning needs units that run together.

    python -m tests.fuzz.host_cuda 12003669              # the seed's kernel, -O2
    python -m tests.fuzz.host_cuda 12003669 --opt -O0 --source shrunk.py

Needs clang++ 15 or later with its UBSan runtime (Debian's ``clang-15``, which ``hipcc`` brings).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

import cubepy as cb
from cubepy.ir.nodes import PLANE_OPS, walk
from cubepy.runtime.launch_checks import launch_in_bounds

from .generate import generate
from .run import Run, arguments, compare, execute, load, outputs

_SHIM = r"""
#include <algorithm>
#include <cmath>
#include <cstring>
struct dim3 { unsigned int x, y, z; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __grid_constant__
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
static inline unsigned int atomicCAS(unsigned int* p, unsigned int c, unsigned int v) {
  unsigned int o = *p; if (o == c) *p = v; return o;
}
static inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
typedef _Float16 __half;
static inline float __half2float(__half h) { return (float)h; }
static inline __half __float2half(float f) { return (__half)f; }
static inline __half __float2half_rn(float f) { return (__half)f; }
static inline __half __double2half(double d) { return (__half)d; }
using std::ceil; using std::exp; using std::fabs; using std::floor; using std::fma; using std::fmax; using std::fmin;
using std::log; using std::max; using std::min; using std::sqrt;
"""



@dataclass
class HostRun:
    """What the host made of the kernel's CUDA source: how its outputs differ from the
    interpreter's (None: they agree) and what UBSan reported (empty: nothing)."""

    diff: str | None
    undefined: list[str]


def compiler() -> str | None:
    """The clang++ to use, or None where there is none."""
    return shutil.which("clang++-15") or shutil.which("clang++")


def cuda_ir(kernel, program, args):
    """The kernel's IR as the cuda backend traces it (plane size 32, checks per launch, cube and
    run, small read-only arrays by value), made without a GPU."""
    from cubepy.backends.cuda import INLINE_ARRAY_BYTES

    device = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_launch=True, checks_per_run=True,
                       inline_array_bytes=INLINE_ARRAY_BYTES)
    return kernel.compile(*args, dim=program.cube_dim, device=device, checked=True).ir_module


def cuda_source(kernel, program, args):
    """The kernel's CUDA source (a `Rendered`) as the cuda backend renders it; a kernel whose units
    must run together is refused (ValueError)."""
    from cubepy.backends.cstyle import CUDA, render

    ir = cuda_ir(kernel, program, args)
    concurrent = sorted({op.opcode for op in walk(ir.body)
                         if op.opcode in PLANE_OPS or op.opcode in ("sync_cube", "atomic")})
    if concurrent or any(b.kind == "shared" for b in ir.buffers):
        raise ValueError(f"seed {program.seed}: its kernel uses {', '.join(concurrent) or 'shared memory'}, which "
                         "need units that run together; the host runs one unit after another")
    return render(ir, CUDA)


def run_on_host(seed: int, source: str | None = None, opt: str = "-O2",
                edit: Callable[[str], str] = lambda s: s) -> HostRun:
    """Compile the CUDA source of fuzz program ``seed`` (or of the kernel ``source``, with the
    program's signature) for the host with UBSan, run it over the program's launch and compare its
    outputs with the interpreter's. ``edit`` changes the source first (to test this harness)."""
    clang = compiler()
    if clang is None:
        raise RuntimeError("no clang++ found: install clang-15 (Debian's hipcc brings it)")
    program = generate(seed)
    kernel = load(program, source)
    reference = execute(kernel, program, cb.device("interp", plane_dim=32))
    args = arguments(program)
    rendered = cuda_source(kernel, program, args)
    ir = cuda_ir(kernel, program, args)            # the same specialization, from the kernel's cache
    text = edit(rendered.source.replace("#include <cuda_fp16.h>", "").replace('extern "C" __global__', "static"))
    head = text.index(rendered.name + "(", text.index("static void")) + len(rendered.name) + 1   # bounds or not
    params = text[head:text.index(")", head)]
    names = [p.strip().split()[-1] for p in params.split(",")]
    launcher = f"""
extern "C" void cb_host_launch({params}, int gx, int gy, int gz, int bx, int by, int bz) {{
  gridDim = dim3{{(unsigned)gx, (unsigned)gy, (unsigned)gz}};
  blockDim = dim3{{(unsigned)bx, (unsigned)by, (unsigned)bz}};
  for (int cz = 0; cz < gz; cz++) for (int cy = 0; cy < gy; cy++) for (int cx = 0; cx < gx; cx++)
  for (int tz = 0; tz < bz; tz++) for (int ty = 0; ty < by; ty++) for (int tx = 0; tx < bx; tx++) {{
    blockIdx = dim3{{(unsigned)cx, (unsigned)cy, (unsigned)cz}};
    threadIdx = dim3{{(unsigned)tx, (unsigned)ty, (unsigned)tz}};
    {rendered.name}({", ".join(names)});
  }}
}}
"""
    with tempfile.TemporaryDirectory() as folder:
        cpp, lib_path, log = (os.path.join(folder, n) for n in ("kernel.cpp", "kernel.so", "ubsan.log"))
        with open(cpp, "w") as f:
            f.write(_SHIM + text + launcher)
        runtime = _ubsan_runtime_dir(clang)
        shape = rendered.one_cube_options(rendered.one_cube(program.cube_count))    # as the CUDA backend builds
        built = subprocess.run([clang, "-std=c++17", opt, "-w", "-fPIC", "-shared", "-fsanitize=undefined",
                                "-shared-libsan", f"-Wl,-rpath,{runtime}", *shape, "-o", lib_path, cpp],
                               capture_output=True, text=True)
        if built.returncode:
            raise RuntimeError(f"seed {seed}: clang++ rejected the host build of the CUDA source:\n"
                               f"{built.stderr[:2000]}")
        lib = ctypes.CDLL(lib_path)
        record = np.zeros(64, np.int32)
        values, seen = [], [_as_kernel_sees(a) for a in args]
        for slot in rendered.args:
            arg = args[slot.param] if slot.param is not None else None
            array = getattr(arg, "array", arg)
            if slot.kind == "buffer":
                values.append(ctypes.c_void_p(array.ctypes.data))
            elif slot.kind == "shape":        # the extent as the kernel sees it: a Line array's last axis counts Lines
                shape = list(array.shape)
                shape[-1] //= getattr(arg, "width", 1)
                values.append(ctypes.c_int(shape[slot.dim]))
            elif slot.kind == "scalar":
                values.append(np.ctypeslib.as_ctypes_type(np.dtype(slot.numpy))(arg))
            elif slot.kind == "inline":
                values.append(_by_value(array, slot.nbytes))
            elif slot.kind == "launch_ok":
                values.append(ctypes.c_int(launch_in_bounds(ir, program.cube_count, program.cube_dim, seen)))
            else:
                values.append(ctypes.c_void_p(record.ctypes.data))
        values += [ctypes.c_int(v) for v in (*program.cube_count, *program.cube_dim)]
        with open(log, "w") as sink:        # UBSan writes to the process's stderr: catch it
            saved = os.dup(2)
            os.dup2(sink.fileno(), 2)
            try:
                lib.cb_host_launch(*values)
            finally:
                os.dup2(saved, 2)
                os.close(saved)
        with open(log) as f:
            undefined = [line.strip() for line in f if "runtime error" in line]
    return HostRun(compare(program, reference, Run(outputs(program, args))), undefined)


def _as_kernel_sees(arg):
    """An argument as `launch_in_bounds` reads it: an array's shape with a Line array's last axis
    counted in Lines, a scalar as it is."""
    array = getattr(arg, "array", arg)
    if not isinstance(array, np.ndarray):
        return arg
    shape = list(array.shape)
    shape[-1] //= getattr(arg, "width", 1)
    return SimpleNamespace(shape=tuple(shape))


def _by_value(array: np.ndarray, nbytes: int) -> ctypes.Structure:
    """An array passed by value: a struct of one element array of ``nbytes``, as the kernel declares it."""
    element = {4: ctypes.c_float, 8: ctypes.c_double}.get(array.itemsize) if array.dtype.kind == "f" else None
    element = element or {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}[array.itemsize]
    struct = type("ByValue", (ctypes.Structure,), {"_fields_": [("v", element * (nbytes // array.itemsize))]})()
    ctypes.memmove(ctypes.addressof(struct), array.ctypes.data, array.nbytes)
    return struct


def _ubsan_runtime_dir(clang: str) -> str:
    resource = subprocess.run([clang, "-print-resource-dir"], capture_output=True, text=True).stdout.strip()
    found = glob.glob(os.path.join(resource, "lib", "*", "libclang_rt.ubsan_standalone*.so"))
    return os.path.dirname(found[0]) if found else os.path.join(resource, "lib", "linux")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.host_cuda", description=__doc__.splitlines()[0])
    ap.add_argument("seed", type=int)
    ap.add_argument("--opt", default="-O2", help="clang++ optimization level (default -O2)")
    ap.add_argument("--source", help="a kernel file with the program's signature (a shrunk form)")
    a = ap.parse_args(argv)
    source = open(a.source).read() if a.source else None
    try:
        result = run_on_host(a.seed, source, a.opt)
    except (ValueError, RuntimeError) as e:
        print(e, file=sys.stderr)
        return 2
    print(f"seed {a.seed}, clang++ {a.opt} with UBSan: "
          f"{'the interpreter' + chr(39) + 's results' if result.diff is None else result.diff}")
    for line in result.undefined[:20]:
        print("  undefined:", line)
    return 0 if result.diff is None and not result.undefined else 1


if __name__ == "__main__":
    sys.exit(main())
