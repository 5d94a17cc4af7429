"""The peers compute what the reference does: C/OpenMP and numba on the CPU; the hand-written CUDA
through its CPU emulation and nvcc; numba-cuda in numba's simulator; Triton compiled for sm_90."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from cubepy.bench.apps import APPS
from cubepy.bench.peers import base_cuda
from cubepy.bench.runner import compare

TINY = 1500


def _check(name: str, run, rtol: float = 1e-12) -> None:
    app = APPS[name]
    problem = app.set_up(TINY)
    expected = problem.copy_arrays()
    app.poison(expected)
    app.reference(problem, expected)
    arrays = problem.copy_arrays()
    app.poison(arrays)
    run(app, problem, arrays)
    for k in app.written_arrays():
        ok, worst = compare(arrays[k], expected[k], rtol)
        assert ok, f"{name} {k}: {worst}"


@pytest.mark.parametrize("name", list(APPS))
def test_c_openmp_peer(name):
    from cubepy.bench.peers.openmp import OpenMP
    peer = OpenMP()
    if peer.unavailable():
        pytest.skip(peer.unavailable())
    _check(name, lambda app, problem, a: peer.bind(name, problem, a)())


def test_numba_peer():
    from cubepy.bench.peers.numba_cpu import NumbaParallel
    peer = NumbaParallel()
    if peer.unavailable():
        pytest.skip(peer.unavailable())
    for name in APPS:
        _check(name, lambda app, problem, a, name=name: peer.bind(name, problem, a)())


@pytest.mark.parametrize("name", list(APPS))
def test_hand_written_cuda_launches_compute_the_reference(name, tmp_path_factory):
    """base_cuda.cu compiled as C++ with CUDA's builtins emulated, run with the launches (grids,
    blocks, shifted pointers, scalars) the GPU run uses."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH")
    folder = tmp_path_factory.getbasetemp() / "cuda-emulation"
    if not (folder / "base_cuda_emulated.so").exists():
        folder.mkdir(exist_ok=True)
        base_cuda.Emulator(folder)
    emulator = base_cuda.Emulator.__new__(base_cuda.Emulator)
    import ctypes
    emulator.lib = ctypes.CDLL(str(folder / "base_cuda_emulated.so"))
    _check(name, lambda app, problem, a: emulator.run(name, problem, a), rtol=0.0)


