"""An XLA FFI handler (``XLA_FFI_Error* handler(XLA_FFI_CallFrame*)``) that calls Python.

XLA's FFI is a C ABI (``xla/ffi/api/c_api.h``, shipped in jaxlib's include directory): a
handler gets a call frame holding its argument and result buffers (a dtype, a data pointer and
dimensions each), the API's function table, and an execution context (for the CUDA stream). This
module reads that frame through ctypes, so a cubepy kernel runs as an XLA custom call with no C
compiler: the handler hands `Buffer`s and the stream to a Python function, which launches
the kernel on the buffers in place. Errors become XLA errors (raised by JAX with their message),
never a crash or a silent success. Importing this module imports no JAX.
"""

from __future__ import annotations

import ctypes
import traceback
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

_p = ctypes.c_void_p
_size = ctypes.c_size_t

EXTENSION_METADATA = 1
STAGE_EXECUTE = 3
ERROR_INVALID_ARGUMENT = 3
ERROR_INTERNAL = 13
# XLA_FFI_DataType -> NumPy (types NumPy lacks, such as BF16, are refused with the code)
DTYPES = {1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8, 7: np.uint16, 8: np.uint32,
          9: np.uint64, 10: np.float16, 11: np.float32, 12: np.float64}


class _ExtensionBase(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("type", ctypes.c_int), ("next", _p)]


class _ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("major", ctypes.c_int), ("minor", ctypes.c_int)]


class _Metadata(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("api_version", _ApiVersion), ("traits", ctypes.c_uint32),
                ("state_type_id", ctypes.c_int64)]


class _MetadataExtension(ctypes.Structure):
    _fields_ = [("base", _ExtensionBase), ("metadata", ctypes.POINTER(_Metadata))]


class _Buffer(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("dtype", ctypes.c_int), ("data", _p),
                ("rank", ctypes.c_int64), ("dims", ctypes.POINTER(ctypes.c_int64))]


class _List(ctypes.Structure):       # XLA_FFI_Args and XLA_FFI_Rets share this layout
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("size", ctypes.c_int64), ("types", _p),
                ("items", ctypes.POINTER(ctypes.POINTER(_Buffer)))]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("size", ctypes.c_int64), ("types", _p),
                ("names", _p), ("attrs", _p)]


class _CallFrame(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("api", _p), ("ctx", _p), ("stage", ctypes.c_int),
                ("args", _List), ("rets", _List), ("attrs", _Attrs), ("future", _p)]


class _ErrorCreateArgs(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("message", ctypes.c_char_p),
                ("errc", ctypes.c_int)]


class _StreamGetArgs(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("ctx", _p), ("stream", _p)]


class _Api(ctypes.Structure):
    _fields_ = [("struct_size", _size), ("extension_start", _p), ("api_version", _ApiVersion),
                ("internal_api", _p), ("error_create", _p), ("error_get_message", _p), ("error_destroy", _p),
                ("handler_register", _p), ("stream_get", _p)]


_ERROR_CREATE = ctypes.CFUNCTYPE(_p, ctypes.POINTER(_ErrorCreateArgs))
_STREAM_GET = ctypes.CFUNCTYPE(_p, ctypes.POINTER(_StreamGetArgs))
HANDLER = ctypes.CFUNCTYPE(_p, _p)


class Buffer(NamedTuple):
    """One argument or result of a call: where its data lies, its shape and its dtype."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype


class FFIArgumentError(ValueError):
    """An argument the handler cannot take; reported to XLA as INVALID_ARGUMENT."""


def make_handler(run: Callable[[list[Buffer], list[Buffer], int | None], None], with_stream: bool):
    """A ctypes function pointer of an XLA FFI handler calling ``run(arguments, results, stream)``
    at the execute stage (``stream``: the CUDA stream when ``with_stream``, else None). Keep the
    returned object alive as long as XLA may call it."""

    def handler(frame_address: int) -> int | None:
        frame = _CallFrame.from_address(frame_address)
        try:
            if frame.extension_start:
                base = _ExtensionBase.from_address(frame.extension_start)
                if base.type == EXTENSION_METADATA:
                    _describe_version(frame)
                    return None
            if frame.stage != STAGE_EXECUTE:
                return None
            stream = _stream(frame) if with_stream else None
            run(_buffers(frame.args), _buffers(frame.rets), stream)
            return None
        except FFIArgumentError as e:
            return _error(frame, str(e), ERROR_INVALID_ARGUMENT)
        except BaseException as e:     # everything reaches XLA as an error: nothing may pass as success
            text = "".join(traceback.format_exception_only(type(e), e)).strip()
            return _error(frame, text, ERROR_INTERNAL)

    return HANDLER(handler)


def _buffers(items: _List) -> list[Buffer]:
    out = []
    for i in range(items.size):
        b = items.items[i].contents
        dtype = DTYPES.get(b.dtype)
        if dtype is None:
            raise FFIArgumentError(f"buffer {i} has XLA dtype code {b.dtype}, which has no cubepy dtype")
        out.append(Buffer(b.data or 0, tuple(b.dims[d] for d in range(b.rank)), np.dtype(dtype)))
    return out


def _describe_version(frame: _CallFrame) -> None:
    """Answer XLA's metadata query: the API version this handler speaks (the runtime's own)."""
    extension = _MetadataExtension.from_address(frame.extension_start)
    metadata = extension.metadata.contents
    if frame.api:
        api = _Api.from_address(frame.api)
        metadata.api_version.major, metadata.api_version.minor = api.api_version.major, api.api_version.minor
    else:
        metadata.api_version.major, metadata.api_version.minor = 0, 1
    metadata.traits = 0


def _stream(frame: _CallFrame) -> int:
    api = _Api.from_address(frame.api)
    args = _StreamGetArgs(ctypes.sizeof(_StreamGetArgs), None, frame.ctx, None)
    failure = _STREAM_GET(api.stream_get)(ctypes.byref(args))
    if failure:
        raise RuntimeError("XLA gave no CUDA stream for the call")
    return args.stream or 0


def error_at(frame_address: int, message: str, code: int = ERROR_INTERNAL) -> int | None:
    """An XLA error for the call frame at ``frame_address`` (for handlers written in native code)."""
    return _error(_CallFrame.from_address(frame_address), message, code)


def _error(frame: _CallFrame, message: str, code: int) -> int | None:
    if not frame.api:
        return None
    api = _Api.from_address(frame.api)
    args = _ErrorCreateArgs(ctypes.sizeof(_ErrorCreateArgs), None, message.encode(errors="replace"), code)
    return _ERROR_CREATE(api.error_create)(ctypes.byref(args))
