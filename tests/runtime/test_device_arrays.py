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


def test_dlpack_capsules_are_read_with_offsets_and_strides():
    from cubepy.runtime.device_arrays import NotContiguous
    from cubepy.runtime.dlpack import read_capsule as read_dltensor

    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert read_dltensor(a.__dlpack__()) == (a.ctypes.data, (4, 6), np.dtype(np.float32), 1, 0, False)
    assert read_dltensor(a[1:].__dlpack__())[0] == a.ctypes.data + 24
    assert read_dltensor(np.ones(3, np.bool_).__dlpack__())[2] == np.bool_
    with pytest.raises(NotContiguous):
        read_dltensor(a[:, ::2].__dlpack__())


class FakeDLPackCuda:
    """A DLPack producer of CUDA memory, without a GPU: a hand-made DLManagedTensor (or, when the
    consumer allows DLPack 1.0, a DLManagedTensorVersioned) in a capsule. It records the stream
    and version the consumer asked for."""

    def __init__(self, ptr, shape, code=2, bits=32, readonly=False, versioned=True):
        import ctypes

        from cubepy.runtime.dlpack import _DLDataType, _DLDevice, _DLManagedTensorVersioned, _DLPackVersion, _DLTensor

        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._tensor = _DLTensor(ptr, _DLDevice(2, 0), len(shape), _DLDataType(code, bits, 1),
                                 ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)), None, 0)
        self._versioned = _DLManagedTensorVersioned(_DLPackVersion(1, 1), None, None, int(readonly), self._tensor)
        self.supports_versions, self.asked = versioned, []

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        import ctypes

        if kwargs and not self.supports_versions:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.asked.append((stream, kwargs.get("max_version")))
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        if kwargs.get("max_version", (0, 0)) >= (1, 0):
            return new(ctypes.addressof(self._versioned), b"dltensor_versioned", None)
        return new(ctypes.addressof(self._tensor), b"dltensor", None)


def test_dlpack_cuda_arrays_are_device_arrays():
    from cubepy.runtime.device_arrays import describer

    fake = FakeDLPackCuda(1 << 20, (8, 4))
    d = describer(fake)(fake)
    assert (d.ptr, d.shape, d.dtype, d.platform) == (1 << 20, (8, 4), np.float32, "cuda")
    with pytest.raises(TypeError, match="parameter 'x' is an array in cuda device memory"):
        copy.launch(1, 4, FakeDLPackCuda(1 << 20, (4,)), np.zeros(4, np.float32), device="interp")
    with pytest.raises(TypeError, match="expects Array\\[f32\\] but got an array of int32"):
        copy.launch(1, 4, FakeDLPackCuda(1 << 20, (4,), code=0), np.zeros(4, np.float32), device="interp")


def test_host_dlpack_arrays_stay_host_arrays():
    from cubepy.runtime.device_arrays import describer

    assert describer(np.zeros(3)) is None

    class HostExport:      # a CPU DLPack producer that NumPy reads through __array__
        def __init__(self, a):
            self.a = a

        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __array__(self, dtype=None, copy=None):
            return self.a

    assert describer(HostExport(np.zeros(3))) is None


def test_a_library_array_type_is_registered_when_first_seen():
    import sys
    import types

    from cubepy.runtime.device_arrays import describer, register_device_array_module

    vendor = types.ModuleType("vendorlib")
    Tensor = type("Tensor", (), {"__module__": "vendorlib.core"})
    vendor.Tensor = Tensor
    seen = []

    def register(module):
        seen.append(module)
        register_device_array(module.Tensor, lambda t: DeviceArray(t, 1 << 20, (4,), np.dtype(np.float32), False))

    register_device_array_module("vendorlib", register)
    sys.modules["vendorlib"] = vendor
    try:
        assert describer(np.zeros(2)) is None and not seen
        d = describer(Tensor())(Tensor())
        assert seen == [vendor] and d.ptr == 1 << 20
        describer(Tensor())
        assert seen == [vendor]          # once
    finally:
        del sys.modules["vendorlib"]


def test_a_subclass_of_a_registered_array_type_is_read_as_that_type():
    # torch.nn.Parameter is a torch.Tensor; a CUDA one that requires grad refuses the generic
    # __cuda_array_interface__, so it must be read by the Tensor's own reader, fast path included
    from cubepy.runtime.device_arrays import QUICK_FACTS, RAW_READERS, describer

    class Base:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("requires grad")

    class Parameter(Base):
        pass

    def raw(a):
        return (np.dtype(np.float32), (4,), 1 << 20, True, False, None)
    register_device_array(Base, lambda b: DeviceArray(b, 1 << 20, (4,), np.dtype(np.float32), False), raw=raw,
                          platform="cuda")
    assert describer(Parameter())(Parameter()).ptr == 1 << 20
    assert RAW_READERS[Parameter] == RAW_READERS[Base] and Parameter in QUICK_FACTS
    with pytest.raises(TypeError, match="cuda device memory"):
        copy.launch(1, 4, Parameter(), np.zeros(4, np.float32), device="interp")


def test_dlpack_producers_are_asked_for_a_versioned_capsule_on_the_launch_stream(monkeypatch):
    from cubepy.runtime import dlpack
    from cubepy.runtime.device_arrays import from_dlpack

    monkeypatch.setitem(dlpack.CURRENT_STREAM, "cuda", lambda: 77)
    fake = FakeDLPackCuda(1 << 20, (8,))
    d = from_dlpack(fake)
    assert fake.asked == [(77, (1, 0))] and (d.ptr, d.shape, d.readonly) == (1 << 20, (8,), False)
    monkeypatch.setitem(dlpack.CURRENT_STREAM, "cuda", lambda: 0)        # CUDA's null stream is passed as 1
    from_dlpack(fake)
    assert fake.asked[-1] == (1, (1, 0))


def test_a_read_only_versioned_capsule_cannot_be_written():
    fake = FakeDLPackCuda(1 << 20, (4,), readonly=True)
    with pytest.raises(ValueError, match="is Mut but the array passed is read-only"):
        copy.launch(1, 4, np.zeros(4, np.float32), fake, device="interp")


def test_producers_from_before_dlpack_1_give_unversioned_capsules(monkeypatch):
    from cubepy.runtime import dlpack
    from cubepy.runtime.device_arrays import from_dlpack

    monkeypatch.delitem(dlpack.CURRENT_STREAM, "cuda", raising=False)     # as without CuPy: no stream to pass

    fake = FakeDLPackCuda(1 << 20, (8, 2), versioned=False)
    assert from_dlpack(fake).shape == (8, 2) and fake.asked == [(None, None)]
