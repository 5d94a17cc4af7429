"""cubepy's own CUDA for every launch of every port (plain and tuned, checked and unchecked) renders
and compiles with nvcc for sm_90: the GPU run's cubepy side, checked without a GPU."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from cubepy.backends.cstyle import CUDA, render
from cubepy.bench.apps import APPS

import cubepy as cb


def test_every_ports_cuda_source_compiles_for_sm_90(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    dev = cb.device("interp")
    sources = {}
    for app in APPS.values():
        problem = app.set_up(1500)
        arrays = problem.copy_arrays()
        for variant in ("plain", "tuned"):
            for checked in (True, False):
                for launch in app.port(variant, problem, arrays, dev, checked).launches:
                    compiled = launch.kernel.compile(*launch.args, dim=launch.dim, device=dev, checked=checked)
                    mode = "checked" if checked else "unchecked"
                    sources[f"{launch.kernel.__name__}_{mode}"] = render(compiled.ir_module, CUDA).source
    assert len(sources) == 2 * 2 * 13

    def compile_one(item):
        name, source = item
        path = tmp_path / f"{name}.cu"
        path.write_text(source)
        done = subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", f"{path}.cubin", str(path)], capture_output=True,
                              text=True, timeout=300)
        return name, done.returncode, done.stderr[-2000:]

    with ThreadPoolExecutor(max_workers=2) as pool:
        failed = [f"{name}: {err}" for name, rc, err in pool.map(compile_one, sources.items()) if rc]
    assert not failed, "\n".join(failed)
