"""The host side of every backend with device memory of its own, written once.

A GPU backend subclasses `DeviceBackend` and supplies only what touches its vendor library:
``alloc``, ``free``, ``copy_in``, ``copy_out``, ``device_buffer`` (the memory of a device array
used in place), ``enqueue`` (one launch of an executable with bound arguments), ``finish`` (wait
for the device's queued work) and ``read_record`` (read, clear and decode an executable's error
record). This module writes the rest: the walk over a launch's arguments (a NumPy array is copied
to the device by its type, and back after the launch when the kernel may write it; a device array
is used in place), the transfer ledger (`note_upload`/`note_download`: profiling and the
per-launch copy warning), the error records of launches not yet read (read when the host waits
anyway: at a copy back or `synchronize`, never with an extra wait per launch), and `to_device`/
`to_host` for `cb.preload` in a `DeviceBuffer` where the vendor has no array type of its own.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, OutOfBoundsError
from ..ir.nodes import Buffer, Kernel
from .backend import Backend
from .device_arrays import DeviceArray, register_device_array
from .properties import DeviceProperties
from .residency import note_download, note_upload

MIN_ALLOCATION = 16          # bytes: an empty array still gets a valid address


@dataclass(frozen=True, slots=True)
class BoundArray:
    """A launch's array argument in device memory: the backend's ``buffer`` and the ``shape`` the
    launch passed (a Line array with its trailing axis of width w). For an array the kernel takes
    by value (``Buffer.inline``), ``buffer`` is the C-contiguous host array itself."""

    buffer: Any
    shape: tuple[int, ...]


class DeviceBuffer:
    """An array in the memory of a backend without an array type of its own (`cb.preload`'s)."""

    __slots__ = ("buffer", "shape", "dtype", "platform", "device_id", "__weakref__")

    def __init__(self, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, platform: str,
                 device_id: int | None = None):
        self.buffer, self.shape, self.dtype = buffer, tuple(shape), np.dtype(dtype)
        self.platform, self.device_id = platform, device_id

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"<DeviceBuffer {self.platform} {self.dtype} {self.shape}>"


# A buffer object is no address: distinct ones get addresses 4 GiB apart, so that the aliasing check
# (which compares address ranges) sees two buffers as disjoint and a buffer as itself.
register_device_array(DeviceBuffer, lambda b: DeviceArray(b, id(b.buffer) << 32, b.shape, b.dtype, False,
                                                          b.platform, device_id=b.device_id))


class DeviceBackend(Backend):
    """Base class of backends with device memory: override the vendor hooks below, `probe`,
    `compile`, and where the backend has them, the *may* members of `Backend`."""

    host_memory = False

    # --- what a device backend supplies ---------------------------------------------------------

    def alloc(self, nbytes: int, properties: DeviceProperties) -> Any:
        """A device buffer of ``nbytes`` (at least `MIN_ALLOCATION`)."""
        raise NotImplementedError

    def free(self, buffer: Any) -> None:
        """Give back a buffer `alloc` made once the work queued on it is done (default: dropping
        the last reference frees it)."""

    def copy_in(self, buffer: Any, host: np.ndarray, properties: DeviceProperties) -> None:
        """Copy C-contiguous ``host`` into ``buffer``, in order with the work queued after it."""
        raise NotImplementedError

    def copy_out(self, host: np.ndarray, buffer: Any, properties: DeviceProperties) -> None:
        """Copy ``buffer`` into ``host`` after the work queued before; done when `finish` returns."""
        raise NotImplementedError

    def device_buffer(self, array: DeviceArray, properties: DeviceProperties) -> Any:
        """The buffer of a device array used in place (its ``owner`` is the vendor's array)."""
        if isinstance(array.owner, DeviceBuffer):
            return array.owner.buffer
        return array.ptr

    def enqueue(self, executable: Any, kernel: Kernel, cube_count: tuple[int, int, int],
                cube_dim: tuple[int, int, int], bound: list, properties: DeviceProperties) -> None:
        """Queue one launch; ``bound`` follows ``kernel.params``: a `BoundArray` per buffer, a NumPy
        scalar per scalar parameter."""
        raise NotImplementedError

    def finish(self, properties: DeviceProperties | None) -> None:
        """Wait for all work queued on the device (every stream or queue of it)."""
        raise NotImplementedError

    def has_error_record(self, executable: Any) -> bool:
        """Whether launches of ``executable`` write an error record (a checked kernel's)."""
        return False

    def read_record(self, executable: Any) -> OutOfBoundsError | None:
        """The error ``executable``'s record holds (clearing it), None if it holds none; called
        only once its launches are done."""
        return None

    def launch_scope(self, executable: Any, properties: DeviceProperties, options: dict) -> AbstractContextManager:
        """A context for one launch, its copies and copies back (the launch's ``stream=``)."""
        return nullcontext()

    def settle(self, properties: DeviceProperties) -> None:
        """After a launch's copies back: make every pending record readable (default: `finish`)."""
        self.finish(properties)

    # --- written once -----------------------------------------------------------------------------

    def _records(self) -> dict:
        # executables launched with an error record that has not been read since (ordered)
        pending = self.__dict__.get("_pending_records")
        if pending is None:
            pending = self.__dict__["_pending_records"] = {}
        return pending

    def launch(self, executable: Any, kernel: Kernel, cube_count: tuple[int, int, int],
               cube_dim: tuple[int, int, int], args: list, properties: DeviceProperties, options: dict) -> None:
        with self.launch_scope(executable, properties, options):
            bound: list[Any] = []
            staged: list[Any] = []                  # device copies of NumPy arguments
            copy_back: list[tuple[np.ndarray, Any]] = []
            try:
                for param, value in zip(kernel.params, args):
                    if not isinstance(param, Buffer):
                        bound.append(value)
                    elif value.__class__ is DeviceArray:
                        bound.append(BoundArray(self.device_buffer(value, properties), value.shape))
                    elif isinstance(value, np.ndarray) and param.inline:
                        bound.append(BoundArray(value, value.shape))      # by value: nothing to copy
                    elif isinstance(value, np.ndarray):
                        bound.append(BoundArray(self._stage(kernel, param, value, properties, staged, copy_back),
                                                value.shape))
                    else:
                        raise ArgumentTypeError(f"argument '{param.name}' is a {type(value).__name__}, which device "
                                                f"'{self.name}' cannot use", kernel.name)
                self.enqueue(executable, kernel, cube_count, cube_dim, bound, properties)
                if self.has_error_record(executable):
                    self._records()[executable] = None
                for host, buffer in copy_back:
                    self.copy_out(host, buffer, properties)
                    note_download(kernel.name, host)
            finally:
                for buffer in staged:
                    self.free(buffer)
            if copy_back:            # the host waits for these results: read the records then
                self.settle(properties)
                self.check_records()

    def _stage(self, kernel: Kernel, param: Buffer, value: np.ndarray, properties: DeviceProperties,
               staged: list, copy_back: list) -> Any:
        """A device copy of a NumPy argument (a bool array as its bytes), queued for copying back
        after the launch if the kernel may write it."""
        host = value.view(np.uint8) if value.dtype == np.bool_ else value
        note_upload(kernel.name, param.name, value)
        buffer = self.alloc(max(host.nbytes, MIN_ALLOCATION), properties)
        staged.append(buffer)
        if host.nbytes:
            self.copy_in(buffer, host, properties)
            if param.mutable:
                copy_back.append((host, buffer))
        return buffer

    def check_records(self) -> None:
        """Read the records of launches not read since (they must be done) and raise the first error."""
        pending = self._records()
        if not pending:
            return
        executables = list(pending)
        pending.clear()
        first = None
        for executable in executables:
            error = self.read_record(executable)
            first = first or error
        if first is not None:
            raise first

    def synchronize(self, properties: DeviceProperties | None) -> None:
        """Wait for all queued work, then raise the first error its records hold."""
        self.finish(properties)
        self.check_records()

    # --- cb.preload's memory where the vendor has no array type ------------------------------------

    def to_device(self, array: np.ndarray, properties: DeviceProperties) -> Any:
        host = array.view(np.uint8) if array.dtype == np.bool_ else array
        buffer = self.alloc(max(host.nbytes, MIN_ALLOCATION), properties)
        if host.nbytes:
            self.copy_in(buffer, host, properties)
        return DeviceBuffer(buffer, array.shape, array.dtype, self.name, self.device_index(properties))

    def to_host(self, data: Any, out: np.ndarray | None, properties: DeviceProperties) -> np.ndarray:
        if not isinstance(data, DeviceBuffer):
            return super().to_host(data, out, properties)
        host = np.empty(data.shape, data.dtype) if out is None else out
        if host.nbytes:
            self.copy_out(host.view(np.uint8) if host.dtype == np.bool_ else host, data.buffer, properties)
            self.finish(properties)
        return host
