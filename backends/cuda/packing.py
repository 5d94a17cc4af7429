"""Kernel arguments packed for ``cuLaunchKernel``: one struct per executable, one buffer per thread.

``cuLaunchKernel`` takes an array with one pointer per kernel parameter, each to that parameter's
value, and copies the values when it is called. The packer gives every parameter a cell of one
buffer, 8 bytes (or an array passed by value: its capacity, rounded up to 8): the variable cells
come first, in parameter order, and are filled by a single ``struct.pack_into`` per launch (an
array by value as its bytes, zero-padded to the capacity); constant cells (the error record's
address) follow and are written once, when the buffer is made. Each thread packs into its own buffer (thread-local, so a
new thread never inherits a finished thread's buffer, and its set-up runs), so launches from
several threads never share one.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np

# struct codes of the C types of kernel parameters, by NumPy name ("pointer": a device address)
CODES = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
         "int64": "q", "uint64": "Q", "float16": "e", "float32": "f", "float64": "d", "pointer": "Q"}
CELL = 8

PackError = (struct.error, OverflowError)     # a value that does not fit its parameter's C type


class ArgPacker:
    """Packs the parameters of one kernel.

    ``codes[k]`` is the struct code of parameter k; ``constants`` maps the parameters whose value
    never changes to that value (packed as a pointer). ``pack(*values)`` takes the other
    parameters' values in order and returns the address of the pointer array to launch with.
    ``on_new_thread`` runs before a thread's first launch (e.g. to make the device current).
    """

    def __init__(self, codes: Sequence[str], constants: Mapping[int, int] | None = None,
                 on_new_thread: Callable[[], None] | None = None):
        constants = dict(constants or {})
        variable = [k for k in range(len(codes)) if k not in constants]
        self._offsets, offset = {}, 0                            # parameter -> its cell's offset
        for k in variable + sorted(constants):
            self._offsets[k] = offset
            offset += _cell_bytes(codes[k])
        self._struct = struct.Struct("=" + "".join(_padded(codes[k]) for k in variable))
        self._constants = struct.Struct("=" + "Q" * len(constants))
        self._constant_values = [constants[k] for k in sorted(constants)]
        self._variable_bytes = self._struct.size
        self._size = offset
        self._count = len(codes)
        self._on_new_thread = on_new_thread
        self._local = threading.local()

    def buffer(self) -> tuple:
        """This thread's ``(buffer, pointer array address, ...)``, made on its first use."""
        try:
            return self._local.entry
        except AttributeError:
            return self._new_buffer()

    def _new_buffer(self) -> tuple:
        if self._on_new_thread is not None:
            self._on_new_thread()
        size = max(CELL, self._size)
        data = bytearray(size)
        cells = (ctypes.c_char * size).from_buffer(data)
        base = ctypes.addressof(cells)
        pointers = (ctypes.c_void_p * max(1, self._count))(
            *(base + self._offsets[k] for k in range(self._count)))
        self._constants.pack_into(data, self._variable_bytes, *self._constant_values)
        entry = self._local.entry = (data, ctypes.addressof(pointers) if self._count else 0, cells, pointers)
        return entry

    def pack(self, *values) -> int:
        """Pack the variable parameters; the address of the pointer array. Raises one of
        `PackError` if a value does not fit its C type."""
        entry = self.buffer()
        self._struct.pack_into(entry[0], 0, *values)
        return entry[1]

    def submitter(self, launch: Callable[..., None], selector: int | None = None) -> Callable[..., bool]:
        """``submit(*values) -> bool``: pack, then ``launch(params_address)`` (with
        ``values[selector]`` as a second argument where a selector is given); False, launching
        nothing, if a value does not fit."""
        local, new_buffer, pack_into = self._local, self._new_buffer, self._struct.pack_into

        def submit(*values) -> bool:
            try:
                entry = local.entry
            except AttributeError:
                entry = new_buffer()
            try:
                pack_into(entry[0], 0, *values)
            except PackError:
                return False
            if selector is None:
                launch(entry[1])
            else:
                launch(entry[1], values[selector])
            return True
        return submit


BUFFER, SHAPE, SCALAR, INLINE, LAUNCH_OK = range(5)


def parameter_slots(rendered) -> tuple:
    """The kernel parameters a launch fills, as ``(kind, param, extra)``: extra is the alignment
    a buffer needs, the dimension a shape reads, the NumPy type of a scalar, or the capacity in
    bytes of an array passed by value (None for the answer to the launch test). The error
    record's address is a constant of the packer, not a slot."""
    out = []
    for slot in rendered.args:
        if slot.kind == "inline":
            out.append((INLINE, slot.param, slot.nbytes))
        elif slot.kind == "buffer":
            out.append((BUFFER, slot.param, rendered.alignments.get(slot.param, 1)))
        elif slot.kind == "shape":   # a Line buffer's extra trailing axis is not a dimension
            out.append((SHAPE, slot.param, slot.dim))
        elif slot.kind == "scalar":
            out.append((SCALAR, slot.param, np.dtype(slot.numpy).type))
        elif slot.kind == "launch_ok":
            out.append((LAUNCH_OK, None, None))
    return tuple(out)


def parameter_codes(rendered) -> list[str]:
    """The struct code of each kernel parameter of a rendered kernel, in order."""
    kinds = {"buffer": "pointer", "shape": "int32", "error": "pointer", "launch_ok": "int32"}
    return [f"{slot.nbytes}s" if slot.kind == "inline" else CODES[kinds.get(slot.kind) or slot.numpy]
            for slot in rendered.args]


def _cell_bytes(code: str) -> int:
    return -(-struct.calcsize("=" + code) // CELL) * CELL


def _padded(code: str) -> str:
    pad = _cell_bytes(code) - struct.calcsize("=" + code)
    return f"{code}{pad}x" if pad else code
