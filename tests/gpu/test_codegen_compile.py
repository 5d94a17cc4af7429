"""Render CUDA and HIP source for the shared test kernels (tests/kernels.py) and a few below, and compile
it with the vendor compilers.

nvcc (``-arch=sm_90``) and hipcc (``--offload-arch=gfx90a``, HIP_PLATFORM=amd, plane size 64) are
looked up on PATH; a missing compiler skips its test with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from batched_compile import compile_batched
from conftest import missing_toolchain, opencl_clang
from cubepy.backends.cstyle import CUDA, HIP, OPENCL, OPENCL_SUBGROUP_OPS, render

import cubepy as cb
from cubepy import Array, Mut, f32, u64
from cubepy.ir.builder import Builder
from cubepy.ir.nodes import Buffer, Kernel, ScalarParam
from cubepy.ir.types import Type, bf16, f16, i32
from tests.kernels import arith, atomics, block_sum, copy_any, loops, oob, plane_all_ops, saxpy, transpose

ALL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64")


def ir_of(kfn, *args, dim=(64, 1, 1), plane_dim=32, checked=True, shape_generic=False):
    """The IR kernel (bounds checks lowered) of one specialization, via the interpreter's device:
    compiled for its CubeDim, or (``shape_generic``) for every CubeDim where the kernel allows."""
    dev = cb.device("interp", plane_dim=plane_dim, shape_generic=shape_generic)
    return kfn.compile(*args, dim=dim, device=dev, checked=checked).ir_module


@cb.kernel
def prints(x: Array[f32], s: Array[u64], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i]
        print("unit", i, f"x={x[i]:.3f} s={s[i]}", x[i] > 0.5)


def make_arrays(dtype: str, n: int = 64, seed: int = 0):
    """Fixed operands of ``dtype`` for a specialization (only their types and shapes matter here)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    if dt.kind == "f":
        a = rng.uniform(-8, 8, n).astype(dt)
        b = rng.uniform(-8, 8, n).astype(dt)
        b[b == 0] = 1
        return a, b
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    a = rng.integers(lo, hi, n, dtype=dt)
    b = rng.integers(lo, hi, n, dtype=dt)
    b[:4] = 0  # division by zero gives 0
    return a, b


def codegen_cases(plane_dim: int = 32):
    """(label, IR kernel) for every kernel above (dtype variants of ``arith`` and ``copy_any``)."""
    n = 256
    x = np.ones(n, np.float32)
    cases = [
        ("saxpy", ir_of(saxpy, x, x.copy(), 2.0, dim=256, plane_dim=plane_dim)),
        ("saxpy_lines4", ir_of(saxpy, cb.lines(x, 4), cb.lines(x.copy(), 4), 2.0, dim=64, plane_dim=plane_dim)),
        ("saxpy_lines8", ir_of(saxpy, cb.lines(x, 8), cb.lines(x.copy(), 8), 2.0, dim=32, plane_dim=plane_dim)),
        ("block_sum", ir_of(block_sum, x, np.zeros(1, np.float32), dim=256, plane_dim=plane_dim)),
        ("plane_ops", ir_of(plane_all_ops, x, np.ones(n, np.int32), np.zeros((n, 11), np.float32),
                            np.zeros((n, 9), np.int32), np.zeros(n, np.uint64), dim=96, plane_dim=plane_dim)),
        ("atomics", ir_of(atomics, np.ones(n, np.int32), np.zeros(8, np.int32), np.zeros(3, np.float32),
                          np.zeros(1, np.uint32), dim=64, plane_dim=plane_dim)),
        ("loops", ir_of(loops, np.ones(n, np.int32), np.zeros(n, np.int32), dim=64, plane_dim=plane_dim)),
        ("transpose", ir_of(transpose, np.ones((8, 16), np.float32), np.zeros((16, 8), np.float32), dim=(16, 8),
                            plane_dim=plane_dim)),
        ("oob", ir_of(oob, x, x.copy(), dim=64, plane_dim=plane_dim)),
        ("oob_unchecked", ir_of(oob, x, x.copy(), dim=64, plane_dim=plane_dim, checked=False)),
        ("prints", ir_of(prints, x, np.zeros(n, np.uint64), x.copy(), dim=64, plane_dim=plane_dim)),
        ("saxpy_generic", ir_of(saxpy, x, x.copy(), 2.0, dim=256, plane_dim=plane_dim, shape_generic=True)),
        ("transpose_generic", ir_of(transpose, np.ones((8, 16), np.float32), np.zeros((16, 8), np.float32),
                                    dim=(16, 8), plane_dim=plane_dim, shape_generic=True)),
        ("atomics_generic", ir_of(atomics, np.ones(n, np.int32), np.zeros(8, np.int32), np.zeros(3, np.float32),
                                  np.zeros(1, np.uint32), dim=64, plane_dim=plane_dim, shape_generic=True)),
    ]
    for dt in ALL_DTYPES:
        a, b = make_arrays(dt, 16)
        if dt != "bool":
            cases.append((f"arith_{dt}", ir_of(arith, a, b, np.zeros((16, 8), dt), 16, dim=16, plane_dim=plane_dim)))
        cases.append((f"copy_{dt}", ir_of(copy_any, a, np.zeros(16, dt), dim=16, plane_dim=plane_dim)))
        if dt not in ("bool", "int64", "uint64", "float64"):
            w = 16 // np.dtype(dt).itemsize
            a = np.zeros(4 * w, dt)
            cases.append((f"copy_lines_{dt}", ir_of(copy_any, cb.lines(a, w), cb.lines(a.copy(), w), dim=4,
                                                    plane_dim=plane_dim)))
    return cases




