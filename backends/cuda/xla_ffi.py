"""The CUDA backend's native XLA FFI handler: JAX launches a compiled kernel on XLA's stream with
no Python (and no GIL) in between.

Written with `cubepy.runtime.xla_ffi_native.HandlerWriter`: the handler checks every buffer
against the i32 index limit, takes XLA's stream, zero-fills the fresh outputs
(``cuMemsetD8Async``), packs the kernel's parameters (buffer addresses, extents as i32, the error
record's address) and calls ``cuLaunchKernel`` from libcuda, resolved once per process. A checked
kernel waits for its stream and reads the error record's flag, so an out-of-bounds access is
reported by the call that made it, with the usual message (``checked=False`` kernels stay fully
asynchronous). Scalar parameters arrive as 0-d device buffers and are read by the kernel
(``scalar_ref``), so a kernel with a by-value scalar gets no native handler.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache

from cubepy.runtime.xla_ffi_native import HandlerWriter, NativeHandler

DRIVER_FUNCTIONS = ("cuLaunchKernel", "cuMemsetD8Async", "cuStreamSynchronize", "cuMemcpyDtoH_v2")


@cache
def driver_functions() -> dict[str, int]:
    """Addresses of the libcuda entry points the handler calls."""
    lib = ctypes.CDLL("libcuda.so.1")
    return {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in DRIVER_FUNCTIONS}


def build_handler(executable, sources: dict[int, tuple[str, int]], ranks: dict[int, int],
                  zeroed: list[tuple[int, int, int]], cube_count: tuple, cube_dim: tuple,
                  report: Callable[[int, int, int], int | None],
                  functions: dict[str, int] | None = None) -> NativeHandler | None:
    """The handler launching ``executable`` (arguments as for the CPU backend's handler), or None
    when a parameter has no native form here (a by-value scalar or array)."""
    rendered = executable.rendered
    if any(slot.kind in ("scalar", "inline") for slot in rendered.args):
        return None
    fn = functions or driver_functions()
    w = HandlerWriter(report)
    for param, (kind, index) in sources.items():
        if ranks[param]:
            w.require_indexable(kind, index, ranks[param], param)
    stream = w.stream()
    for index, rank, size in zeroed:
        nbytes, address, result = w.tmp(), w.tmp(), w.tmp()
        w.emit(f"{nbytes} = mul i64 {w.elements('ret', index, rank)}, {size}")
        w.emit(f"{address} = ptrtoint ptr {w.data('ret', index)} to i64")
        w.emit(f"{result} = call i32 {w.address(fn['cuMemsetD8Async'])}(i64 {address}, i8 0, i64 {nbytes}, "
               f"ptr {stream})")
        _check(w, result)
    count = len(rendered.args)
    w.emit(f"%cells = alloca [{max(1, count)} x i64], align 8")
    w.emit(f"%pointers = alloca [{max(1, count)} x ptr], align 8")
    for k, slot in enumerate(rendered.args):
        cell, pointer = w.tmp(), w.tmp()
        w.emit(f"{cell} = getelementptr i64, ptr %cells, i64 {k}")
        if slot.kind == "buffer":
            w.emit(f"store ptr {w.data(*sources[slot.param])}, ptr {cell}, align 8")
        elif slot.kind == "shape":
            extent = w.tmp()
            w.emit(f"{extent} = trunc i64 {w.dim(*sources[slot.param], slot.dim)} to i32")
            w.emit(f"store i32 {extent}, ptr {cell}, align 8")
        elif slot.kind == "launch_ok":          # no answer from the host: the cube's test decides
            w.emit(f"store i32 0, ptr {cell}, align 8")
        else:                                   # the error record
            w.emit(f"store i64 {executable.error.data.ptr}, ptr {cell}, align 8")
        w.emit(f"{pointer} = getelementptr ptr, ptr %pointers, i64 {k}")
        w.emit(f"store ptr {cell}, ptr {pointer}, align 8")
    (gx, gy, gz), (bx, by, bz) = cube_count, cube_dim
    function = executable.function(executable.shape(cube_count))      # the build for this count's shape
    launched = w.tmp()
    w.emit(f"{launched} = call i32 {w.address(fn['cuLaunchKernel'])}(ptr {w.address(function.ptr)}, "
           f"i32 {gx}, i32 {gy}, i32 {gz}, i32 {bx}, i32 {by}, i32 {bz}, i32 {rendered.dynamic_shared_bytes}, "
           f"ptr {stream}, ptr %pointers, ptr null)")
    _check(w, launched)
    if executable.error is not None:
        waited, copied, flag = w.tmp(), w.tmp(), w.tmp()
        w.emit(f"{waited} = call i32 {w.address(fn['cuStreamSynchronize'])}(ptr {stream})")
        _check(w, waited)
        w.emit("%flag_word = alloca i32, align 4")
        w.emit(f"{copied} = call i32 {w.address(fn['cuMemcpyDtoH_v2'])}(ptr %flag_word, "
               f"i64 {executable.error.data.ptr}, i64 4)")
        _check(w, copied)
        w.emit(f"{flag} = load i32, ptr %flag_word, align 4")
        w.fail_if(f"icmp ne i32 {flag}, 0", "out_of_bounds", "0")
    return w.finish()


def _check(w: HandlerWriter, result: str) -> None:
    """Fail with the driver's error code when a CUresult is not CUDA_SUCCESS."""
    code = w.tmp()
    w.emit(f"{code} = zext i32 {result} to i64")
    w.fail_if(f"icmp ne i32 {result}, 0", "driver", code)
