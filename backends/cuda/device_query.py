"""What the CUDA backend asks a GPU at its probe: a dozen attributes and the name, each asked on its
own. CuPy's ``Device.attributes`` asks for every attribute the runtime has and
``getDeviceProperties`` fills the whole property struct; a fresh process paid for both before its
first launch (benchmarks/gpu/cold_start.py)."""

from __future__ import annotations

import ctypes
import sys

# cudaDeviceAttr codes (the CUDA runtime's ABI), used where CuPy does not name them
_ATTRIBUTES = {
    "MaxThreadsPerBlock": 1, "MaxBlockDimX": 2, "MaxBlockDimY": 3, "MaxBlockDimZ": 4,
    "MaxGridDimX": 5, "MaxGridDimY": 6, "MaxGridDimZ": 7, "MaxSharedMemoryPerBlock": 8, "WarpSize": 10,
    "MultiProcessorCount": 16, "ComputeCapabilityMajor": 75, "ComputeCapabilityMinor": 76,
    "MaxSharedMemoryPerBlockOptin": 97,
}


def attributes(cp, index: int) -> dict[str, int]:
    """The attributes of GPU ``index`` the backend uses, by their CuPy names."""
    runtime = cp.cuda.runtime
    return {name: int(runtime.deviceGetAttribute(getattr(runtime, f"cudaDevAttr{name}", code), index))
            for name, code in _ATTRIBUTES.items()}


def name(cp, index: int) -> str:
    """The GPU's name, from the driver (cuDeviceGetName); the runtime's property struct where the
    driver library cannot be opened here."""
    try:
        driver = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
        handle, text = ctypes.c_int(), ctypes.create_string_buffer(256)
        if driver.cuDeviceGet(ctypes.byref(handle), index) == 0 and \
                driver.cuDeviceGetName(text, len(text), handle) == 0 and text.value:
            return text.value.decode(errors="replace")
    except (OSError, AttributeError):
        pass
    raw = cp.cuda.runtime.getDeviceProperties(index)["name"]
    return raw.decode() if isinstance(raw, bytes) else str(raw)
