"""cb.preload / preload_mut / to_host on every device, and the warning for repeated uploads."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cubepy as cb
from tests.conftest import DEVICE_PARAMS
from tests.kernels import saxpy

ONE_PER_BACKEND = [p for p in DEVICE_PARAMS if p.values[0][1] in (None, 8, "resident")]


@pytest.mark.parametrize("dev", ONE_PER_BACKEND, indirect=True)
def test_preloaded_arrays_stay_on_the_device_across_launches(dev, rng):
    x = rng.random(1000).astype(np.float32)
    y = rng.random(1000).astype(np.float32)
    y0 = y.copy()
    x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(y, device=dev)
    assert (x_dev.shape, x_dev.dtype, y_dev.mutable) == ((1000,), np.float32, True)
    for _ in range(3):
        saxpy[4, 256](x_dev, y_dev, 0.5, device=dev)
    np.testing.assert_array_equal(y, y0)                   # the host array is untouched
    got = y_dev.to_host()
    np.testing.assert_allclose(got, y0 + 1.5 * x, rtol=1e-6)
    out = np.full(1000, np.nan, np.float32)
    assert y_dev.to_host(out=out) is out
    np.testing.assert_array_equal(out, got)
    np.testing.assert_array_equal(x_dev.to_host(), x)


@pytest.mark.parametrize("dev", ONE_PER_BACKEND, indirect=True)
def test_a_read_only_preload_cannot_be_written(dev):
    x = np.ones(64, np.float32)
    with pytest.raises(ValueError, match="parameter 'y' is Mut but the array passed is read-only"):
        saxpy.launch(1, 64, cb.preload(x, device=dev), cb.preload(x, device=dev), 1.0, device=dev)


def test_to_host_checks_out_and_preload_takes_arrays():
    r = cb.preload(np.ones(4, np.float32), device="interp")
    with pytest.raises(TypeError, match="needs shape \\(4,\\) and dtype float32"):
        r.to_host(out=np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="takes an array"):
        cb.preload(3.0, device="interp")


def test_repeated_uploads_of_one_array_warn_once_naming_the_argument():
    from cubepy.runtime import residency

    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(residency.UPLOADS_BEFORE_WARNING + 2):
            residency.note_upload("saxpy_w", "x", x)
            residency.note_upload("saxpy_w", "y", np.zeros(64, np.float32))     # a new array each time
        for i in range(4):
            residency.note_upload("saxpy_w", "z", y[i * 16:(i + 1) * 16])         # other data each time
    assert len(caught) == 1 and caught[0].category is cb.TransferWarning
    text = str(caught[0].message)
    assert "kernel 'saxpy_w': argument 'x'" in text and "cb.preload(x)" in text
    assert caught[0].filename == __file__


def test_numpy_arguments_in_a_gpu_loop_warn(rng):
    devs = [p.values[0] for p in DEVICE_PARAMS if p.values[0][0] in ("opencl", "cuda") and p.values[0][1] is None]
    if not devs:
        pytest.skip("no GPU-style backend here")
    dev = cb.device(devs[0][0])
    x, y = rng.random(256).astype(np.float32), np.zeros(256, np.float32)
    with pytest.warns(cb.TransferWarning, match="argument 'x' is the same NumPy array"):
        for _ in range(4):
            saxpy[1, 256](x, y, 1.0, device=dev)