def _half_kernel(dtype) -> Kernel:
    """A hand-built kernel on f16/bf16 (the interpreter, hence tracing tests, has no bf16)."""
    k = Kernel(f"half_{dtype.name}", cube_dim=(64, 1, 1), plane_dim=32)
    b = Builder(k)
    x = Buffer("x", "global", Type(dtype), 1, False, param_index=0)
    y = Buffer("y", "global", Type(dtype), 1, True, param_index=1)
    k.params += [x, y, ScalarParam("a", Type(dtype), 2)]
    a = b.op("param", (), Type(dtype), index=2, name="a")
    i = b.op("builtin", (), Type(i32), name="unit_pos_x")
    v = b.op("load", (x, i), Type(dtype))
    s = b.op("fma", (a, v, v), Type(dtype))
    s = b.op("floordiv", (s, a), Type(dtype))
    s = b.op("plane_sum", (s,), Type(dtype))
    s = b.op("max", (s, b.op("sqrt", (v,), Type(dtype))), Type(dtype))
    b.op("store", (y, i, s))
    b.op("atomic", (y, b.const(0, Type(i32)), s), Type(dtype), op="add")
    b.op("atomic", (y, b.const(1, Type(i32)), s), Type(dtype), op="max")
    return k


def _cases(plane_dim):
    return codegen_cases(plane_dim) + [(f"half_{d.name}", _half_kernel(d)) for d in (f16, bf16)]


def _compile_all(cases, dialect, cmd, suffix, tmp_path, env=None):
    def one(case):
        label, kernel = case
        src = render(kernel, dialect).source
        path = tmp_path / f"{label}{suffix}"
        path.write_text(src)
        p = subprocess.run([*cmd, "-c", str(path), "-o", str(path) + ".o"], capture_output=True, text=True,
                           env=env, timeout=600)
        return label, p.returncode, p.stderr[-3000:]

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        results = list(pool.map(one, cases))
    failed = [f"{label}:\n{err}" for label, rc, err in results if rc != 0]
    assert not failed, "\n\n".join(failed)
    return results


def test_cuda_source_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        missing_toolchain("nvcc is not on PATH (install the CUDA toolkit to compile-check the CUDA dialect)")
    cases = _cases(32)
    failed = compile_batched([k for _, k in cases], CUDA, [nvcc, "-arch=sm_90", "-std=c++17", "-c"], ".cu", tmp_path)
    assert not failed and len(cases) >= 30, "\n\n".join(failed)


