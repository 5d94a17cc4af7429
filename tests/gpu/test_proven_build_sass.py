"""On CUDA a checked launch that the host proves in bounds runs the kernel's proven build
(``-DCB_LAUNCH_OK=1``, docs/design.md, "checks per launch"): its machine code must be the
unchecked kernel's, so that the checks cost nothing there. VOL3D's proven build, its index ops
rendered as signed C arithmetic, was other SASS (its corner addresses formed from one base) and
ran 3% slower than the unchecked kernel at 32x on an H100 (docs/benchmarks.md, twenty-seventh
session). Compiled with nvcc for sm_90 and listed with nvdisasm (the ``nvidia-cuda-nvdisasm``
wheel, or on PATH); no GPU needed.
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import missing_toolchain
from cubepy.backends.cstyle import CUDA, render
from cubepy.backends.cstyle.flags import CUDA_FP_FLAGS

import cubepy as cb

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:       # the suite's VOL3D (benchmarks/rajaperf); tests/gpu is not a package
    sys.path.insert(0, str(ROOT))


def _nvdisasm() -> str:
    wheel = sorted(p for site in sys.path for p in Path(site or ".").glob("nvidia/cu*/bin/nvdisasm"))
    found = shutil.which("nvdisasm") or (str(wheel[-1]) if wheel else None)
    if found is None:
        missing_toolchain("nvdisasm is not on PATH (pip install nvidia-cuda-nvdisasm)")
    return found


def _sass(source: str, folder: Path, name: str, defines: tuple = ()) -> list[str]:
    """The kernel's SASS without addresses, encodings and the constant-bank offsets of its
    parameters (the proven build has two more: the report's buffer and the host's answer)."""
    cu, cubin = folder / f"{name}.cu", folder / f"{name}.cubin"
    cu.write_text(source)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-std=c++17", "-w", *CUDA_FP_FLAGS[None], *defines,
                    str(cu), "-o", str(cubin)], check=True, timeout=300)
    listing = subprocess.run([_nvdisasm(), "-c", str(cubin)], check=True, capture_output=True, text=True,
                             timeout=120).stdout
    lines = [re.sub(r"/\*[0-9a-f]+\*/|;.*", "", line).strip() for line in listing.splitlines()
             if re.match(r"\s*/\*[0-9a-f]{4}\*/", line)]
    return [re.sub(r"c\[0x0\]\[0x[0-9a-f]+\]", "c[param]", line) for line in lines]


@pytest.mark.parametrize("size", [1_000_000, 32_000_000])
def test_a_proven_build_is_the_unchecked_kernels_sass(tmp_path, size):
    if shutil.which("nvcc") is None:
        missing_toolchain("nvcc is not on PATH")
    from cubepy.backends.cuda import INLINE_ARRAY_BYTES, CudaBackend

    from benchmarks.rajaperf.apps.vol3d import Vol3D
    from cubepy.runtime.launch_checks import LaunchCheck

    device = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_launch=True, checks_per_run=True,
                       inline_array_bytes=INLINE_ARRAY_BYTES)
    app = Vol3D()
    problem = app.set_up(size)
    launch = app.plain(problem, problem.copy_arrays(), device, checked=True).launches[0]
    sass = {}
    for checked in (False, True):
        compiled = launch.kernel.compile(*launch.args, dim=launch.dim, count=launch.count, device=device,
                                         checked=checked)
        kernel = compiled.ir_module
        if kernel.units_bound is not None:      # shape-generic: CUDA's bound for these units
            kernel = dataclasses.replace(kernel, units_bound=CudaBackend().units_bound(math.prod(compiled.cube_dim)))
        rendered = render(kernel, CUDA)
        count = (launch.count, 1, 1) if isinstance(launch.count, int) else launch.count
        defines = rendered.one_cube_options(rendered.one_cube(count))     # the build for a 1-D launch
        assert len(defines) == 2
        if checked:
            assert kernel.launch_test is not None
            assert LaunchCheck(kernel).evaluate(count, (launch.dim, 1, 1), list(launch.args))
            defines = (*defines, "-DCB_LAUNCH_OK=1")
        sass[checked] = _sass(rendered.source, tmp_path, f"vol3d_{checked}", defines)
    assert len(sass[False]) > 50
    assert sass[True] == sass[False]
