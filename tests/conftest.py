"""Shared fixtures: the devices under test and a fresh random generator per test.

``CUBEPY_TEST_DEVICES`` picks backends (comma separated, default: every available registered
backend, `cb.backend_names()`). ``CUBEPY_TEST_SEED`` fixes the random inputs (CI derives it from the
commit, so a run is reproducible and each commit sees fresh data); otherwise a new seed is drawn
and printed in the header. Hypothesis uses the same seed unless --hypothesis-seed is given.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

import cubepy as cb

# Plane sizes per backend; for CUDA, "resident" also runs every test with its arrays in GPU
# memory, through the warm launch path (tests/resident.py); for the interpreter, "cubes" runs it
# at plane size 32 with checks once per cube, as the GPUs compile (the interpreter asserts what
# the per-cube test claims: cubepy.ir.cube_checks).
PLANE_SIZES = {"interp": (1, 8, 16, 32, 64, "cubes"), "cpu": (1, 8, 32, 64, "avx2"), "opencl": (None,),
               "wgpu": (None, 1, 32),       # the subgroup size, none, and planes emulated in workgroup memory
               "cuda": (None, "resident"),
               "hip": (None,)}
_SEED = int(os.environ.get("CUBEPY_TEST_SEED") or np.random.SeedSequence().entropy % 2**32)
# pytest-xdist's workers start after this import and inherit the environment: one seed for all
os.environ["CUBEPY_TEST_SEED"] = str(_SEED)


def pytest_configure(config):
    # Hypothesis draws from the same seed, so a run is reproducible from its header line.
    if getattr(config.option, "hypothesis_seed", "absent") is None:
        config.option.hypothesis_seed = _SEED


def pytest_report_header(config):
    return f"cubepy test seed: CUBEPY_TEST_SEED={_SEED}"


def pytest_terminal_summary(terminalreporter):
    # -q (the default options) hides the header: say the seed again where every run shows it
    terminalreporter.write_line(f"cubepy test seed: CUBEPY_TEST_SEED={_SEED} (set it to rerun with the same inputs)")


def _backends() -> list[str]:
    wanted = os.environ.get("CUBEPY_TEST_DEVICES")
    names = [n.strip() for n in wanted.split(",")] if wanted else list(cb.backend_names())
    available = {d.backend_name for d in cb.devices() if d.available}
    return [n for n in names if n in available or wanted]


def device_params() -> list:
    params = []
    for name in _backends():
        for plane in PLANE_SIZES.get(name.partition(":")[0], (None,)):    # "cuda:1": the second GPU
            label = name if plane is None else f"{name}-{plane}" if isinstance(plane, str) else f"{name}-p{plane}"
            params.append(pytest.param((name, plane), id=label))
    return params


DEVICE_PARAMS = device_params()


@pytest.fixture(params=DEVICE_PARAMS)
def dev(request, monkeypatch) -> cb.Device:
    """Every device under test, at each plane size it supports."""
    name, plane = request.param
    if plane == "resident":
        from tests.resident import resident_launch

        monkeypatch.setattr(cb.KernelFunction, "launch", resident_launch)
        return cb.device(name)
    if plane == "cubes":
        return cb.device(name, plane_dim=32, checks_per_cube=True, checks_per_launch=True, checks_per_run=True,
                         inline_array_bytes=2048)
    if plane == "avx2":            # the code an AVX2 machine runs, on any host that has AVX2
        found = cb.device(name, isa="avx2")
        if not found.available:
            pytest.skip(f"no AVX2 code here: {found.reason}")
        return found
    return cb.device(name, plane_dim=plane) if plane else cb.device(name)


@pytest.fixture(autouse=True)
def fresh_transfer_warnings(monkeypatch):
    """The per-launch transfer warning comes once per (kernel, argument) and process: each test
    starts with none given, whatever kernels of the same names earlier tests launched."""
    from cubepy.runtime import residency

    monkeypatch.setattr(residency, "_warned", set())
    monkeypatch.setattr(residency, "_uploads", {})


@pytest.fixture
def rng(request) -> np.random.Generator:
    return np.random.default_rng([_SEED, zlib.crc32(request.node.nodeid.encode())])


_FEATURE_OF_DTYPE = {"float16": "fp16", "float64": "fp64", "bfloat16": "bf16"}


def require_dtype(dev: cb.Device, dtype) -> None:
    """Skip (with the reason) when the device lacks the feature a dtype needs, e.g. f16 on PoCL."""
    feature = _FEATURE_OF_DTYPE.get(np.dtype(dtype).name)
    if feature and not dev.properties.supports(feature):
        pytest.skip(f"device {dev.name} has no {feature}")


def poisoned(shape, dtype) -> np.ndarray:
    """An output buffer full of a value no kernel writes by accident (NaN, or a bit pattern)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype)
    return np.full(shape, np.iinfo(dtype).max - 3, dtype)


def subprocess_env(**extra: str) -> dict:
    """The environment for a test's child Python: the repository first on PYTHONPATH (kept after it,
    so carried packages stay visible), plus ``extra``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


# The longest files first: pytest-xdist hands files to its workers in collection order, and the
# fuzzer's CI budget (minutes, on its own process pool) started last finished last.
_FIRST = ("tests/fuzz/test_fuzz.py", "tests/gpu/test_compile_all_kernels.py", "tests/bench/test_cuda_source.py")


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        path = item.nodeid.split("::")[0]
        return _FIRST.index(path) if path in _FIRST else len(_FIRST)
    items.sort(key=rank)
