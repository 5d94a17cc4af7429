"""Launching through the CUDA driver's cuLaunchKernel with a prepared parameter block.

CuPy's kernel call packs its arguments anew each time; a warm cubepy launch already knows the
layout, so it writes the values into ctypes slots made once per executable and calls the driver
directly (about a microsecond). Used when libcuda and the function handle are reachable;
otherwise the backend calls CuPy.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

_CTYPES = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double,
}
_driver = None
_driver_failed = False


def _cu_launch_kernel():
    global _driver, _driver_failed
    if _driver is None and not _driver_failed:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuLaunchKernel
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                           ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _driver = fn
        except (OSError, AttributeError):
            _driver_failed = True
    return _driver


class DriverLauncher:
    """One executable's parameter block: ``set`` functions per slot, then ``launch``."""

    def __init__(self, handle: int, slot_types: list[str]):
        self.handle = handle
        self.lock = threading.Lock()
        self.storage = []
        for name in slot_types:
            if name == "pointer":
                self.storage.append(ctypes.c_uint64())
            elif name == "float16":          # passed as its bits
                self.storage.append(ctypes.c_uint16())
            else:
                self.storage.append(_CTYPES[name]())
        self.params = (ctypes.c_void_p * len(self.storage))(*(ctypes.addressof(s) for s in self.storage))
        self.half = [name == "float16" for name in slot_types]

    def launch(self, values: list, grid, block, shared_bytes: int, stream: int) -> None:
        launch = _cu_launch_kernel()
        with self.lock:      # the slots are shared: one launch of this executable at a time
            for slot, value, half in zip(self.storage, values, self.half):
                slot.value = int(np.float16(value).view(np.uint16)) if half else value
            err = launch(self.handle, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                         stream, self.params, None)
        if err:
            raise RuntimeError(f"cuLaunchKernel failed with CUDA error {err}")


def driver_launcher(function, slot_types: list[str]) -> DriverLauncher | None:
    """A launcher for a CuPy function (RawKernel or cupy.cuda.Function), or None if the driver
    or the function's handle cannot be reached."""
    if _cu_launch_kernel() is None:
        return None
    kernel = getattr(function, "kernel", function)
    handle = getattr(kernel, "ptr", None)
    if not handle:
        return None
    if any(t not in _CTYPES and t not in ("pointer", "float16") for t in slot_types):
        return None
    return DriverLauncher(int(handle), slot_types)
