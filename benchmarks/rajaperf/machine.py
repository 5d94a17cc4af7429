"""What the figures were measured on: CPU model and SIMD width, GPU, library versions.

Printed at the top of every run and stored in its JSON, so figures from different machines are
never mixed up."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def simd_width_bits() -> int:
    """The widest vector registers the CPU has: 512 (AVX-512), 256 (AVX2), 128 (SSE2/NEON)."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return 512
    if "avx2" in flags:
        return 256
    return 128


def llvm_cpu_name() -> str:
    try:
        import llvmlite.binding as llvm
        return llvm.get_host_cpu_name()
    except Exception:        # llvmlite is a core dependency, but its build may lack the call
        return "unknown"


def describe(device) -> dict:
    """The machine and the device, as a JSON-ready dict."""
    import numpy as np

    import cubepy
    info = {
        "cpu": cpu_model(),
        "cpu_llvm_name": llvm_cpu_name(),
        "simd_bits": simd_width_bits(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cubepy": cubepy.__version__,
        "device": repr(device),
        "backend": device.properties.backend,
        "device_name": device.properties.name,
    }
    for module in ("numba", "llvmlite", "cupy", "triton", "torch"):
        try:
            info[module] = __import__(module).__version__
        except Exception:     # optional peers: absent here, or failing to import
            pass
    if device.properties.backend == "cuda":
        try:
            import cupy
            info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
            info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        except Exception:
            pass
    return info


def banner(info: dict) -> str:
    """One line per fact, for the top of the output."""
    lines = [f"cpu: {info['cpu']} ({info['cpu_llvm_name']}, {info['simd_bits']}-bit SIMD, "
             f"{info['cpu_count']} cores)",
             f"device: {info['device']}"]
    versions = ", ".join(f"{k} {info[k]}" for k in ("python", "numpy", "cubepy", "numba", "llvmlite", "cupy", "triton")
                         if k in info)
    lines.append(f"versions: {versions}")
    return "\n".join(lines)
