"""cubepy: write a compute kernel once, in Python, and run it on any vendor's hardware.

    import numpy as np
    import cubepy as cb
    from cubepy import f32, Array, Mut

    @cb.kernel
    def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]

    saxpy[cb.CubeCount(4), cb.CubeDim(256)](x, y, 2.0)
"""

from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BackendUnavailableError,
    CompileError,
    CubeError,
    CubeIndexError,
    CubeNameError,
    CubeSyntaxError,
    CubeTypeError,
    CubeValueError,
    DivergenceError,
    LaunchError,
    OutOfBoundsError,
    RaceError,
    ToolchainError,
)
from .ir.types import DType, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from .lang.builtins import BUILTINS as _BUILTINS
from .lang.builtins import INTRINSICS as _INTRINSICS
from .lang.region import Linear1D, Partitioning, Strided1D, Tile2D, UnsafePartitioning
from .lang.types import Array, Comptime, Mut, Region, lines
from .log import configure as _configure_logging
from .runtime.devices import Device, current_device, device, devices, set_device, use_device
from .runtime.graph_breaks import watch as _watch_torch_compile
from .runtime.kernel import CubeFunction, KernelFunction, func, kernel
from .runtime.profiling import compile_stats, profile
from .runtime.properties import DeviceProperties
from .runtime.registry import backend_names, register_backend
from .runtime.residency import Resident, TransferWarning, from_dlpack, preload, preload_mut
from .runtime.topology import CubeCount, CubeDim
from .runtime.verify_partitioning import verify_partitioning

globals().update(_BUILTINS)
globals().update(_INTRINSICS)

__version__ = "0.1.0"

_watch_torch_compile()      # a launch under torch.compile is a clean graph break
_configure_logging()

__all__ = [
    "Array", "ArgumentTypeError", "ArgumentValueError", "BackendUnavailableError", "CompileError", "Comptime",
    "CubeCount", "CubeDim", "CubeError", "CubeFunction", "CubeIndexError", "CubeNameError", "CubeSyntaxError",
    "CubeTypeError", "CubeValueError", "DType", "Device", "DeviceProperties", "DivergenceError", "KernelFunction",
    "LaunchError", "Linear1D", "Mut", "OutOfBoundsError", "Partitioning", "RaceError", "Region", "Resident",
    "ToolchainError", "Strided1D", "Tile2D", "TransferWarning", "UnsafePartitioning", "backend_names", "bf16",
    "bool_", "compile_stats", "current_device", "device", "devices", "f16", "f32", "f64", "from_dlpack", "func",
    "i8", "i16", "i32", "i64", "kernel", "lines", "preload", "preload_mut", "profile", "register_backend",
    "set_device", "u8", "u16", "u32", "u64", "use_device", "verify_partitioning", *_BUILTINS, *_INTRINSICS,
]
