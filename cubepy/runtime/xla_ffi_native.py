"""Native XLA FFI handlers: LLVM IR (compiled by llvmlite, a core dependency) that reads XLA's call
frame and runs a backend's launch with no Python, and no GIL, in between.

`HandlerWriter` writes the fixed part of every handler (the metadata answer with the runtime's
API version, the stage test, buffer access with the byte offsets of `xla_ffi`'s ctypes layout of
``c_api.h``: one source of truth for the ABI, and the i32 size limit of kernel indexing) and
offers helpers; a backend appends its launch body (the CPU backend calls its kernel's entry, the
CUDA backend ``cuLaunchKernel``). Failures go to one Python callback, ``report(frame, code,
detail) -> XLA error``, with one of the `FAILURE` codes: the slow, rare path. A handler embeds
process addresses, so it is compiled per process (a few milliseconds), never cached on disk.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..ir.types import ARRAY_MAX
from . import xla_ffi as abi

FAILURE = {"out_of_bounds": 1, "too_large": 2, "driver": 3}
REPORT = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

_F, _L, _B = abi._CallFrame, abi._List, abi._Buffer
OFFSETS = {
    "ext": _F.extension_start.offset, "api": _F.api.offset, "ctx": _F.ctx.offset, "stage": _F.stage.offset,
    "args": _F.args.offset + _L.items.offset, "rets": _F.rets.offset + _L.items.offset,
    "ext_type": abi._ExtensionBase.type.offset, "metadata": abi._MetadataExtension.metadata.offset,
    "md_major": abi._Metadata.api_version.offset + abi._ApiVersion.major.offset,
    "md_minor": abi._Metadata.api_version.offset + abi._ApiVersion.minor.offset,
    "md_traits": abi._Metadata.traits.offset,
    "api_major": abi._Api.api_version.offset + abi._ApiVersion.major.offset,
    "api_minor": abi._Api.api_version.offset + abi._ApiVersion.minor.offset,
    "api_stream_get": abi._Api.stream_get.offset,
    "buf_data": _B.data.offset, "buf_dims": _B.dims.offset,
    "stream_args_size": ctypes.sizeof(abi._StreamGetArgs), "stream_args_ctx": abi._StreamGetArgs.ctx.offset,
    "stream_args_stream": abi._StreamGetArgs.stream.offset,
}


@dataclass
class NativeHandler:
    """A compiled handler: ``address`` is what XLA calls; the rest must stay alive with it."""

    address: int
    engine: object
    report: object


class HandlerWriter:
    """The IR of one handler's execute stage, written in order by a backend."""

    def __init__(self, report: Callable[[int, int, int], int | None]):
        self.report = REPORT(report)
        self.lines: list[str] = ["execute:"]
        self.declarations: set[str] = set()
        self._count = 0
        self._buffers: dict[tuple[str, int], str] = {}
        self.args = self.field("%frame", OFFSETS["args"], "ptr")
        self.rets = self.field("%frame", OFFSETS["rets"], "ptr")

    # --- writing ---------------------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append(f"  {line}")

    def tmp(self) -> str:
        self._count += 1
        return f"%v{self._count}"

    def label(self, hint: str) -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def field(self, base: str, offset: int, ty: str) -> str:
        """Load a ``ty`` at byte ``offset`` from pointer ``base``."""
        p, v = self.tmp(), self.tmp()
        self.emit(f"{p} = getelementptr i8, ptr {base}, i64 {offset}")
        self.emit(f"{v} = load {ty}, ptr {p}, align 4")
        return v

    @staticmethod
    def address(value: int) -> str:
        """A process address as an LLVM pointer constant."""
        return f"inttoptr (i64 {value} to ptr)"

    # --- the call frame --------------------------------------------------------------------

    def buffer(self, kind: str, index: int) -> str:
        """The XLA_FFI_Buffer* of argument (``kind`` "arg") or result ("ret") ``index``."""
        key = (kind, index)
        if key not in self._buffers:
            p, b = self.tmp(), self.tmp()
            self.emit(f"{p} = getelementptr ptr, ptr {self.args if kind == 'arg' else self.rets}, i64 {index}")
            self.emit(f"{b} = load ptr, ptr {p}, align 8")
            self._buffers[key] = b
        return self._buffers[key]

    def data(self, kind: str, index: int) -> str:
        return self.field(self.buffer(kind, index), OFFSETS["buf_data"], "ptr")

    def dim(self, kind: str, index: int, axis: int) -> str:
        dims = self.field(self.buffer(kind, index), OFFSETS["buf_dims"], "ptr")
        p, v = self.tmp(), self.tmp()
        self.emit(f"{p} = getelementptr i64, ptr {dims}, i64 {axis}")
        self.emit(f"{v} = load i64, ptr {p}, align 8")
        return v

    def elements(self, kind: str, index: int, rank: int) -> str:
        count = "1"
        for axis in range(rank):
            n = self.tmp()
            self.emit(f"{n} = mul i64 {count}, {self.dim(kind, index, axis)}")
            count = n
        return count

    def require_indexable(self, kind: str, index: int, rank: int, position: int) -> None:
        """Fail (``too_large``, detail ``position``) if the buffer has more elements than i32 indexes."""
        count = self.elements(kind, index, rank)
        self.fail_if(f"icmp ugt i64 {count}, {ARRAY_MAX}", "too_large", str(position))

    def stream(self) -> str:
        """XLA's stream for this call (``XLA_FFI_Stream_Get`` of the frame's API)."""
        o = OFFSETS
        api = self.field("%frame", o["api"], "ptr")
        get = self.field(api, o["api_stream_get"], "ptr")
        ctx = self.field("%frame", o["ctx"], "ptr")
        args = self.tmp()
        self.emit(f"{args} = alloca [{o['stream_args_size']} x i8], align 8")
        self.emit(f"call void @llvm.memset.p0.i64(ptr {args}, i8 0, i64 {o['stream_args_size']}, i1 false)")
        self.emit(f"store i64 {o['stream_args_size']}, ptr {args}, align 8")
        p = self.tmp()
        self.emit(f"{p} = getelementptr i8, ptr {args}, i64 {o['stream_args_ctx']}")
        self.emit(f"store ptr {ctx}, ptr {p}, align 8")
        failed = self.tmp()
        self.emit(f"{failed} = call ptr {get}(ptr {args})")
        self.fail_if(f"icmp ne ptr {failed}, null", "driver", "-1")
        return self.field(args, o["stream_args_stream"], "ptr")

    # --- control -----------------------------------------------------------------------------

    def fail_if(self, condition: str, failure: str, detail: str) -> None:
        """Branch to the report callback (and return its error) when ``condition`` (an i1 IR
        expression such as ``icmp ne i32 %r, 0``) holds."""
        cond, bad, good = self.tmp(), self.label("fail"), self.label("ok")
        self.emit(f"{cond} = {condition}")
        self.emit(f"br i1 {cond}, label %{bad}, label %{good}")
        self.lines.append(f"{bad}:")
        error = self.tmp()
        callback = ctypes.cast(self.report, ctypes.c_void_p).value
        self.emit(f"{error} = call ptr {self.address(callback)}(ptr %frame, i64 {FAILURE[failure]}, i64 {detail})")
        self.emit(f"ret ptr {error}")
        self.lines.append(f"{good}:")

    def finish(self) -> NativeHandler:
        """Close the handler and compile it."""
        self.emit("ret ptr null")
        text = _PROLOGUE.format(**OFFSETS, metadata_type=abi.EXTENSION_METADATA, execute=abi.STAGE_EXECUTE)
        text += "\n".join(self.lines) + "\n}\n\ndeclare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n"
        text += "\n".join(sorted(self.declarations)) + "\n"
        address, engine = compile_ir(text, "cubepy_xla_ffi_handler")
        return NativeHandler(address, engine, self.report)


