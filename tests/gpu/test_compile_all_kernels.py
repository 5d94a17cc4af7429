"""Every kernel of the conformance suite and of the examples, rendered for CUDA and HIP and
compiled with the vendor compilers: nvcc for sm_90 (plane size 32) and Debian's hipcc for gfx90a
(a wave64 part: plane size 64, and 32 for the examples, which run at the default plane size).
Kernels with plane ops are also rendered as OpenCL C on sub-group builtins (no device here has
them: PoCL's CPU device and NVIDIA's driver lack cl_khr_subgroups) and compiled by clang for SPIR.

The kernels are collected by running the conformance suite and the examples on the interpreter
with CUBEPY_DUMP_IR set, so new tests are covered without listing them here. A missing compiler
skips its test, unless CUBEPY_REQUIRE_TOOLCHAINS=1 (set by CI) makes that a failure.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from batched_compile import compile_batched
from conftest import missing_toolchain, opencl_clang
from cubepy.backends.cstyle import CUDA, HIP, OPENCL, OPENCL_SUBGROUP_OPS, render

from cubepy.ir.nodes import Buffer, copied

ROOT = Path(__file__).resolve().parents[2]


def _compiler(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        missing_toolchain(f"{name} is not on PATH")
    return path


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> list:
    folder = tmp_path_factory.mktemp("ir")
    env = dict(os.environ, CUBEPY_DUMP_IR=str(folder), CUBEPY_TEST_DEVICES="interp", CUBEPY_DEVICE="interp")
    # the examples that start process groups or clusters add no kernels worth compiling here
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance",
                          "tests/examples", "-k", "not torch_distributed and not dask_map_blocks"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    found = [pickle.loads(p.read_bytes()) for p in sorted(folder.glob("*.pkl"))]
    assert len(found) > 100, f"only {len(found)} specializations were recorded"
    return found


def _by_address(kernels: list) -> list:
    """The kernels as a device without arrays by value specializes them (the interpreter's
    `interp-cubes` runs pass small read-only arrays by value, as CUDA does)."""
    out = []
    for kernel in kernels:
        if any(getattr(p, "inline", 0) for p in kernel.params):
            kernel = copied(kernel)
            for p in kernel.params:
                if isinstance(p, Buffer):
                    p.inline = 0
        out.append(kernel)
    return out


def _compile(kernels, dialect, command, suffix, tmp_path, env=None):
    def one(item):
        index, kernel = item
        path = tmp_path / f"{kernel.name}_{index}{suffix}"
        path.write_text(render(kernel, dialect).source)
        done = subprocess.run([*command, str(path), "-o", f"{path}.o"], capture_output=True, text=True,
                              env=env, timeout=600)
        return path.name, done.returncode, done.stderr[-2000:]

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(one, enumerate(kernels)))
    failed = [f"{name}:\n{err}" for name, rc, err in results if rc != 0]
    assert not failed, f"{len(failed)} of {len(results)} failed:\n\n" + "\n\n".join(failed[:5])


def test_every_conformance_and_example_kernel_compiles_as_cuda_for_sm90(kernels, tmp_path):
    nvcc = _compiler("nvcc")
    chosen = [k for k in kernels if k.plane_dim == 32]
    # device code only (-cubin: nvcc's front end and ptxas, no host compile: a third of the time)
    failed = compile_batched(chosen, CUDA, [nvcc, "-arch=sm_90", "-std=c++17", "-w", "-cubin"], ".cu", tmp_path)
    assert not failed, f"{len(failed)} of {len(chosen)} failed:\n\n" + "\n\n".join(failed[:5])


@pytest.mark.parametrize("answer", [1, 0])
def test_kernels_with_a_launch_test_compile_in_the_cuda_backends_two_builds(kernels, tmp_path, answer):
    """The CUDA backend builds a kernel with a launch test with -DCB_LAUNCH_OK=1 and =0 (the
    build a proven launch runs, and the one with the checks): both compile for every such kernel."""
    nvcc = _compiler("nvcc")
    chosen = [k for k in kernels if k.plane_dim == 32 and k.launch_test is not None]
    assert len(chosen) >= 20, f"only {len(chosen)} kernels have a launch test"
    failed = compile_batched(chosen, CUDA, [nvcc, "-arch=sm_90", "-std=c++17", "-w", "-cubin",
                                            f"-DCB_LAUNCH_OK={answer}"], ".cu", tmp_path)
    assert not failed, f"{len(failed)} of {len(chosen)} failed:\n\n" + "\n\n".join(failed[:5])


def test_every_conformance_and_example_kernel_compiles_as_hip_for_gfx90a(kernels, tmp_path):
    hipcc = _compiler("hipcc")
    wave64 = [k for k in kernels if k.plane_dim == 64]
    names64 = {k.name for k in wave64}
    rest = [k for k in kernels if k.plane_dim == 32 and k.name not in names64]   # the examples
    env = dict(os.environ, HIP_PLATFORM="amd")
    chosen = _by_address(wave64 + rest)
    failed = compile_batched(chosen, HIP, [hipcc, "--offload-arch=gfx90a", "-w", "--cuda-device-only", "-c"], ".hip",
                             tmp_path, env)
    assert not failed, f"{len(failed)} of {len(chosen)} failed:\n\n" + "\n\n".join(failed[:5])


def test_plane_op_kernels_compile_as_opencl_on_sub_group_builtins(kernels, tmp_path):
    clang = opencl_clang()
    dialect = OPENCL.with_(subgroup_ops=OPENCL_SUBGROUP_OPS)
    chosen = [k for k in _by_address(kernels) if k.plane_dim in (32, 64) and render(k, dialect).subgroups]
    assert len(chosen) >= 20, f"only {len(chosen)} kernels use sub-group builtins"
    _compile(chosen, dialect, [clang, "-x", "cl", "-cl-std=CL2.0", "-target", "spir64", "-Xclang",
                               "-finclude-default-header", "-emit-llvm", "-Werror", "-c"], ".cl", tmp_path)
