"""cubepy's own CUDA and HIP for every launch of every port (plain and tuned, checked and
unchecked) renders and compiles: nvcc for sm_90 and Debian's hipcc for gfx90a, with the IR
specialized as those backends specialize it (plane size 32 resp. 64, checks once per cube). The
GPU run's cubepy side, checked without a GPU."""

from __future__ import annotations

import os
import shutil

import pytest
from cubepy.backends.cstyle import CUDA, HIP
from cubepy.bench.apps import APPS

import cubepy as cb
from tests.gpu.batched_compile import compile_batched
from tests.gpu.conftest import missing_toolchain

TARGETS = {
    "cuda-sm90": (CUDA, 32, "nvcc", ["-arch=sm_90", "-cubin"], ".cu", {}),
    "hip-gfx90a": (HIP, 64, "hipcc", ["--offload-arch=gfx90a", "-w", "-c"], ".hip", {"HIP_PLATFORM": "amd"}),
}


@pytest.mark.parametrize("target", TARGETS)
def test_every_ports_source_compiles(target, tmp_path):
    dialect, plane, compiler, flags, suffix, env = TARGETS[target]
    tool = shutil.which(compiler)
    if tool is None:
        missing_toolchain(f"{compiler} is not on PATH")
    dev = cb.device("interp", plane_dim=plane, checks_per_cube=True, checks_per_launch=True, checks_per_run=True)
    sources, versioned = {}, 0
    for app in APPS.values():
        problem = app.set_up(1500)
        arrays = problem.copy_arrays()
        for variant in ("plain", "tuned"):
            for checked in (True, False):
                for launch in app.port(variant, problem, arrays, dev, checked).launches:
                    compiled = launch.kernel.compile(*launch.args, dim=launch.dim, device=dev, checked=checked)
                    versioned += "cube_checks" in str(compiled.ir)
                    mode = "checked" if checked else "unchecked"
                    sources[f"{launch.kernel.__name__}_{mode}"] = compiled.ir_module
    assert len(sources) == 2 * 2 * 13
    assert versioned >= 11             # the plain ports of every kernel but the data-dependent two

    failed = compile_batched(list(sources.values()), dialect, [tool, *flags], suffix, tmp_path,
                             env={**os.environ, **env}, batch=13)
    assert not failed, "\n".join(failed)