def ffi_failure(kernel, out_of_bounds: Callable[[int], None]) -> Callable[[int, int, int], int | None]:
    """The report callback of a handler for ``kernel``: it makes the XLA error (with cubepy's
    message) of a failure; ``out_of_bounds(detail)`` raises the kernel's OutOfBoundsError."""
    def report(frame: int, code: int, detail: int) -> int | None:
        try:
            if code == FAILURE["out_of_bounds"]:
                out_of_bounds(detail)
                message = f"kernel '{kernel.name}' recorded an out-of-bounds access that could not be read back"
            elif code == FAILURE["too_large"]:
                param = kernel.params[detail].name
                message = (f"cubepy.errors.ArgumentValueError: in kernel '{kernel.name}': parameter '{param}' has more "
                           f"than {ARRAY_MAX} elements; kernels index with i32")
            else:
                message = f"in kernel '{kernel.name}': the device driver failed (error {detail})"
        except Exception as e:
            message = f"{type(e).__module__}.{type(e).__name__}: {e}"
        return abi.error_at(frame, message)
    return report


_lock = threading.Lock()


def compile_ir(text: str, symbol: str) -> tuple[int, object]:
    """Compile LLVM IR for this host with llvmlite; the symbol's address and the engine owning it."""
    import llvmlite.binding as llvm

    with _lock:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        module = llvm.parse_assembly(f'target triple = "{target.triple}"\n' + text)
        module.verify()
        machine = target.create_target_machine(opt=2, codemodel="jitdefault")
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        return engine.get_function_address(symbol), engine


