"""Small read-only host arrays passed by value in the launch's parameters (cubepy.runtime.inline_arrays).

The interpreter specializes as CUDA does with ``inline_array_bytes=2048``, so the runtime's choices
(capacities, plan keys, the binder's guards) and the compile pipeline's (`cubepy.ir.inline_arrays`)
run here without a GPU; on CUDA (``CUBEPY_TEST_DEVICES=cuda``) the same tests launch the real
``__grid_constant__`` parameters, through the full path and the direct warm path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from cubepy.backends.cstyle import CUDA, OPENCL, render
from cubepy.backends.cuda.packing import ArgPacker

import cubepy as cb
from benchmarks.rajaperf.apps.fir import fir  # RAJAPerf's FIR as a user writes it: taps in a runtime loop
from cubepy import Array, Mut, f32, f64, i32
from cubepy.runtime.inline_arrays import inline_capacity, quick_bucket

EMULATED = dict(plane_dim=32, checks_per_cube=True, checks_per_launch=True, checks_per_run=True,
                inline_array_bytes=2048)


def _devices() -> list:
    out = [pytest.param(("interp", EMULATED), id="interp-as-cuda")]
    wanted = os.environ.get("CUBEPY_TEST_DEVICES", "")
    if "cuda" in wanted.split(","):
        out.append(pytest.param(("cuda", {}), id="cuda"))
    return out


@pytest.fixture(params=_devices())
def dev(request) -> cb.Device:
    name, options = request.param
    found = cb.device(name, **options)
    if not found.available:
        pytest.skip(found.reason)
    return found


@cb.kernel
def lookup(out: Mut[Array[f32]], codes: Array[i32], table: Array[f32]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = table[codes[i]]          # an index that differs per unit: by address


@cb.kernel
def three_tables(out: Mut[Array[f64]], a: Array[f64], b: Array[f64], c: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        j = i % 4
        k = cb.CUBE_POS % 4
        out[i] = a[k] + b[k] + c[k] + 0.0 * j


@cb.kernel
def taps_past_the_end(out: Mut[Array[f64]], coeff: Array[f64], extra: i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = coeff[len(coeff) - 1 + extra]


def _fir_reference(inp, coeff, n):
    return sum(c * inp[j:j + n] for j, c in enumerate(coeff))


def test_capacity_is_a_power_of_two_of_at_least_64_bytes():
    cap = [inline_capacity(np.zeros(n), 2048) for n in (0, 1, 8, 9, 16, 17, 255, 256, 257)]
    assert cap == [8, 8, 8, 16, 16, 32, 256, 256, 0]
    assert inline_capacity(np.zeros(5, np.float32), 2048) == 16
    assert inline_capacity(np.zeros(8), 0) == 0
    # the plan key tells apart exactly the sizes of different capacities
    assert quick_bucket(np.zeros(9)) == quick_bucket(np.zeros(16)) != quick_bucket(np.zeros(17))
    assert quick_bucket(np.zeros(1 << 20)) == 0


@cb.kernel
def chosen_per_unit(out: Mut[Array[f64]], table: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        v = 0
        if i % 3 == 0:
            v = 1                     # stored on some units only: differs between co-running units
        w = cb.CUBE_POS % 2           # stored once, before the load, from a uniform value
        out[i] = table[v] + table[w + 2]


@pytest.mark.parametrize("checked", [True, False])
def test_filter_taps_travel_by_value_and_give_numpys_answer(dev, rng, checked):
    n = 1000
    inp, coeff = rng.standard_normal(n + 15), rng.standard_normal(16)
    out = np.full(n, np.nan)
    compiled = fir.compile(out, inp, coeff, dim=256, device=dev, checked=checked)
    assert "@coeff: array1d<f64> by value[16]" in compiled.ir
    assert "by value" in repr(compiled)
    fir[-(-n // 256), 256](out, inp, coeff, device=dev, checked=checked)
    dev.synchronize()
    np.testing.assert_array_equal(out, _fir_reference(inp, coeff, n))


def test_lengths_share_a_specialization_within_a_capacity_and_never_exceed_it(dev, rng):
    """9..16 taps share one kernel, 17 taps get the next capacity, 300 travel by address; every
    launch's answer is NumPy's, through the launcher's warm path as well."""
    n = 300
    inp = rng.standard_normal(n + 400)
    launcher = fir[-(-n // 128), 128]
    before = cb.compile_stats()
    for taps in (16, 9, 12, 17, 300, 16, 3, 16):
        coeff = rng.standard_normal(taps)
        out = np.full(n, np.nan)
        launcher(out, inp[:n + taps - 1], coeff, device=dev)
        dev.synchronize()
        np.testing.assert_allclose(out, _fir_reference(inp, coeff, n), rtol=1e-12, atol=1e-12)
    made = cb.compile_stats()
    built = sum(made[k] - before[k] for k in ("compiles", "disk_loads", "restored"))
    assert built <= 4          # capacities 16, 32, by address and 8 (a kernel already on disk may load)
    assert fir.compile(np.zeros(n), inp[:n + 299], np.zeros(300), dim=128, device=dev).parameters[2].inline == 0


@cb.kernel
def weighted(out: Mut[Array[f64]], x: Array[f64], w: Array):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        s = 0.0
        for a in range(w.shape[0]):
            for b in range(w.shape[1]):
                s += f64(w[a, b]) * x[i + a * w.shape[1] + b]
        out[i] = s


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int8", "uint16", "int64", "bool"])
def test_a_2d_table_of_every_element_type_by_value(dev, rng, dtype):
    if dtype == "float16" and not dev.properties.supports("fp16"):
        pytest.skip("no fp16")
    n = 333
    w = (rng.integers(0, 2, (3, 5)) if dtype == "bool" else rng.integers(-9, 10, (3, 5))).astype(dtype)
    x = rng.standard_normal(n + 15)
    out = np.full(n, np.nan)
    capacity = {1: 64, 2: 32, 4: 16, 8: 16}[w.itemsize]        # 15 elements in at least 64 bytes
    assert weighted.compile(out, x, w, dim=128, device=dev).parameters[2].inline == capacity
    weighted[-(-n // 128), 128](out, x, w, device=dev)
    dev.synchronize()
    flat = w.reshape(-1).astype(np.float64)
    np.testing.assert_allclose(out, sum(c * x[k:k + n] for k, c in enumerate(flat)), rtol=1e-12, atol=1e-12)


def test_a_host_array_type_without_a_size_in_its_plan_key_gets_its_capacity(dev, rng):
    """CPU tensors bind as host arrays: a longer one through the same launcher is specialized for
    its capacity (a 300-tap filter never goes through a 16-element parameter)."""
    torch = pytest.importorskip("torch")
    n = 200
    inp = rng.standard_normal(n + 299)
    launcher = fir[-(-n // 64), 64]
    for taps in (16, 300, 16, 40):
        coeff = rng.standard_normal(taps)
        out = np.full(n, np.nan)
        launcher(out, torch.from_numpy(inp[:n + taps - 1]), torch.from_numpy(coeff), device=dev)
        dev.synchronize()
        np.testing.assert_allclose(out, _fir_reference(inp, coeff, n), rtol=1e-12, atol=1e-12)
    capacities = {fir.compile(np.zeros(n), torch.from_numpy(inp[:n + t - 1]), torch.zeros(t, dtype=torch.float64),
                              dim=64, device=dev).parameters[2].inline for t in (16, 300, 40)}
    assert capacities == {16, 0, 64}


def test_an_index_that_varies_between_units_keeps_the_table_in_global_memory(dev, rng):
    n = 500
    codes = rng.integers(0, 64, n).astype(np.int32)
    table = rng.standard_normal(64).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    compiled = lookup.compile(out, codes, table, dim=128, device=dev)
    assert compiled.parameters[2].inline == 64             # offered by the runtime
    assert "by value" not in compiled.ir                    # and declined by the pipeline
    lookup[-(-n // 128), 128](out, codes, table, device=dev)
    dev.synchronize()
    np.testing.assert_array_equal(out, table[codes])


def test_a_variable_stored_on_some_units_only_keeps_the_table_in_global_memory(dev, rng):
    n = 300
    table = rng.standard_normal(4)
    out = np.full(n, np.nan)
    assert "by value" not in chosen_per_unit.compile(out, table, dim=64, device=dev).ir
    chosen_per_unit[-(-n // 64), 64](out, table, device=dev)
    dev.synchronize()
    i = np.arange(n)
    np.testing.assert_array_equal(out, table[(i % 3 == 0).astype(int)] + table[(i // 64) % 2 + 2])


def test_arrays_past_the_budget_travel_by_address(dev, rng):
    n = 777
    tables = [rng.standard_normal(128) for _ in range(3)]      # 1 KiB each; the budget is 2 KiB
    out = np.full(n, np.nan)
    compiled = three_tables.compile(out, *tables, dim=64, device=dev)
    assert [p.inline for p in compiled.ir_module.params[1:]] == [128, 128, 0]
    three_tables[-(-n // 64), 64](out, *tables, device=dev)
    dev.synchronize()
    k = (np.arange(n) // 64) % 4
    np.testing.assert_array_equal(out, tables[0][k] + tables[1][k] + tables[2][k])


def test_only_read_only_host_arrays_travel_by_value(dev, rng):
    x = rng.standard_normal(16)
    assert fir.compile(np.zeros(4), x, x[:2].copy(), dim=32, device=dev).parameters[0].inline == 0   # Mut
    lines = cb.lines(np.zeros(16, np.float32), 4)

    @cb.kernel
    def scale(y: Mut[Array[f32]], w: Array[f32]):
        i = cb.ABSOLUTE_POS
        if i < len(y):
            y[i] = y[i] * w[0]
    assert scale.compile(lines, cb.lines(np.ones(4, np.float32), 4), dim=32, device=dev).parameters[1].inline == 0
    if dev.backend_name == "cuda":        # the interpreter's preload is a host copy
        on_device = cb.preload(np.ones(4, np.float32), dev)
        assert scale.compile(np.zeros(4, np.float32), on_device, dim=32, device=dev).parameters[1].inline == 0


def test_a_read_past_the_length_is_reported_though_the_capacity_holds_it(dev, rng):
    coeff = rng.standard_normal(10)                 # capacity 16: element 12 is inside the parameter
    out = np.full(64, np.nan)
    assert taps_past_the_end.compile(out, coeff, 0, dim=64, device=dev).parameters[1].inline == 16
    taps_past_the_end[1, 64](out, coeff, 0, device=dev)
    dev.synchronize()
    assert (out == coeff[-1]).all()
    message = r"index \(12,\) is out of bounds for array 'coeff' of shape \(10,\)"
    with pytest.raises(cb.OutOfBoundsError, match=message) as e:
        taps_past_the_end[1, 64](out, coeff, 3, device=dev)
        dev.synchronize()
    assert "test_inline_arrays.py" in str(e.value)


def test_the_cuda_source_reads_the_parameter_in_place():
    dev = cb.device("interp", **EMULATED)
    ir = fir.compile(np.zeros(8), np.zeros(23), np.zeros(16), dim=256, device=dev).ir_module
    rendered = render(ir, CUDA)
    assert "const __grid_constant__ cb_by_value_f64_16 coeff_by_value" in rendered.source
    assert "const double* __restrict__ coeff = coeff_by_value.v;" in rendered.source
    inline = [s for s in rendered.args if s.kind == "inline"]
    assert [(s.param, s.nbytes) for s in inline] == [(2, 128)]
    with pytest.raises(ValueError, match="passes no array by value"):
        render(ir, OPENCL)


def test_the_packer_gives_an_array_its_capacity_and_pads_it_with_zeros():
    import ctypes

    packer = ArgPacker(["Q", "i", "128s", "d", "Q"], {4: 0xABC})
    taps = np.arange(5.0)
    address = packer.pack(7, 3, taps.tobytes(), 2.5)
    cells = (ctypes.c_void_p * 5).from_address(address)
    assert [cells[k] - cells[0] for k in range(5)] == [0, 8, 16, 144, 152]
    packed = np.frombuffer(ctypes.string_at(cells[2], 128))
    np.testing.assert_array_equal(packed, np.concatenate([taps, np.zeros(11)]))
    assert ctypes.c_double.from_address(cells[3]).value == 2.5
    assert ctypes.c_uint64.from_address(cells[4]).value == 0xABC


def _require_nvcc() -> None:
    """Skip where nvcc is absent, or fail where CI requires the compilers (CUBEPY_REQUIRE_TOOLCHAINS=1)."""
    if shutil.which("nvcc") is None:
        if os.environ.get("CUBEPY_REQUIRE_TOOLCHAINS") == "1":
            pytest.fail("nvcc is not on PATH (CUBEPY_REQUIRE_TOOLCHAINS=1)")
        pytest.skip("nvcc is not on PATH")


def test_nvcc_reads_the_taps_from_parameter_space(tmp_path):
    """PTX of the by-value kernel loads the taps with ``ld.param`` at a run-time address (the
    constant bank in SASS) and global memory only for the input; the by-address one does not."""
    _require_nvcc()
    counts = {}
    for label, inline in (("by_value", 2048), ("by_address", 0)):
        dev = cb.device("interp", **dict(EMULATED, inline_array_bytes=inline))
        ir = fir.compile(np.zeros(8), np.zeros(23), np.zeros(16), dim=256, device=dev).ir_module
        cu, ptx = tmp_path / f"{label}.cu", tmp_path / f"{label}.ptx"
        cu.write_text(render(ir, CUDA).source)
        subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-ptx", str(cu), "-o", str(ptx)], check=True)
        text = ptx.read_text()
        counts[label] = (len(re.findall(r"ld\.param\.f64\s+%fd\d+, \[%rd", text)), len(re.findall(r"ld\.global", text)))
    assert counts["by_value"][0] > 0 and counts["by_address"][0] == 0
    assert counts["by_value"][1] < counts["by_address"][1]


@pytest.mark.parametrize("dtype", ["float16", "bool"])
def test_nvcc_builds_a_table_by_value_of_halves_and_bools(tmp_path, dtype):
    _require_nvcc()
    dev = cb.device("interp", **EMULATED)
    ir = weighted.compile(np.zeros(10), np.zeros(25), np.zeros((3, 5), dtype), dim=128, device=dev).ir_module
    source = render(ir, CUDA).source
    assert "cb_by_value_" in source
    cu = tmp_path / f"{dtype}.cu"
    cu.write_text(source)
    done = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", str(cu), "-o", str(cu) + ".cubin"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
