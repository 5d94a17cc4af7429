"""Shape-generic specializations (`cubepy.runtime.shapes`): a kernel that does not specialize on
its CubeDim compiles once per rank pattern of cube shapes ((x, 1, 1), (x, y, 1), ...), and gives
what the per-shape compile gives; one that does (or that the static shape lets the compiler prove
more of) compiles per shape."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, f64, i32
from tests.conftest import poisoned
from tests.kernels import saxpy

SHAPES = [(32, 1, 1), (64, 1, 1), (256, 1, 1), (1024, 1, 1), (16, 2, 1), (8, 4, 2), (4, 4, 4), (2, 8, 1)]


def _classes(dev, limits: dict | None = None) -> int:
    """One compile per rank pattern ((x, 1, 1), (x, y, 1), (x, y, z)) and units bound of SHAPES, and
    one per shape of more units than its bound's shared executable takes (``limits``, per bound)."""
    limits = limits or {}

    def bound(dim) -> int:
        return dev.backend.units_bound(int(np.prod(dim)))

    def fits(dim) -> bool:
        return np.prod(dim) <= limits.get(bound(dim), 1024)
    shared = {(tuple(d > 1 for d in dim), bound(dim)) for dim in SHAPES if fits(dim)}
    return len(shared) + sum(1 for dim in SHAPES if not fits(dim))
GENERIC_BACKENDS = ["interp", "opencl", "cuda"]


def _device(name: str, **options):
    found = next((d for d in cb.devices() if d.backend_name == name), None)
    if found is None or not found.available:
        pytest.skip(f"no {name} device")
    return cb.device(name, **options)


@cb.kernel
def positions(out: Mut[Array[i32]], extents: Mut[Array[i32]]):
    """Each unit writes its absolute position, and its cube's extents and position along y."""
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = i
        extents[3 * i] = cb.CUBE_DIM_X * 10_000 + cb.CUBE_DIM_Y * 100 + cb.CUBE_DIM_Z
        extents[3 * i + 1] = cb.UNIT_POS_Y - cb.CUBE_DIM // 2
        extents[3 * i + 2] = cb.UNIT_POS


