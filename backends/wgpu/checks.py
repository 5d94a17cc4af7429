"""Types a WebGPU device cannot run, refused in one clear line before WGSL is generated."""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import Buffer, Kernel, walk
from cubepy.runtime.properties import DeviceProperties

# dtype -> (the cubepy feature flag, the WebGPU feature it comes from, what to use instead)
_NEEDS = {"f16": ("fp16", "shader-f16", "f32"), "f64": ("fp64", "shader-f64", "f32"),
          "i64": ("int64", "shader-int64", "i32"), "u64": ("int64", "shader-int64", "u32")}


def check_types(kernel: Kernel, properties: DeviceProperties) -> None:
    """Raise a CubeTypeError naming the kernel, the parameter or array, the type and the fix for
    the first type WGSL (bf16) or this adapter (f16, f64, 64-bit integers) lacks."""
    for what, dtype, loc in _types_used(kernel):
        if dtype.name == "bf16":
            raise CubeTypeError(f"{what} is bf16, which WGSL has no type for, so the WebGPU device "
                                f"'{properties.name}' cannot run it; use f16 or f32, or another device",
                                kernel.name, loc)
        need = _NEEDS.get(dtype.name)
        if need is not None and not properties.supports(need[0]):
            raise CubeTypeError(f"{what} is {dtype.name}, but the WebGPU adapter '{properties.name}' lacks the "
                                f"'{need[1]}' feature; use {need[2]}, or a device that lists {need[0]} in its "
                                "features", kernel.name, loc)


def _types_used(kernel: Kernel):
    for p in kernel.params:
        yield (f"array '{p.name}'" if isinstance(p, Buffer) else f"parameter '{p.name}'"), p.type.dtype, kernel.loc
    for b in kernel.buffers:
        yield f"{b.kind} array '{b.name}'", b.type.dtype, kernel.loc
    for op in walk(kernel.body):
        if op.result is not None:
            yield f"a value of this {op.opcode}", op.result.type.dtype, op.loc


__all__ = ["check_types"]
