"""Builds per kind of launch (`backends/cstyle/builds.py`): what every C-style GPU backend runs.

The `Builds` bookkeeping is tested here without a device; the launches on every device under test
whose executables are `Builds` (OpenCL on PoCL in CI, CUDA and OpenCL on a GPU): a launch the host
proves in bounds runs the build without checks, any other the build with them, which reports; each
shape of cube count runs its own build, by every launch form; launches from several threads each
run with their own arguments.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from cubepy.backends.cstyle import CUDA, render
from cubepy.backends.cstyle.builds import Builds, build_options

import cubepy as cb
from cubepy import Array, Mut, i32
from tests.kernels import linear_positions as _positions
from tests.kernels import make_shifted

_shifted = make_shifted()


@cb.kernel
def _rows(out: Mut[Array[i32]]):
    out[cb.UNIT_POS_X] = cb.CUBE_POS_Y


def _rendered(kernel, *args, checked: bool = True):
    """The kernel as CUDA renders it, with its launch test where it has one."""
    checks = cb.device("interp", checks_per_cube=True, checks_per_launch=True)
    return render(kernel.compile(*args, dim=8, device=checks, checked=checked).ir_module, CUDA)


def _fake_builds(rendered, made: list, lock=None) -> Builds:
    def build(answer, shape):
        if lock is not None:
            with lock:
                made.append((answer, shape))
        else:
            made.append((answer, shape))
        return f"function{answer}{shape}", f"module{answer}{shape}", False
    return Builds(rendered, build)


# --- the bookkeeping, without a device -----------------------------------------------------------

def test_the_first_build_is_the_proven_one_at_the_first_shape_and_others_come_at_first_need():
    rendered = _rendered(_shifted, np.zeros(8, np.float32), np.zeros(8, np.float32), 0)
    assert [s.kind for s in rendered.args].count("launch_ok") == 1 and rendered.count_axes == ("y", "z")
    made: list = []
    builds = _fake_builds(rendered, made)
    assert made == [(1, (True, True))] and builds.built == ((1, (True, True)),)
    assert builds.for_launch((4, 1, 1), proven=True) == "function1(True, True)"
    assert builds.for_launch((4, 1, 1), proven=False) == "function0(True, True)"
    assert builds.for_launch((4, 2, 1), proven=True) == "function1(False, True)"
    assert builds.for_launch((4, 1, 1), proven=False) == "function0(True, True)"      # kept, not rebuilt
    assert made == [(1, (True, True)), (0, (True, True)), (1, (False, True))]
    assert len(builds.modules) == 3 and builds.any_function == "function1(True, True)"
    assert build_options(rendered, 0, (True, False)) == ("-DCB_LAUNCH_OK=0", "-DCB_ONE_CUBE_Y=1")
    assert build_options(rendered, None, (False, False)) == ()


def test_a_kernel_without_a_launch_test_has_one_answer_and_one_naming_cube_pos_y_is_built_for_any_count():
    rendered = _rendered(_rows, np.zeros(8, np.int32), checked=False)
    made: list = []
    builds = _fake_builds(rendered, made)
    assert rendered.first_one_cube == (False,) and made == [(None, (False,))]
    assert builds.proven((False,)) is None
    assert builds.for_launch((2, 3, 1), proven=False) == "functionNone(False,)"
    assert builds.for_launch((2, 1, 1), proven=True) == "functionNone(True,)"
    assert made == [(None, (False,)), (None, (True,))]


def test_threads_needing_one_build_make_it_once():
    rendered = _rendered(_shifted, np.zeros(8, np.float32), np.zeros(8, np.float32), 0)
    made: list = []
    builds = _fake_builds(rendered, made, threading.Lock())
    start = threading.Barrier(8)

    def need(_):
        start.wait()
        return builds.for_launch((3, 2, 2), proven=False)

    with ThreadPoolExecutor(8) as pool:
        found = set(pool.map(need, range(8)))
    assert found == {"function0(False, False)"} and made.count((0, (False, False))) == 1


# --- on devices whose executables are Builds -------------------------------------------------------

@pytest.fixture
def built_dev(dev) -> cb.Device:
    compiled = _positions.compile(np.zeros(8, np.int32), dim=8, device=dev)
    if not isinstance(compiled.executable, Builds):
        pytest.skip(f"{dev.name} does not build per kind of launch")
    return dev


def test_a_proven_launch_runs_the_build_without_checks_and_another_builds_the_checked_one(built_dev, monkeypatch):
    monkeypatch.setenv("CUBEPY_TRACE_INDEX", "0")         # this kernel's own executable, built here
    x = np.random.default_rng(3).random(1003).astype(np.float32)
    shifted = make_shifted()       # not the one the same device's other runs (plane sizes, residency) built
    compiled = shifted.compile(np.zeros(1000, np.float32), x, 0, dim=256, device=built_dev)
    executable = compiled.executable
    if not built_dev.properties.checks_per_launch:
        pytest.skip(f"{built_dev.name} has no launch test")
    assert executable.built == ((1, executable.rendered.first_one_cube),)
    launcher = shifted[4, 256]
    for k in (0, 3):
        out = np.full(1000, np.nan, np.float32)
        launcher(out, x, k, device=built_dev)
        np.testing.assert_array_equal(out, x[k:k + 1000])
    assert executable.built == ((1, executable.rendered.first_one_cube),)    # only the proven build ran
    out = np.full(1000, np.nan, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match=r"array 'x'.*\(1003,\)"):
        launcher(out, x, 5, device=built_dev)
        built_dev.synchronize()
    np.testing.assert_array_equal(out[:998], x[5:])                          # every access in bounds ran
    assert executable.built == ((1, executable.rendered.first_one_cube), (0, executable.rendered.first_one_cube))
    assert "#define CB_LAUNCH_OK (cb_launch_ok != 0)" in compiled.source()


def _arrays(dev, kind: str):
    """``(to the device, back to NumPy)`` for NumPy arrays ("host") or the device's own ("device":
    CuPy arrays on CUDA, pyopencl arrays on OpenCL: the direct warm path)."""
    if kind == "host":
        return np.array, np.asarray
    if dev.backend_name == "cuda":
        cp = pytest.importorskip("cupy")
        return cp.asarray, cp.asnumpy
    if dev.backend_name == "opencl":
        import pyopencl.array as cla

        queue = dev.backend.queue(dev.properties)
        return (lambda a: cla.to_device(queue, a)), (lambda a: a.get())
    pytest.skip(f"no device arrays for {dev.name}")


@pytest.mark.parametrize("arrays", ["host", "device"])
@pytest.mark.parametrize("checked", [False, True])
def test_each_launch_shape_runs_its_own_build_by_every_launch_form(built_dev, checked, arrays, monkeypatch):
    """A kernel reading ABSOLUTE_POS is built for one cube along y and z first, and for each other
    shape of cube count at its first launch; every launch form runs the build of its count's
    shape: the launcher, ``launch``, the compiled handle's launcher, by the full path (NumPy
    arrays) and the direct warm path (device arrays)."""
    monkeypatch.setenv("CUBEPY_TRACE_INDEX", "0")
    to_device, to_host = _arrays(built_dev, arrays)
    dim, n = (8, 1, 1), 48
    counts = [(6, 1, 1), (3, 2, 1), (2, 1, 3), (1, 3, 2), (6, 1, 1), cb.CubeCount(3, 2)]
    compiled = _positions.compile(to_device(np.zeros(n, np.int32)), dim=dim, device=built_dev, checked=checked)
    for count in counts:
        want = np.full(n, -7, np.int32)
        _positions[count, dim](want, device="interp")      # (the resident runs wrap `launch`)
        for form in ("launcher", "launch", "compiled"):
            out = to_device(np.full(n, -7, np.int32))
            if form == "launcher":
                _positions[count, dim](out, device=built_dev, checked=checked)
            elif form == "launch":
                _positions.launch(count, dim, out, device=built_dev, checked=checked)
            else:
                compiled[count](out)
            np.testing.assert_array_equal(to_host(out), want, err_msg=f"{form} at {count}")
    shapes = {compiled.executable.shape(tuple(c)) for c in counts}
    assert len(shapes) == 4 and {shape for _, shape in compiled.executable.built} == shapes


def test_launches_of_one_build_from_several_threads_each_run_their_own_arguments(built_dev):
    x = np.random.default_rng(4).random(4096 + 64).astype(np.float32)
    launcher = _shifted[16, 256]

    def run(k: int) -> bool:
        ok = True
        for _ in range(20):
            out = np.full(4096, np.nan, np.float32)
            launcher(out, x, k, device=built_dev)
            ok &= np.array_equal(out, x[k:k + 4096])
        return ok

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)          # threads switch between any two steps of a launch
    try:
        with ThreadPoolExecutor(4) as pool:
            assert all(pool.map(run, (0, 17, 33, 64)))
    finally:
        sys.setswitchinterval(interval)