def _expected_positions(dim, count, n):
    dx, dy, dz = dim
    ext = np.full(3 * n, -7, np.int32)
    for c in range(count):
        for z in range(dz):
            for y in range(dy):
                for x in range(dx):
                    unit = x + dx * (y + dy * z)
                    i = (c * dx + x) + count * dx * (y + dy * z)       # the absolute position, x fastest
                    if i < n:
                        ext[3 * i: 3 * i + 3] = (dx * 10_000 + dy * 100 + dz, y - dx * dy * dz // 2, unit)
    return ext


@pytest.mark.parametrize("backend", GENERIC_BACKENDS)
def test_eight_cube_shapes_compile_once_per_rank_pattern_and_each_gets_its_own_extents(backend):
    dev = _device(backend, shape_generic=True)
    n = 3000
    before = cb.compile_stats()
    limits: dict[int, int] = {}      # per units bound: the units its shared executable takes
    for dim in SHAPES:
        units = int(np.prod(dim))
        count = (n + units - 1) // units
        out, ext = poisoned(n, np.int32), np.full(3 * n, -7, np.int32)
        positions[count, dim](out, ext, device=dev)
        compiled = positions.compile(out, ext, dim=dim, device=dev)
        bound = dev.backend.units_bound(units)
        if bound not in limits:      # the bound's first shape (NVIDIA's OpenCL: any kernel takes 256)
            assert compiled.shape_generic, dim
            limits[bound] = dev.backend.units_limit(compiled.executable)
        assert compiled.shape_generic == (units <= limits[bound]), (dim, limits)
        np.testing.assert_array_equal(ext, _expected_positions(dim, count, n), err_msg=str(dim))
        np.testing.assert_array_equal(out, np.arange(n, dtype=np.int32), err_msg=str(dim))
    after = cb.compile_stats()
    classes = _classes(dev, limits)
    # CUDA: 1024 units are a bound of their own; where no limit cuts a shape off, 3 elsewhere
    assert classes == (4 if backend == "cuda" else 3) or min(limits.values()) < 1024
    assert after["compiles"] + after["disk_loads"] - before["compiles"] - before["disk_loads"] == classes
    assert after["shared_shapes"] - before["shared_shapes"] == len(SHAPES) - classes


@pytest.mark.parametrize("backend", GENERIC_BACKENDS)
def test_by_default_the_backend_chooses_whether_shapes_share_code(backend):
    dev = _device(backend)         # PoCL compiles per local size anyway: it prefers a compile per CubeDim
    x = np.arange(100, dtype=np.int32)
    compiled = positions.compile(x, np.zeros(300, np.int32), dim=64, device=dev)
    assert compiled.shape_generic == dev.backend.prefers_shape_generic(dev.properties)
    assert backend == "opencl" or compiled.shape_generic


@pytest.mark.parametrize("backend", GENERIC_BACKENDS)
def test_without_shape_generic_code_each_shape_compiles(backend, monkeypatch):
    dev = _device(backend, shape_generic=False)
    x = np.arange(100, dtype=np.int32)
    before = cb.compile_stats()
    for dim in SHAPES[:3]:
        compiled = positions.compile(x, np.zeros(300, np.int32), dim=dim, device=dev)
        assert not compiled.shape_generic
    after = cb.compile_stats()
    assert after["shared_shapes"] == before["shared_shapes"]
    monkeypatch.setenv("CUBEPY_SHAPE_GENERIC", "0")
    dev = _device(backend, shape_generic=True)
    assert not positions.compile(x, np.zeros(300, np.int32), dim=(48, 1, 1), device=dev).shape_generic


@cb.kernel
def tiled_sum(x: Array[f32], out: Mut[Array[f32]]):
    tile = cb.SharedMemory(f32, cb.CUBE_DIM)          # sized by the shape: specializes
    i = cb.ABSOLUTE_POS
    tile[cb.UNIT_POS] = x[i] if i < len(x) else 0.0
    cb.sync_cube()
    if cb.UNIT_POS == 0:
        s = 0.0
        for k in range(cb.CUBE_DIM):
            s += tile[k]
        out[cb.CUBE_POS] = s


@cb.kernel
def folds(out: Mut[Array[f64]]):
    # static code folds CUBE_DIM / 3 as a Python float (f64); a run-time i32 division would give f32
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = cb.CUBE_DIM / 3 + 0.1 * cb.CUBE_DIM_X


@cb.kernel
def strided_rows(x: Array[f32], out: Mut[Array[f32]]):
    # a range stepping by CUBE_DIM is proven in bounds only when the step is a constant
    row = cb.CUBE_POS
    for c in range(cb.UNIT_POS, x.shape[1], cb.CUBE_DIM):
        out[row, c] = x[row, c] * 2.0


@pytest.mark.parametrize("backend", GENERIC_BACKENDS)
def test_a_kernel_that_specializes_on_its_shape_compiles_per_shape_and_is_right(backend, rng):
    dev = _device(backend, shape_generic=True)
    x = rng.standard_normal(1000).astype(np.float32)
    for dim in (32, 64, 128):
        out = poisoned((1000 + dim - 1) // dim, np.float32)
        tiled_sum[len(out), dim](x, out, device=dev)
        expected = [x[c * dim:(c + 1) * dim].sum(dtype=np.float64) for c in range(len(out))]
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        assert not tiled_sum.compile(x, out, dim=dim, device=dev).shape_generic

        out64 = poisoned(300, np.float64)
        folds[(300 + dim - 1) // dim, dim](out64, device=dev)
        np.testing.assert_array_equal(out64, np.full(300, dim / 3 + 0.1 * dim))
        assert not folds.compile(out64, dim=dim, device=dev).shape_generic

        m = rng.standard_normal((4, 200)).astype(np.float32)
        rows_out = poisoned(m.shape, np.float32)
        strided_rows[4, dim](m, rows_out, device=dev)
        np.testing.assert_array_equal(rows_out, m * 2)
        assert not strided_rows.compile(m, rows_out, dim=dim, device=dev).shape_generic


@pytest.mark.parametrize("backend", GENERIC_BACKENDS)
def test_checked_mode_still_reports_out_of_bounds_in_a_shape_generic_kernel(backend):
    @cb.kernel
    def off_by_one(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(y):
            y[i] = x[i + 1]

    dev = _device(backend, shape_generic=True)
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="'x'"):
        off_by_one[2, (16, 2, 1)](x, y, device=dev)
        cb.synchronize(dev)
    assert off_by_one.compile(x, y, dim=(16, 2, 1), device=dev).shape_generic


def test_a_kernel_whose_proven_launches_run_no_check_is_traced_once_and_still_reports(monkeypatch):
    # with a launch test, and every report in the per-cube test's checked copy, the static trace
    # could only shorten that copy: it is not traced to compare (a cold compile traces once)
    import cubepy.runtime.kernel as kernel_module

    traced = []
    real = kernel_module.trace_kernel
    monkeypatch.setattr(kernel_module, "trace_kernel",
                        lambda fn, spec, name: traced.append(spec) or real(fn, spec, name))

    scaled = cb.kernel(saxpy.__wrapped__)        # a kernel of its own: nothing traced before
    dev = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_launch=True, checks_per_run=True,
                    shape_generic=True)
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    scaled[4, 32](x, y, 2.0, device=dev)
    assert scaled.compile(x, y, 2.0, dim=32, device=dev).shape_generic
    assert [spec.cube_dim for spec in traced] == [(None, 1, 1)]         # the generic trace alone
    np.testing.assert_array_equal(y, 2 * x + 1)
    with pytest.raises(cb.OutOfBoundsError, match="'y'"):              # y shorter than x: its checked copy
        scaled[4, 32](x, np.ones(50, np.float32), 2.0, device=dev)
        cb.synchronize(dev)
    # a check left where the host proved the launch (an index the host cannot bound) still
    # compares with the static trace
    traced.clear()
    strided_rows[2, 64](np.ones((2, 100), np.float32), np.zeros((2, 100), np.float32), device=dev)
    assert len(traced) == 2


def test_a_compile_error_is_the_one_of_the_static_trace():
    @cb.kernel
    def bad(x: Array[f32], y: Mut[Array[i32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] * cb.CUBE_DIM            # f32 into an i32 array: a type error at every shape

    with pytest.raises(cb.CubeTypeError, match="convert explicitly"):
        bad[1, 32](np.ones(4, np.float32), np.zeros(4, np.int32), device="interp")


def test_the_ir_of_a_shape_generic_kernel_says_so():
    x = np.ones(8, np.int32)
    compiled = positions.compile(x, np.zeros(24, np.int32), dim=64, device="interp")
    assert "cube_dim=(runtime, 1, 1)" in compiled.ir and "shape-generic" in repr(compiled)
    assert "cube_dim=(runtime, runtime, 1)" in positions.compile(x, np.zeros(24, np.int32), dim=(8, 2),
                                                                 device="interp").ir
    assert "cube_dim=(1, 1, 1)" in positions.compile(x, np.zeros(24, np.int32), dim=1, device="interp").ir


@cb.kernel
def branches_on_the_size(x: Array[f64], out: Mut[Array[f64]]):
    # static code picks one side at trace time and keeps 0.1 a weakly typed number (f64 with x);
    # a run-time branch would join the sides' types
    i = cb.ABSOLUTE_POS
    scale = 0.1 if cb.CUBE_DIM > 64 else 2
    if i < len(x):
        out[i] = x[i] * scale


@pytest.mark.parametrize("backend", GENERIC_BACKENDS)
def test_a_kernel_that_compares_its_cube_size_specializes(backend, rng):
    dev = _device(backend, shape_generic=True)
    x = rng.standard_normal(500)
    for dim, scale in ((32, 2), (128, 0.1)):
        out = poisoned(500, np.float64)
        branches_on_the_size[(500 + dim - 1) // dim, dim](x, out, device=dev)
        np.testing.assert_array_equal(out, x * scale)
        assert not branches_on_the_size.compile(x, out, dim=dim, device=dev).shape_generic
