"""A native XLA FFI handler for one compiled kernel: JAX calls the kernel with no Python in between.

The handler (LLVM IR, compiled at O2 into its own small MCJIT module) reads XLA's call frame with
the byte offsets of `cubepy.runtime.xla_ffi`'s ctypes layout of ``xla/ffi/api/c_api.h`` (one
source of truth for the ABI), answers the metadata query with the runtime's API version, fills
the kernel's argument block from the buffers (pointers, extents, scalars loaded from 0-d
buffers), zero-fills the fresh outputs, and runs every cube on XLA's calling thread. A checked
kernel's error record is read after the run; if a unit went out of bounds, a Python callback
turns the record into the same OutOfBoundsError message as every other launch and returns it to
XLA as an error. The handler embeds process addresses, so it is compiled per process (about
10 ms), never cached on disk.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

from cubepy.runtime import xla_ffi

from . import jit
from .codegen import ERR_WORDS
from .llvmtext import scalar_type

_FRAME, _LIST, _BUF = xla_ffi._CallFrame, xla_ffi._List, xla_ffi._Buffer
OFFSETS = {
    "ext": _FRAME.extension_start.offset, "api": _FRAME.api.offset, "stage": _FRAME.stage.offset,
    "args": _FRAME.args.offset + _LIST.items.offset, "rets": _FRAME.rets.offset + _LIST.items.offset,
    "ext_type": xla_ffi._ExtensionBase.type.offset, "metadata": xla_ffi._MetadataExtension.metadata.offset,
    "md_major": xla_ffi._Metadata.api_version.offset + xla_ffi._ApiVersion.major.offset,
    "md_minor": xla_ffi._Metadata.api_version.offset + xla_ffi._ApiVersion.minor.offset,
    "md_traits": xla_ffi._Metadata.traits.offset,
    "api_major": xla_ffi._Api.api_version.offset + xla_ffi._ApiVersion.major.offset,
    "api_minor": xla_ffi._Api.api_version.offset + xla_ffi._ApiVersion.minor.offset,
    "buf_data": _BUF.data.offset, "buf_dims": _BUF.dims.offset,
}
REPORT = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)   # (frame, error record) -> error


@dataclass
class NativeHandler:
    """A compiled handler: ``address`` is what XLA calls; the rest must stay alive with it."""

    address: int
    loaded: object
    report: object


def build_handler(executable, sources: dict[int, tuple[str, int]], zeroed: list[tuple[int, int, int]],
                  cubes: int, cube_count: tuple, report: Callable[[int, int], int | None]) -> NativeHandler:
    """The handler running ``executable`` over ``cubes`` cubes.

    ``sources[param]`` says which buffer holds IR parameter ``param``: ("arg", k) or ("ret", k).
    ``zeroed`` lists the results to zero-fill first, as (result index, rank, element size).
    ``report(frame, record)`` makes the XLA error of a filled error record.
    """
    callback = REPORT(report)
    o = OFFSETS
    lines: list[str] = []
    emit = lines.append
    counter = iter(range(1 << 30))

    def tmp() -> str:
        return f"%t{next(counter)}"

    def field(base: str, offset: int, ty: str) -> str:
        p, v = tmp(), tmp()
        emit(f"  {p} = getelementptr i8, ptr {base}, i64 {offset}")
        emit(f"  {v} = load {ty}, ptr {p}, align 4")
        return v

    def buffer(kind: str, index: int) -> str:
        items = args if kind == "arg" else rets
        p, b = tmp(), tmp()
        emit(f"  {p} = getelementptr ptr, ptr {items}, i64 {index}")
        emit(f"  {b} = load ptr, ptr {p}, align 8")
        return b

    def dim(b: str, axis: int) -> str:
        dims = field(b, o["buf_dims"], "ptr")
        p, v = tmp(), tmp()
        emit(f"  {p} = getelementptr i64, ptr {dims}, i64 {axis}")
        emit(f"  {v} = load i64, ptr {p}, align 8")
        return v

    slots = executable.layout.slots
    emit("execute:")
    args, rets = field("%frame", o["args"], "ptr"), field("%frame", o["rets"], "ptr")
    for index, rank, size in zeroed:
        b = buffer("ret", index)
        count = "1"
        for axis in range(rank):
            n = tmp()
            emit(f"  {n} = mul i64 {count}, {dim(b, axis)}")
            count = n
        nbytes = tmp()
        emit(f"  {nbytes} = mul i64 {count}, {size}")
        emit(f"  call void @llvm.memset.p0.i64(ptr {field(b, o['buf_data'], 'ptr')}, i8 0, i64 {nbytes}, i1 false)")
    emit(f"  %block = alloca [{len(slots)} x i64], align 8")
    emit(f"  %err = alloca [{ERR_WORDS} x i64], align 8")
    emit(f"  call void @llvm.memset.p0.i64(ptr %err, i8 0, i64 {8 * ERR_WORDS}, i1 false)")
    for i, slot in enumerate(slots):
        kind = slot[0]
        slot_p = tmp()
        emit(f"  {slot_p} = getelementptr i64, ptr %block, i64 {i}")
        if kind in ("ptr", "shape", "scalar"):
            b = buffer(*sources[slot[1]])
        if kind == "ptr":
            emit(f"  store ptr {field(b, o['buf_data'], 'ptr')}, ptr {slot_p}, align 8")
        elif kind == "shape":
            emit(f"  store i64 {dim(b, slot[2])}, ptr {slot_p}, align 8")
        elif kind == "scalar":
            ty = scalar_type(slot[2], True)
            value = tmp()
            emit(f"  {value} = load {ty}, ptr {field(b, o['buf_data'], 'ptr')}, align 1")
            emit(f"  store i64 0, ptr {slot_p}, align 8")
            emit(f"  store {ty} {value}, ptr {slot_p}, align 8")
        elif kind == "err":
            emit(f"  store ptr %err, ptr {slot_p}, align 8")
        else:
            emit(f"  store i64 {cube_count['xyz'.index(kind[2])]}, ptr {slot_p}, align 8")
    ws_size = executable.layout.ws_size
    workspace = "null"
    if ws_size:
        emit(f"  %ws_raw = call ptr @calloc(i64 {ws_size + 64}, i64 1)")
        emit("  %ws_int = ptrtoint ptr %ws_raw to i64")
        emit("  %ws_aligned = add i64 %ws_int, 63")
        emit("  %ws_int2 = and i64 %ws_aligned, -64")
        emit("  %ws = inttoptr i64 %ws_int2 to ptr")
        workspace = "%ws"
    emit(f"  call void inttoptr (i64 {executable.loaded.address} to ptr)(ptr %block, i64 0, i64 {cubes}, "
         f"ptr {workspace})")
    if ws_size:
        emit("  call void @free(ptr %ws_raw)")
    emit("  %flag = load i64, ptr %err, align 8")
    emit("  %failed = icmp ne i64 %flag, 0")
    emit("  br i1 %failed, label %report, label %done")
    emit("report:")
    emit(f"  %error = call ptr inttoptr (i64 {ctypes.cast(callback, ctypes.c_void_p).value} to ptr)"
         "(ptr %frame, ptr %err)")
    emit("  ret ptr %error")
    emit("done:")
    emit("  ret ptr null")
    text = _frame_prologue() + "\n".join(lines) + "\n}\n" + _DECLARATIONS
    st = jit.init()
    module = f'target triple = "{st["triple"]}"\ntarget datalayout = "{st["datalayout"]}"\n\n{text}'
    loaded = jit.Loaded(jit.init()["tm"].emit_object(jit.optimize(module)), "cubepy_xla_ffi_handler")
    return NativeHandler(loaded.address, loaded, callback)


def _frame_prologue() -> str:
    """The metadata answer and the stage test, before the execute block."""
    o = OFFSETS
    return f"""define ptr @cubepy_xla_ffi_handler(ptr %frame) {{
entry:
  %ext_p = getelementptr i8, ptr %frame, i64 {o["ext"]}
  %ext = load ptr, ptr %ext_p, align 8
  %has_ext = icmp ne ptr %ext, null
  br i1 %has_ext, label %extension, label %stage
extension:
  %type_p = getelementptr i8, ptr %ext, i64 {o["ext_type"]}
  %type = load i32, ptr %type_p, align 4
  %is_metadata = icmp eq i32 %type, {xla_ffi.EXTENSION_METADATA}
  br i1 %is_metadata, label %metadata, label %stage
metadata:
  %md_p = getelementptr i8, ptr %ext, i64 {o["metadata"]}
  %md = load ptr, ptr %md_p, align 8
  %api_p = getelementptr i8, ptr %frame, i64 {o["api"]}
  %api = load ptr, ptr %api_p, align 8
  %has_api = icmp ne ptr %api, null
  br i1 %has_api, label %version, label %old_version
version:
  %major_p = getelementptr i8, ptr %api, i64 {o["api_major"]}
  %major = load i32, ptr %major_p, align 4
  %minor_p = getelementptr i8, ptr %api, i64 {o["api_minor"]}
  %minor = load i32, ptr %minor_p, align 4
  br label %answer
old_version:
  br label %answer
answer:
  %ma = phi i32 [ %major, %version ], [ 0, %old_version ]
  %mi = phi i32 [ %minor, %version ], [ 1, %old_version ]
  %md_major = getelementptr i8, ptr %md, i64 {o["md_major"]}
  store i32 %ma, ptr %md_major, align 4
  %md_minor = getelementptr i8, ptr %md, i64 {o["md_minor"]}
  store i32 %mi, ptr %md_minor, align 4
  %md_traits = getelementptr i8, ptr %md, i64 {o["md_traits"]}
  store i32 0, ptr %md_traits, align 4
  ret ptr null
stage:
  %stage_p = getelementptr i8, ptr %frame, i64 {o["stage"]}
  %stage_v = load i32, ptr %stage_p, align 4
  %executing = icmp eq i32 %stage_v, {xla_ffi.STAGE_EXECUTE}
  br i1 %executing, label %execute, label %skip
skip:
  ret ptr null
"""


_DECLARATIONS = """
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare ptr @calloc(i64, i64)
declare void @free(ptr)
"""
