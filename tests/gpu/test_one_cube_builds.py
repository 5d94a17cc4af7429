"""Builds for launches of one cube along y or z (`Rendered.count_axes`, docs/design.md,
"Builds per launch shape"): the source reads the cube position and count along those axes
through macros, a build with ``-DCB_ONE_CUBE_Y=1`` reads them as 0 and 1, and the backend
launches each count with the build of its shape. Here without a GPU: what is rendered, the PTX
nvcc makes of each build, the same source run on the host (g++, CUDA's builtins emulated) for
launches of every shape against the interpreter; the registers the HIP builds ask for (hipcc).
Which builds an executable makes when: tests/runtime/test_builds_per_launch.py (on PoCL in CI).
On a GPU: tests/gpu/test_cuda_device.py."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from conftest import missing_toolchain
from cubepy.backends.cstyle import CUDA, HIP, OPENCL, render

import cubepy as cb
from cubepy import Array, Mut, i32
from tests.kernels import linear_positions as positions

INTERP = cb.device("interp", plane_dim=32, shape_generic=False)


@cb.kernel
def rows(out: Mut[Array[i32]]):
    i = cb.CUBE_POS_Y * cb.CUBE_COUNT_X * cb.CUBE_DIM_X + cb.ABSOLUTE_POS_X
    if i < len(out):
        out[i] = cb.CUBE_POS_Y * 1000 + cb.ABSOLUTE_POS_X


@cb.kernel
def units_only(out: Mut[Array[i32]]):
    i = cb.UNIT_POS_X + cb.CUBE_POS_X * cb.CUBE_DIM_X
    if i < len(out):
        out[i] = i


def _rendered(kernel, dialect=CUDA, dim=(8, 1, 1)):
    out = np.zeros(64, np.int32)
    return render(kernel.compile(out, dim=dim, device=INTERP, checked=False).ir_module, dialect)


def test_the_axes_read_only_for_linear_positions_are_built_first_for_one_cube():
    linear = _rendered(positions)
    assert linear.count_axes == ("y", "z") and linear.first_one_cube == (True, True)
    assert "#define CB_CUBE_POS_Y 0" in linear.source and "CB_CUBE_COUNT_Z" in linear.source
    named = _rendered(rows)
    assert named.count_axes == ("y",) and named.first_one_cube == (False,)       # CUBE_POS_Y named: 2-D launches
    plain = _rendered(units_only)
    assert plain.count_axes == () and "CB_ONE_CUBE" not in plain.source
    for dialect in (OPENCL, HIP):            # every C-style backend builds per shape (`cstyle.builds`)
        other = _rendered(positions, dialect)
        assert other.count_axes == ("y", "z") and other.first_one_cube == (True, True)
        assert "#define CB_CUBE_POS_Y 0" in other.source


def test_a_launch_shape_names_its_build():
    r = _rendered(positions)
    assert r.one_cube((40, 1, 1)) == (True, True) and r.one_cube((4, 2, 1)) == (False, True)
    assert r.one_cube_options((True, True)) == ("-DCB_ONE_CUBE_Y=1", "-DCB_ONE_CUBE_Z=1")
    assert r.one_cube_options((False, True)) == ("-DCB_ONE_CUBE_Z=1",)


def _ptx(tmp_path, source: str, defines: tuple) -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        missing_toolchain("nvcc is not on PATH")
    cu = tmp_path / "k.cu"
    cu.write_text(source)
    subprocess.run([nvcc, "-ptx", "-arch=sm_90", "-std=c++17", *defines, "-o", str(tmp_path / "k.ptx"), str(cu)],
                   check=True, capture_output=True, timeout=300)
    return (tmp_path / "k.ptx").read_text()


def test_the_one_cube_build_reads_the_position_from_x_alone(tmp_path):
    """What the build is for: ENERGY's shortest kernel ran 3.7% slower at 32x on an H100 with its
    index from the 3-D position than from blockIdx.x alone (docs/benchmarks.md, twenty-ninth
    session)."""
    r = _rendered(positions)
    one = _ptx(tmp_path, r.source, r.one_cube_options((True, True)))
    general = _ptx(tmp_path, r.source, ())
    assert not re.search(r"%n?ctaid\.[yz]", one), one
    assert re.search(r"%ctaid\.y", general) and re.search(r"%ctaid\.z", general)
    assert "%ctaid.z" not in _ptx(tmp_path, r.source, r.one_cube_options((False, True)))


def test_the_hip_one_cube_build_asks_for_no_y_or_z_workgroup_id(tmp_path):
    """On AMD GPUs the workgroup id along y and z comes in registers the kernel asks for: the
    one-cube build (hipcc for gfx90a) asks for neither, the general build for both."""
    hipcc = shutil.which("hipcc")
    if hipcc is None:
        missing_toolchain("hipcc is not on PATH (apt-get install hipcc)")
    r = _rendered(positions, HIP)
    src = tmp_path / "k.hip"
    src.write_text(r.source)

    def asked(defines: tuple) -> set[str]:
        asm = tmp_path / "k.s"
        subprocess.run([hipcc, "--offload-arch=gfx90a", "-std=c++17", "--cuda-device-only", "-S", "-O3", *defines,
                        "-o", str(asm), str(src)], check=True, capture_output=True, timeout=300,
                       env={**os.environ, "HIP_PLATFORM": "amd"})
        return set(re.findall(r"amdhsa_system_sgpr_workgroup_id_([yz]) 1", asm.read_text()))

    assert asked(r.one_cube_options((True, True))) == set()
    assert asked(r.one_cube_options((False, True))) == {"y"}
    assert asked(()) == {"y", "z"}


_SHIM = r"""
struct dim3 { unsigned int x, y, z; };
static dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
"""


def _run_on_host(tmp_path, r, defines: tuple, count: tuple, dim: tuple, n: int) -> np.ndarray:
    """The CUDA source compiled as C++ (g++) with ``defines``, every unit of the launch in turn."""
    gxx = shutil.which("g++")
    if gxx is None:
        missing_toolchain("g++ is not on PATH")
    source = r.source.replace('extern "C" __global__', "static")
    launcher = f"""
