"""The public compiled-kernel handle: ``kernel.compile(...)`` holds one specialization."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, i32
from tests.conftest import poisoned
from tests.kernels import saxpy

ROOT = Path(__file__).resolve().parents[2]


@cb.kernel
def scale_rows(x: Array[f32], out: Mut[Array[f32]], factor: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * factor


def test_compile_returns_a_handle_that_launches_like_the_kernel(dev, rng):
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    expected = 2 * x + y
    compiled = saxpy.compile(x, y, 2.0, dim=64, device=dev)
    assert compiled.device is dev and compiled.cube_dim == (64, 1, 1)
    assert [(p.name, p.kind, str(p.dtype), p.mutable) for p in compiled.parameters] == [
        ("x", "array", "f32", False), ("y", "array", "f32", True), ("a", "scalar", "f32", False)]
    compiled[16](x, y, 2.0)
    dev.synchronize()
    np.testing.assert_array_equal(y, expected)


def test_compiled_with_a_count_is_called_directly_and_reuses_the_kernels_compile(dev, rng):
    x = rng.standard_normal(300).astype(np.float32)
    out = poisoned(300, np.float32)
    before = scale_rows.trace_count
    compiled = scale_rows.compile(x, out, 3, dim=32, count=10, device=dev)
    compiled(x, out, 3)
    scale_rows[10, 32](x, out, 3, device=dev)              # the same specialization: no new trace
    dev.synchronize()
    assert scale_rows.trace_count <= before + 1
    np.testing.assert_array_equal(out, x * 3)


def test_the_handle_shows_its_ir_and_generated_source(dev):
    x = np.ones(8, np.float32)
    compiled = saxpy.compile(x, x.copy(), 2.0, dim=32, device=dev)
    assert "saxpy" in compiled.ir and compiled.source("ir") == compiled.ir
    assert "ir" in compiled.forms and "source" in compiled.forms
    for form in compiled.forms:
        assert compiled.source(form).strip()
    with pytest.raises(ValueError, match="source forms"):
        compiled.source("no-such-form")


def test_arguments_of_other_kinds_are_refused_naming_the_parameter():
    dev = cb.device("interp")
    x = np.ones(8, np.float32)
    compiled = saxpy.compile(x, x.copy(), 2.0, dim=32, device=dev)
    assert compiled.accepts(x, x.copy(), 2.0)
    assert not compiled.accepts(x.astype(np.float64), x.copy(), 2.0)
    assert not compiled.accepts(x, x, 2.0)                          # a Mut argument aliasing another
    with pytest.raises(TypeError, match="'x' expects Array\\[f32\\]") as info:
        compiled[1](x.astype(np.float64), x.copy(), 2.0)
    assert info.value.loc is not None and info.value.loc.filename == __file__


def test_a_different_comptime_value_is_a_different_specialization():
    dev = cb.device("interp")
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    compiled = scale_rows.compile(x, out, 3, dim=32, device=dev)
    with pytest.raises(TypeError, match="'factor' was compiled for factor=3 but got factor=4"):
        compiled[1](x, out, 4)


def test_a_handle_without_a_count_says_how_to_launch_it():
    x = np.ones(8, np.float32)
    compiled = saxpy.compile(x, x.copy(), 2.0, dim=32, device="interp")
    with pytest.raises(TypeError, match="compiled\\[count\\]"):
        compiled(x, x.copy(), 2.0)


def test_counts_above_the_device_maximum_are_refused():
    x = np.ones(8, np.float32)
    compiled = saxpy.compile(x, x.copy(), 2.0, dim=32, device="interp")
    with pytest.raises(ValueError, match="CubeCount.y"):
        compiled[(1, 10**6)]


def test_the_launcher_reports_its_warm_path_after_a_launch():
    dev = cb.device("cpu")
    x = np.ones(64, np.float32)
    launcher = saxpy[1, 64]
    launcher(x, x.copy(), 2.0, device=dev)
    assert callable(launcher.warm_path)


def test_no_code_outside_the_runtime_reads_a_kernels_private_caches():
    pattern = re.compile(r"\b(?!self\b)[a-z_]+\._(cache|plans|specialize|launch|launchers|compiled)\b")
    offenders = []
    for folder in ("autotune", "benchmarks", "examples", "tests", "cubepy/torch.py", "cubepy/jax.py"):
        path = ROOT / folder
        files = [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
        for file in files:
            for number, line in enumerate(file.read_text().splitlines(), 1):
                if pattern.search(line) and "re.compile" not in line:
                    offenders.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_compile_takes_named_arguments_and_i32_scalars():
    @cb.kernel
    def fill(out: Mut[Array[i32]], value: i32):
        i = cb.ABSOLUTE_POS
        if i < len(out):
            out[i] = value

    out = poisoned(40, np.int32)
    compiled = fill.compile(out=out, value=7, dim=32, device="interp")
    compiled.launch(2, out, value=-5)
    np.testing.assert_array_equal(out, -5)


def test_launchers_are_kept_per_launch_shape_and_a_bool_never_shares_an_ints():
    assert saxpy[(4,), (256,)] is saxpy[(4,), (256,)]
    assert saxpy[(4, 2), (32, 8)] is saxpy[(4, 2), (32, 8)]
    assert saxpy[np.int64(4), np.int64(256)] is saxpy[4, 256]        # NumPy ints from arithmetic
    assert saxpy[(True,), (256,)] is not saxpy[(1,), (256,)]
    x = np.ones(1000, np.float32)
    with pytest.raises(cb.ArgumentValueError, match=r"CubeCount must hold non-negative ints, got \(True, 1, 1\)"):
        saxpy[(True,), (256,)](x, x.copy(), 1.0)
