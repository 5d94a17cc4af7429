"""Arrays in device memory are described through __cuda_array_interface__, checked like host
arrays, and refused by devices that cannot read them."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from cubepy.runtime.device_arrays import DeviceArray, from_cuda_array_interface, register_device_array


class FakeCudaArray:
    """What CuPy and PyTorch expose, without a GPU."""

    def __init__(self, ptr, shape, typestr="<f4", readonly=False, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, readonly),
                                         "strides": strides, "version": 3, "stream": 1}


@cb.kernel
def copy(x: Array[f32], y: Mut[Array[f32]]):
    y[cb.ABSOLUTE_POS] = x[cb.ABSOLUTE_POS]


def test_cuda_array_interface_is_described():
    d = from_cuda_array_interface(FakeCudaArray(4096, (8, 4)))
    assert (d.ptr, d.shape, d.dtype, d.readonly, d.nbytes) == (4096, (8, 4), np.float32, False, 128)


def test_a_host_only_device_refuses_device_arrays_naming_the_parameter():
    with pytest.raises(TypeError, match="parameter 'x' is an array in cuda device memory"):
        copy.launch(1, 4, FakeCudaArray(4096, (4,)), np.zeros(4, np.float32), device="interp")


def test_device_arrays_are_checked_like_host_arrays():
    with pytest.raises(TypeError, match="expects Array\\[f32\\] but got an array of float64"):
        copy.launch(1, 4, FakeCudaArray(4096, (4,), "<f8"), np.zeros(4, np.float32), device="interp")
    with pytest.raises(ValueError, match="not C-contiguous"):
        copy.launch(1, 4, FakeCudaArray(4096, (4,), strides=(8,)), np.zeros(4, np.float32), device="interp")
    with pytest.raises(ValueError, match="is Mut but the array passed is read-only"):
        copy.launch(1, 4, np.zeros(4, np.float32), FakeCudaArray(4096, (4,), readonly=True), device="interp")


def test_overlapping_device_arrays_are_aliasing():
    with pytest.raises(ValueError, match="Mut argument 'y' overlaps argument 'x'"):
        copy.launch(1, 4, FakeCudaArray(4096, (8,)), FakeCudaArray(4096 + 16, (8,)), device="interp")


def test_a_backend_can_register_its_array_type():
    class Vendor:
        pass
    register_device_array(Vendor, lambda v: DeviceArray(v, 1 << 20, (4,), np.dtype(np.float32), False))
    with pytest.raises(TypeError, match="cuda device memory"):
        copy.launch(1, 4, Vendor(), np.zeros(4, np.float32), device="interp")
