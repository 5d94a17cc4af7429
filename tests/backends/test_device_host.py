"""The shared GPU host layer (cubepy/runtime/device_host.py) on a simulated device: host memory
posing as device memory, kernels run by the interpreter. What the layer writes once (the argument
walk, copies by type, the ledger, deferred error records, cb.preload's DeviceBuffer) is checked
here without a GPU; each GPU backend runs the conformance suite on top of it."""

from __future__ import annotations

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32, i32
from cubepy.runtime import registry
from cubepy.runtime.device_host import MIN_ALLOCATION, DeviceBackend, DeviceBuffer
from tests.conftest import poisoned


class SimulatedGPU(DeviceBackend):
    """Device memory is uint8 NumPy buffers; enqueue runs the kernel on views of them."""

    name = "simgpu"
    device_array_platforms = frozenset({"simgpu"})

    def __init__(self):
        self.interp = registry.load_backend("interp")
        self.allocated, self.freed, self.copies_in, self.copies_out, self.finishes = [], [], 0, 0, 0
        self.records: dict = {}

    def probe(self, **options):
        return self.interp.probe(**options)

    def compile(self, kernel, properties):
        return self.interp.compile(kernel, properties)

    def alloc(self, nbytes, properties):
        assert nbytes >= MIN_ALLOCATION
        buffer = np.full(nbytes, 0xAB, np.uint8)        # device memory starts as garbage
        self.allocated.append(buffer)
        return buffer

    def free(self, buffer):
        self.freed.append(buffer)

    def copy_in(self, buffer, host, properties):
        self.copies_in += 1
        buffer[:host.nbytes] = host.reshape(-1).view(np.uint8)

    def copy_out(self, host, buffer, properties):
        self.copies_out += 1
        host.reshape(-1).view(np.uint8)[:] = buffer[:host.nbytes]

    def enqueue(self, executable, kernel, cube_count, cube_dim, bound, properties):
        args = []
        for param, value in zip(kernel.params, bound):
            if isinstance(param, cb.runtime.device_host.Buffer):
                dtype = np.dtype(param.type.dtype.numpy_name)
                count = int(np.prod(value.shape))
                args.append(value.buffer[:count * dtype.itemsize].view(dtype).reshape(value.shape))
            else:
                args.append(value)
        try:
            self.interp.launch(executable, kernel, cube_count, cube_dim, args, properties, {})
        except cb.OutOfBoundsError as e:        # a GPU writes its record and goes on
            self.records[executable] = e

    def finish(self, properties):
        self.finishes += 1

    def has_error_record(self, executable):
        return True

    def read_record(self, executable):
        return self.records.pop(executable, None)


@pytest.fixture
def gpu(request):
    backend = SimulatedGPU()
    cb.register_backend("simgpu", backend)
    # a plane size of its own per test: a fresh device, not one cached by an earlier test
    yield cb.device("simgpu", plane_dim=8, test=request.node.name)
    registry._added.pop("simgpu", None)
    registry._loaded.pop("simgpu", None)
    registry.backend_names.cache_clear()


@cb.kernel
def axpy(x: Array[f32], y: Mut[Array[f32]], flags: Mut[Array[cb.bool_]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]
        flags[i] = x[i] > 0.0


@cb.kernel
def gather(x: Array[f32], idx: Array[i32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        out[i] = x[idx[i]]


def test_numpy_arguments_go_there_and_mut_ones_come_back(gpu, rng):
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    flags = np.zeros(300, np.bool_)
    expected = np.float32(2.0) * x + y
    axpy[5, 64](x, y, flags, 2.0, device=gpu)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(flags, x > 0)
    backend = gpu.backend
    assert backend.copies_in == 3 and backend.copies_out == 2      # x is only read: it does not come back
    assert len(backend.freed) == len(backend.allocated) == 3       # every staged copy is given back


def test_empty_arrays_get_an_allocation_and_no_copies(gpu):
    axpy[1, 64](np.zeros(0, np.float32), np.zeros(0, np.float32), np.zeros(0, np.bool_), 1.0, device=gpu)
    assert gpu.backend.copies_in == gpu.backend.copies_out == 0 and len(gpu.backend.allocated) == 3


def test_a_deferred_error_record_raises_at_the_copy_back_or_synchronize(gpu, rng):
    x = rng.standard_normal(5).astype(np.float32)
    out = poisoned(4, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="kernel 'gather'.*array 'x' of shape \\(5,\\)"):
        gather[1, 32](x, np.array([0, 1, 9, 2], np.int32), out, device=gpu)     # a copy back: read now
    x_dev, out_dev = cb.preload(x, device=gpu), cb.preload_mut(poisoned(4, np.float32), device=gpu)
    gather[1, 32](x_dev, cb.preload(np.array([4, 0, 7, 1], np.int32), device=gpu), out_dev, device=gpu)
    with pytest.raises(cb.OutOfBoundsError, match="index \\(7,\\)"):           # nothing came back: at sync
        gpu.synchronize()
    gpu.synchronize()                                                          # the record was cleared


def test_preloaded_arrays_stay_in_device_memory_and_come_back_with_to_host(gpu, rng):
    x = rng.standard_normal(200).astype(np.float32)
    x_dev = cb.preload(x, device=gpu)
    y_dev = cb.preload_mut(np.ones(200, np.float32), device=gpu)
    flags_dev = cb.preload_mut(np.zeros(200, np.bool_), device=gpu)
    assert isinstance(y_dev.data, DeviceBuffer) and y_dev.data.platform == "simgpu"
    before = gpu.backend.copies_in
    for _ in range(3):
        axpy[4, 64](x_dev, y_dev, flags_dev, 1.0, device=gpu)
    assert gpu.backend.copies_in == before                       # launches copy nothing
    expected = np.ones(200, np.float32)
    for _ in range(3):
        expected = x + expected
    np.testing.assert_array_equal(y_dev.to_host(), expected)
    np.testing.assert_array_equal(flags_dev.to_host(), x > 0)


def test_the_same_numpy_array_uploaded_on_each_launch_warns(gpu, rng):
    x = rng.standard_normal(64).astype(np.float32)
    y, flags = np.zeros(64, np.float32), np.zeros(64, np.bool_)
    with pytest.warns(cb.TransferWarning, match="argument 'x' is the same NumPy array"):
        for _ in range(4):
            axpy[1, 64](x, y, flags, 1.0, device=gpu)


def test_a_preloaded_device_buffer_copies(gpu, rng):
    x = rng.standard_normal(50).astype(np.float32)
    x_dev = cb.preload_mut(x, device=gpu)
    twin = x_dev.copy()
    assert twin.data is not x_dev.data
    np.testing.assert_array_equal(twin.to_host(), x)