def test_hand_written_cuda_compiles_for_sm_90(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    out = tmp_path / "base_cuda.cubin"
    done = subprocess.run([nvcc, "-arch=sm_90", "-cubin", "-o", str(out), str(base_cuda.SOURCE)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0


SIMULATED = textwrap.dedent("""
    import numpy as np
    from cubepy.bench.apps import APPS
    from cubepy.bench.peers import numba_cuda
    from cubepy.bench.runner import compare
    kernels = numba_cuda.kernels()
    for app in APPS.values():
        problem = app.set_up(700)
        expected = problem.copy_arrays(); app.poison(expected); app.reference(problem, expected)
        arrays = problem.copy_arrays(); app.poison(arrays)
        numba_cuda.run_plan(numba_cuda.plan(app.name, problem, arrays, kernels))
        for k in app.written_arrays():
            ok, worst = compare(arrays[k], expected[k], 1e-12)
            assert ok, (app.name, k, worst)
    print("simulated ok")
""")


def test_numba_cuda_peer_in_the_simulator():
    pytest.importorskip("numba")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    done = subprocess.run([sys.executable, "-c", SIMULATED], capture_output=True, text=True, env=env, timeout=300)
    if "No module named 'numba.cuda'" in done.stderr or "CUDA simulator" in done.stderr and done.returncode:
        pytest.skip(f"numba's CUDA simulator is not available: {done.stderr[-300:]}")
    assert done.returncode == 0 and "simulated ok" in done.stdout, done.stderr[-3000:]


INTERPRETED = textwrap.dedent("""
    import torch
    from cubepy.bench.apps import APPS
    from cubepy.bench.peers import triton_peers
    from cubepy.bench.runner import compare
    kernels = triton_peers.kernels()
    for app in APPS.values():
        problem = app.set_up(1500)
        expected = problem.copy_arrays(); app.poison(expected); app.reference(problem, expected)
        arrays = problem.copy_arrays(); app.poison(arrays)
        tensors = {name: torch.from_numpy(value) for name, value in arrays.items()}
        for kernel, grid, args, constexprs in triton_peers.plan(app.name, problem, tensors, kernels):
            kernel[grid](*args, **constexprs)
        for k in app.written_arrays():
            ok, worst = compare(arrays[k], expected[k], 1e-12)
            assert ok, (app.name, k, worst)
    print("interpreted ok")
""")


def test_triton_peer_in_tritons_interpreter():
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", INTERPRETED], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0 and "interpreted ok" in done.stdout, done.stderr[-3000:]


def _triton_signature(fn, args, constexprs) -> dict:
    sig = {}
    for param, value in zip(fn.params, args):
        if param.annotation_type:
            sig[param.name] = param.annotation_type
        elif isinstance(value, np.ndarray):
            sig[param.name] = {"float64": "*fp64", "int64": "*i64"}[str(value.dtype)]
        elif isinstance(value, float):
            sig[param.name] = "fp32"
        else:
            sig[param.name] = "i32" if -2**31 <= value < 2**31 else "i64"
    return {**sig, **{name: "constexpr" for name in constexprs}}


def test_triton_peer_compiles_for_sm_90_with_double_scalars():
    triton = pytest.importorskip("triton")
    from cubepy.bench.peers import triton_peers
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    kernels = triton_peers.kernels()
    for app in APPS.values():
        problem = app.set_up(TINY)
        for fn, _grid, args, constexprs in triton_peers.plan(app.name, problem, problem.arrays, kernels):
            signature = _triton_signature(fn, args, constexprs)
            assert "fp32" not in signature.values(), (app.name, signature)
            compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                                      target=GPUTarget("cuda", 90, 32))
            assert ".f32" not in compiled.asm["ptx"], app.name


def test_the_isolation_builds_of_base_cuda_are_asked_for_by_name_only():
    """``--peers all`` runs the peers; Base_CUDA built with ``--fmad=false`` or with restricted
    pointers isolates one cause each and runs only when named."""
    from types import SimpleNamespace

    from cubepy.bench.suite import select_peers

    gpu = SimpleNamespace(properties=SimpleNamespace(backend="cuda"))
    strict, restrict = base_cuda.BaseCudaStrict.name, base_cuda.BaseCudaRestrict.name

    def names(text):
        chosen, skipped = select_peers(text, gpu)        # skipped where CuPy or a GPU is missing
        return {p.name for p in chosen} | set(skipped)

    assert not {strict, restrict} & names("all") and base_cuda.BaseCuda.name in names("all")
    assert names("cuda,cuda-strict,cuda-restrict") == {base_cuda.BaseCuda.name, strict, restrict}


def _ptx(folder, peer: base_cuda.BaseCuda) -> str:
    """The peer's source built with its options, as PTX for sm_90 (nvcc; NVRTC's flags alike)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    cu, ptx = folder / f"{type(peer).__name__}.cu", folder / f"{type(peer).__name__}.ptx"
    cu.write_text(peer.source())
    done = subprocess.run([nvcc, "-arch=sm_90", "-ptx", *peer.options, "-o", str(ptx), str(cu)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return ptx.read_text()


def test_base_cuda_without_contraction_has_no_fused_multiply_add(tmp_path):
    """Built with each peer's options, the hand-written CUDA's PTX contracts products into sums
    by default and not with the strict peer's (``base_cuda.cu`` calls no ``fma`` itself)."""
    assert _ptx(tmp_path, base_cuda.BaseCuda()).count("fma.rn.f64") > 0
    assert _ptx(tmp_path, base_cuda.BaseCudaStrict()).count("fma.rn.f64") == 0


def test_base_cuda_with_restricted_pointers_loads_through_the_read_only_path(tmp_path):
    """The restricted build's PTX reads through ``ld.global.nc`` (as cubepy's kernels do, their
    read-only arrays ``const __restrict__``); RAJAPerf's plain pointers never do."""
    assert _ptx(tmp_path, base_cuda.BaseCuda()).count("ld.global.nc.f64") == 0
    assert _ptx(tmp_path, base_cuda.BaseCudaRestrict()).count("ld.global.nc.f64") > 20
