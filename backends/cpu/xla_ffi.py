"""The CPU backend's native XLA FFI handler: JAX calls a compiled kernel with no Python in between.

Written with `cubepy.runtime.xla_ffi_native.HandlerWriter`: the handler checks every buffer
against the i32 index limit, zero-fills the fresh outputs, fills the kernel's argument block from
the buffers (pointers, extents, scalars loaded from 0-d buffers), and runs every cube on XLA's
calling thread; a checked kernel's error record is read after the run, and a unit that went out
of bounds becomes the usual OutOfBoundsError message through the Python report callback.
"""

from __future__ import annotations

from collections.abc import Callable

from cubepy.runtime.xla_ffi_native import HandlerWriter, NativeHandler

from .codegen import ERR_WORDS
from .llvmtext import scalar_type


def build_handler(executable, sources: dict[int, tuple[str, int]], ranks: dict[int, int],
                  zeroed: list[tuple[int, int, int]], cubes: int, cube_count: tuple,
                  report: Callable[[int, int, int], int | None]) -> NativeHandler:
    """The handler running ``executable`` over ``cubes`` cubes.

    ``sources[param]`` says which buffer holds IR parameter ``param`` (("arg", k) or ("ret", k)),
    ``ranks[param]`` its rank (0 for a scalar); ``zeroed`` lists the results to zero-fill first,
    as (result index, rank, element size); ``report`` makes the XLA error of a failure.
    """
    w = HandlerWriter(report)
    for param, (kind, index) in sources.items():
        if ranks[param]:
            w.require_indexable(kind, index, ranks[param], param)
    for index, rank, size in zeroed:
        nbytes = w.tmp()
        w.emit(f"{nbytes} = mul i64 {w.elements('ret', index, rank)}, {size}")
        w.emit(f"call void @llvm.memset.p0.i64(ptr {w.data('ret', index)}, i8 0, i64 {nbytes}, i1 false)")
    slots = executable.layout.slots
    w.emit(f"%block = alloca [{len(slots)} x i64], align 8")
    w.emit(f"%err = alloca [{ERR_WORDS} x i64], align 8")
    w.emit(f"call void @llvm.memset.p0.i64(ptr %err, i8 0, i64 {8 * ERR_WORDS}, i1 false)")
    for i, slot in enumerate(slots):
        kind, cell = slot[0], w.tmp()
        w.emit(f"{cell} = getelementptr i64, ptr %block, i64 {i}")
        if kind == "ptr":
            w.emit(f"store ptr {w.data(*sources[slot[1]])}, ptr {cell}, align 8")
        elif kind == "shape":
            w.emit(f"store i64 {w.dim(*sources[slot[1]], slot[2])}, ptr {cell}, align 8")
        elif kind == "scalar":
            ty, value = scalar_type(slot[2], True), w.tmp()
            w.emit(f"{value} = load {ty}, ptr {w.data(*sources[slot[1]])}, align 1")
            w.emit(f"store i64 0, ptr {cell}, align 8")
            w.emit(f"store {ty} {value}, ptr {cell}, align 8")
        elif kind == "err":
            w.emit(f"store ptr %err, ptr {cell}, align 8")
        else:                                  # ccx, ccy, ccz: the cube count
            w.emit(f"store i64 {cube_count['xyz'.index(kind[2])]}, ptr {cell}, align 8")
    workspace, ws_size = "null", executable.layout.ws_size
    if ws_size:     # zeroed, 64-byte aligned, one per call: XLA may run calls on several threads
        w.declarations |= {"declare ptr @calloc(i64, i64)", "declare void @free(ptr)"}
        w.emit(f"%ws_raw = call ptr @calloc(i64 {ws_size + 64}, i64 1)")
        w.emit("%ws_int = ptrtoint ptr %ws_raw to i64")
        w.emit("%ws_up = add i64 %ws_int, 63")
        w.emit("%ws_aligned = and i64 %ws_up, -64")
        w.emit("%ws = inttoptr i64 %ws_aligned to ptr")
        workspace = "%ws"
    w.emit(f"call void {w.address(executable.loaded.address)}(ptr %block, i64 0, i64 {cubes}, ptr {workspace})")
    if ws_size:
        w.emit("call void @free(ptr %ws_raw)")
    flag, record = w.tmp(), w.tmp()
    w.emit(f"{flag} = load i64, ptr %err, align 8")
    w.emit(f"{record} = ptrtoint ptr %err to i64")
    w.fail_if(f"icmp ne i64 {flag}, 0", "out_of_bounds", record)
    return w.finish()
