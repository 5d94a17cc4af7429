"""What a kernel leaves behind: a kernel the program drops is freed with everything compiled for
it, and compiling leaves Python's cyclic collector as it found it."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32


def _scaled_copy(factor: float):
    @cb.kernel
    def scaled(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] * factor
    return scaled


@pytest.mark.parametrize("backend", ["interp", "cpu"])
def test_a_dropped_kernel_is_freed_with_its_function(backend):
    x = np.random.default_rng().standard_normal(100).astype(np.float32)
    kernels = [_scaled_copy(f) for f in (2.0, 3.0)]
    for k, factor in zip(kernels, (2.0, 3.0)):
        y = np.full_like(x, np.nan)
        k[4, 32](x, y, device=backend)
        np.testing.assert_array_equal(y, x * np.float32(factor))
    kept, dropped = kernels
    gone = [weakref.ref(dropped), weakref.ref(dropped.fn)]
    del kernels, dropped, k
    gc.collect()
    assert [r() for r in gone] == [None, None]
    y = np.full_like(x, np.nan)                   # the kernel still held keeps working
    kept[4, 32](x, y, device=backend)
    np.testing.assert_array_equal(y, x * np.float32(2.0))


def test_compiling_leaves_the_collector_as_it_found_it():
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    _scaled_copy(1.5)[1, 8](x, y, device="interp")
    assert gc.isenabled()
    gc.disable()
    try:
        _scaled_copy(2.5)[1, 8](x, y, device="interp")
        assert not gc.isenabled()
    finally:
        gc.enable()

    @cb.kernel
    def wrong(x: Array[f32], y: Mut[Array[f32]]):
        y[0] = x                                   # an array stored as an element: a type error
    with pytest.raises(cb.CubeError):
        wrong[1, 8](x, y, device="interp")
    assert gc.isenabled()
