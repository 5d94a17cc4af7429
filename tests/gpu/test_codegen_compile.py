"""Render CUDA and HIP source for every test kernel and compile it with the vendor compilers.

nvcc (``-arch=sm_90``) and hipcc (``--offload-arch=gfx90a``, HIP_PLATFORM=amd, plane size 64) are
looked up on PATH; a missing compiler skips its test with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import gpu_kernels as g
from conftest import missing_toolchain
from cubepy.backends.cstyle import CUDA, HIP, OPENCL, OPENCL_SUBGROUP_OPS, render

from cubepy.ir.builder import Builder
from cubepy.ir.nodes import Buffer, Kernel, ScalarParam
from cubepy.ir.types import Type, bf16, f16, i32


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
    return g.codegen_cases(plane_dim) + [(f"half_{d.name}", _half_kernel(d)) for d in (f16, bf16)]


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
    results = _compile_all(_cases(32), CUDA, [nvcc, "-arch=sm_90", "-std=c++17"], ".cu", tmp_path)
    assert len(results) >= 30


def test_hip_source_compiles_with_hipcc(tmp_path):
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        missing_toolchain("hipcc is not on PATH (apt-get install hipcc to compile-check the HIP dialect)")
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    probe = subprocess.run([hipcc, "--version"], capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        missing_toolchain(f"hipcc does not run: {probe.stderr.strip().splitlines()[:1]}")
    results = _compile_all(_cases(64), HIP, [hipcc, "--offload-arch=gfx90a", "-std=c++17"], ".hip", tmp_path, env)
    assert len(results) >= 30


def test_cuda_source_shape():
    """What the generated CUDA looks like: restrict pointers, native vectors, real plane size."""
    cases = dict(g.codegen_cases(32))
    src = render(cases["saxpy_lines4"], CUDA).source
    assert "const float4* __restrict__ x" in src and "float4* __restrict__ y" in src
    assert "__launch_bounds__(64)" in src
    plane = render(cases["plane_ops"], HIP.with_()).source
    assert "unsigned int cb_pmask" in plane                    # 32-wide planes: 32-bit masks
    plane64 = render(dict(g.codegen_cases(64))["plane_ops"], HIP).source
    assert "unsigned long long cb_pmask" in plane64 and ", 64)" in plane64
    assert "0xffffffff" not in plane64.replace("0xffffffffffffffff", "")
    unchecked = render(cases["oob_unchecked"], CUDA)
    assert not unchecked.sites and "cb_err" not in unchecked.source


SUB_GROUPS = OPENCL.with_(subgroup_ops=OPENCL_SUBGROUP_OPS)


def test_opencl_sub_group_source_compiles_with_clang(tmp_path):
    from test_compile_all_kernels import _opencl_clang

    clang = _opencl_clang()
    cases = [(f"{label}_p{p}", k) for p in (32, 64) for label, k in g.codegen_cases(p) if "plane" in label]
    cases += [(f"arith_{label}", k) for label, k in g.codegen_cases(64) if label.startswith("arith_")]
    assert all(render(k, SUB_GROUPS).subgroups for _, k in cases[:2])
    _compile_all(cases, SUB_GROUPS, [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "spir64", "-Xclang",
                                     "-finclude-default-header", "-emit-llvm", "-Werror"], ".cl", tmp_path)


def test_opencl_plane_ops_use_the_sub_group_builtins_the_device_has():
    kernel = dict(g.codegen_cases(64))["plane_ops"]
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
        return [g.ir_of(cb.kernel(g.block_sum.__wrapped__), x, np.zeros(1, np.float32), dim=256),
                g.ir_of(cb.kernel(g.prints.__wrapped__), x, np.zeros(256, np.uint64), x.copy())]
    first = traced()
    for _ in range(1000):
        Value(None)
    second = traced()
    for dialect in (CUDA, HIP, OPENCL):
        for a, b in zip(first, second):
            assert render(a, dialect).source == render(b, dialect).source, a.name