_PROLOGUE = """define ptr @cubepy_xla_ffi_handler(ptr %frame) {{
entry:
  %ext_p = getelementptr i8, ptr %frame, i64 {ext}
  %ext = load ptr, ptr %ext_p, align 8
  %has_ext = icmp ne ptr %ext, null
  br i1 %has_ext, label %extension, label %stage
extension:
  %type_p = getelementptr i8, ptr %ext, i64 {ext_type}
  %type = load i32, ptr %type_p, align 4
  %is_metadata = icmp eq i32 %type, {metadata_type}
  br i1 %is_metadata, label %metadata, label %stage
metadata:
  %md_p = getelementptr i8, ptr %ext, i64 {metadata}
  %md = load ptr, ptr %md_p, align 8
  %api_p = getelementptr i8, ptr %frame, i64 {api}
  %api = load ptr, ptr %api_p, align 8
  %has_api = icmp ne ptr %api, null
  br i1 %has_api, label %version, label %old_version
version:
  %major_p = getelementptr i8, ptr %api, i64 {api_major}
  %major = load i32, ptr %major_p, align 4
  %minor_p = getelementptr i8, ptr %api, i64 {api_minor}
  %minor = load i32, ptr %minor_p, align 4
  br label %answer
old_version:
  br label %answer
answer:
  %ma = phi i32 [ %major, %version ], [ 0, %old_version ]
  %mi = phi i32 [ %minor, %version ], [ 1, %old_version ]
  %md_major = getelementptr i8, ptr %md, i64 {md_major}
  store i32 %ma, ptr %md_major, align 4
  %md_minor = getelementptr i8, ptr %md, i64 {md_minor}
  store i32 %mi, ptr %md_minor, align 4
  %md_traits = getelementptr i8, ptr %md, i64 {md_traits}
  store i32 0, ptr %md_traits, align 4
  ret ptr null
stage:
  %stage_p = getelementptr i8, ptr %frame, i64 {stage}
  %stage_v = load i32, ptr %stage_p, align 4
  %executing = icmp eq i32 %stage_v, {execute}
  br i1 %executing, label %execute, label %skip
skip:
  ret ptr null
"""