def test_hip_source_compiles_with_hipcc(tmp_path):
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        missing_toolchain("hipcc is not on PATH (apt-get install hipcc to compile-check the HIP dialect)")
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    probe = subprocess.run([hipcc, "--version"], capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        missing_toolchain(f"hipcc does not run: {probe.stderr.strip().splitlines()[:1]}")
    cases = _cases(64)
    failed = compile_batched([k for _, k in cases], HIP, [hipcc, "--offload-arch=gfx90a", "-std=c++17", "-c"], ".hip",
                             tmp_path, env)
    assert not failed and len(cases) >= 30, "\n\n".join(failed)


def test_cuda_source_shape():
    """What the generated CUDA looks like: restrict pointers, native vectors, real plane size."""
    cases = dict(codegen_cases(32))
    src = render(cases["saxpy_lines4"], CUDA).source
    assert "const float4* __restrict__ x" in src and "float4* __restrict__ y" in src
    assert "__launch_bounds__(64)" in src
    plane = render(cases["plane_ops"], HIP.with_()).source
    assert "unsigned int cb_pmask" in plane                    # 32-wide planes: 32-bit masks
    plane64 = render(dict(codegen_cases(64))["plane_ops"], HIP).source
    assert "unsigned long long cb_pmask" in plane64 and ", 64)" in plane64
    assert "0xffffffff" not in plane64.replace("0xffffffffffffffff", "")
    unchecked = render(cases["oob_unchecked"], CUDA)
    assert not unchecked.sites and "cb_err" not in unchecked.source
    for name in ("saxpy_generic", "transpose_generic", "atomics_generic"):     # read the extents at run time
        generic = render(cases[name], CUDA).source
        assert cases[name].shape_generic and "__launch_bounds__(1024)" in generic and "blockDim.x" in generic, name
        opencl = render(cases[name], OPENCL).source
        assert "reqd_work_group_size" not in opencl and "get_local_size(0)" in opencl, name


SUB_GROUPS = OPENCL.with_(subgroup_ops=OPENCL_SUBGROUP_OPS)


def test_opencl_sub_group_source_compiles_with_clang(tmp_path):

    clang = opencl_clang()
    cases = [(f"{label}_p{p}", k) for p in (32, 64) for label, k in codegen_cases(p) if "plane" in label]
    cases += [(f"arith_{label}", k) for label, k in codegen_cases(64) if label.startswith("arith_")]
    assert all(render(k, SUB_GROUPS).subgroups for _, k in cases[:2])
    _compile_all(cases, SUB_GROUPS, [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "spir64", "-Xclang",
                                     "-finclude-default-header", "-emit-llvm", "-Werror"], ".cl", tmp_path)


def test_opencl_plane_ops_use_the_sub_group_builtins_the_device_has():
    kernel = dict(codegen_cases(64))["plane_ops"]
    emulated = render(kernel, OPENCL)
    assert not emulated.subgroups and "sub_group" not in emulated.source
    native = render(kernel, SUB_GROUPS).source
    assert "sub_group_reduce_add((float)x)" in native and "sub_group_scan_exclusive_add" in native
    assert "sub_group_ballot((int)x)" in native and "sub_group_shuffle((float)x" in native
    assert "cb_plane_prod_f32(" in native                      # no builtin product: emulated
    assert "cl_khr_subgroups : enable" in native
    only_core = OPENCL.with_(subgroup_ops={op: e for op, e in OPENCL_SUBGROUP_OPS.items()
                                           if e[0] == "cl_khr_subgroups"})
    partial = render(kernel, only_core).source
    assert "sub_group_reduce_add" in partial and "sub_group_shuffle" not in partial
    assert "cb_plane_shuffle_f32(" in partial and "cb_plane_ballot_bool_(" in partial


def test_equal_kernels_render_equal_source_whatever_was_traced_before():
    # the disk cache is keyed by the source: an autotune worker or a fresh process, whose value
    # counters stand elsewhere, must render the text this process did
    import numpy as np

    import cubepy as cb
    from cubepy.ir.nodes import Value

    x = np.ones(256, np.float32)

    def traced():      # a new KernelFunction each time: traced again, not found in its cache
        return [ir_of(cb.kernel(block_sum.__wrapped__), x, np.zeros(1, np.float32), dim=256),
                ir_of(cb.kernel(prints.__wrapped__), x, np.zeros(256, np.uint64), x.copy())]
    first = traced()
    for _ in range(1000):
        Value(None)
    second = traced()
    for dialect in (CUDA, HIP, OPENCL):
        for a, b in zip(first, second):
            assert render(a, dialect).source == render(b, dialect).source, a.name
