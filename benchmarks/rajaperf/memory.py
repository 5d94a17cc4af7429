"""Where a run keeps its arrays: NumPy copies on host devices (``cpu``, ``interp``), CuPy arrays on
``cuda``, pyopencl arrays on the device's queue on ``opencl``. Every contender of a kernel (cubepy
and peers) works on the same device arrays."""

from __future__ import annotations

import numpy as np


class HostMemory:
    platform = "cpu"

    def upload(self, host: np.ndarray):
        return host.copy()

    def download(self, array) -> np.ndarray:
        return np.array(array, copy=True)

    def assign(self, array, host: np.ndarray) -> None:
        np.copyto(array, host)

    def synchronize(self) -> None:
        pass


class CupyMemory:
    platform = "cuda"

    def __init__(self):
        import cupy
        self.cupy = cupy

    def upload(self, host: np.ndarray):
        return self.cupy.asarray(host)

    def download(self, array) -> np.ndarray:
        return self.cupy.asnumpy(array)

    def assign(self, array, host: np.ndarray) -> None:
        array.set(np.ascontiguousarray(host))

    def synchronize(self) -> None:
        self.cupy.cuda.runtime.deviceSynchronize()


class OpenCLMemory:
    platform = "opencl"

    def __init__(self, device):
        import pyopencl.array
        self.arrays = pyopencl.array
        self.queue = device.backend.queue(device.properties)      # arrays of this queue are used in place

    def upload(self, host: np.ndarray):
        return self.arrays.to_device(self.queue, np.ascontiguousarray(host))

    def download(self, array) -> np.ndarray:
        return array.get(self.queue)

    def assign(self, array, host: np.ndarray) -> None:
        array.set(np.ascontiguousarray(host), queue=self.queue)

    def synchronize(self) -> None:
        self.queue.finish()


def memory_for(device):
    backend = device.properties.backend
    if backend in ("cpu", "interp"):
        return HostMemory()
    if backend == "cuda":
        return CupyMemory()
    if backend == "opencl":
        return OpenCLMemory(device)
    raise ValueError(f"the suite runs on cpu, interp, cuda and opencl devices, not {backend!r}")