extern "C" void launch(int* out, int n, int gx, int gy, int gz, int bx, int by, int bz) {{
  gridDim = dim3{{(unsigned)gx, (unsigned)gy, (unsigned)gz}};
  blockDim = dim3{{(unsigned)bx, (unsigned)by, (unsigned)bz}};
  for (unsigned cz = 0; cz < gz; cz++) for (unsigned cy = 0; cy < gy; cy++) for (unsigned cx = 0; cx < gx; cx++)
  for (unsigned tz = 0; tz < bz; tz++) for (unsigned ty = 0; ty < by; ty++) for (unsigned tx = 0; tx < bx; tx++) {{
    blockIdx = dim3{{cx, cy, cz}}; threadIdx = dim3{{tx, ty, tz}};
    {r.name}(out, n);
  }}
}}"""
    tag = "_".join(map(str, (*count, len(defines))))
    cpp, lib = tmp_path / f"k{tag}.cpp", tmp_path / f"k{tag}.so"
    cpp.write_text(_SHIM + source + launcher)
    subprocess.run([gxx, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", *defines, "-o", str(lib), str(cpp)],
                   check=True, capture_output=True, timeout=300)
    out = np.full(n, -7, np.int32)             # poison: a unit that writes nothing shows
    ctypes.CDLL(str(lib)).launch(out.ctypes.data_as(ctypes.c_void_p), n, *count, *dim)
    return out


@pytest.mark.parametrize("count", [(6, 1, 1), (3, 2, 1), (2, 1, 3), (1, 3, 2)])
def test_each_build_runs_its_shape_as_the_interpreter_does(tmp_path, count):
    dim, n = (8, 1, 1), 48
    r = _rendered(positions, dim=dim)
    want = np.full(n, -7, np.int32)
    positions.launch(count, dim, want, device=INTERP)
    np.testing.assert_array_equal(_run_on_host(tmp_path, r, r.one_cube_options(r.one_cube(count)), count, dim, n),
                                  want)
    np.testing.assert_array_equal(_run_on_host(tmp_path, r, (), count, dim, n), want)     # the general build
    if r.one_cube(count) != (True, True):      # a 1-D build on a launch of more cubes is wrong: the test can fail
        wrong = _run_on_host(tmp_path, r, r.one_cube_options((True, True)), count, dim, n)
        assert not np.array_equal(wrong, want)
