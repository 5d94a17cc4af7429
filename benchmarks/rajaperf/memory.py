"""Where a run keeps its arrays: NumPy copies on host devices (``cpu``, ``interp``), CuPy arrays on
``cuda``. Every contender of a kernel (cubepy and peers) works on the same device arrays."""

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


def memory_for(device):
    backend = device.properties.backend
    if backend in ("cpu", "interp"):
        return HostMemory()
    if backend == "cuda":
        return CupyMemory()
    raise ValueError(f"the suite runs on cpu, interp and cuda devices, not {backend!r}")
