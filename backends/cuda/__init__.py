"""CUDA backend (CuPy, imported lazily): CUDA C++ from the shared C-style renderer, NVRTC-compiled.

- compile: NVRTC for the device's own architecture (``sm_XY`` cubin); cubins are kept on disk
  under ``$CUBEPY_CACHE_DIR/cuda`` (default ``~/.cache/cubepy/cuda``) keyed by sha256 of the
  source, architecture, options and CUDA version (CuPy's own kernel cache is the fallback path).
- launch: a plan made once per specialization turns arguments into kernel arguments; the kernel
  runs on CuPy's current stream. NumPy arrays move by type (Array: to the device only; Mut: there
  and back, into the same NumPy array, after the launch). Device arrays (CuPy arrays, anything
  with ``__cuda_array_interface__`` such as torch CUDA tensors) arrive from the runtime as
  `DeviceArray`s and are used in place: the kernel gets their pointers.
- out of bounds: the device-side error record is read only when the host waits anyway (a Mut
  NumPy argument is copied back) or at ``synchronize()``.

Options: ``cb.device("cuda", index=1, checks_per_launch=True, fast_compile=None)``.
``fast_compile`` ("min", "mid" or "max", NVRTC 12.9 on) is NVRTC's ``--Ofast-compile``: shorter
compiles for slower code (fuzz kernels build 2.3-2.7x faster at "max":
``benchmarks/cpu/nvrtc_options.py``); the fuzzer's
``cuda-fast`` target.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cubepy.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BackendUnavailableError,
    OutOfBoundsError,
    ToolchainError,
)
from cubepy.ir.nodes import Kernel
from cubepy.ir.types import RUNTIME_CUBE_UNITS
from cubepy.log import logger as log
from cubepy.runtime import dlpack
from cubepy.runtime.backend import DirectLauncher
from cubepy.runtime.device_arrays import (
    DeviceArray,
    NotContiguous,
    register_device_array,
)
from cubepy.runtime.device_host import DeviceBackend
from cubepy.runtime.disk_cache import DiskCache
from cubepy.runtime.events import not_recorded
from cubepy.runtime.launch_checks import launch_in_bounds
from cubepy.runtime.properties import DeviceProperties

from ..cstyle.builds import BuildFn, Builds, build_options
from ..cstyle.flags import CUDA_FP_FLAGS
from . import cupti, device_query
from .cupti import Tally
from .packing import BUFFER, INLINE, LAUNCH_OK, SCALAR, SHAPE, ArgPacker, parameter_codes, parameter_slots

if TYPE_CHECKING:
    from ..cstyle import Rendered


def _cupy():
    try:
        import cupy
    except ImportError:
        raise BackendUnavailableError("CuPy is not installed (pip install cupy-cuda12x)") from None
    return cupy


CACHE = DiskCache("cuda", ".cubin")
# launch-parameter bytes a kernel gives to small read-only host arrays passed by value, read from
# the constant bank (`const __grid_constant__`, sm_70 and CUDA 11.7 on): well inside the 4 KiB
# that every CUDA version allows a kernel's parameters
INLINE_ARRAY_BYTES = 2048


def cache_dir() -> Path:
    return CACHE.root


class Executable(Builds):
    """A kernel compiled for one GPU: one source, built once per kind of launch on first need
    (`Builds`: per answer to the launch test and per launch shape), with the launch's argument
    packer and the device-side error record."""

    __slots__ = ("device_index", "packer", "slots", "error")

    def __init__(self, rendered: Rendered, device_index: int, packer: ArgPacker, slots: tuple, error: Any,
                 build: BuildFn):
        self.device_index, self.packer, self.slots, self.error = device_index, packer, slots, error
        super().__init__(rendered, build)


def _c_contiguous(a) -> bool:
    # CuPy's own flag, read without building a flags object (this runs on every launch).
    flag = getattr(a, "_c_contiguous", None)
    return a.flags.c_contiguous if flag is None else flag


def _describe_cupy(a) -> DeviceArray:
    if not _c_contiguous(a):
        raise NotContiguous(f"strides {a.strides}")
    return DeviceArray(a, a.data.ptr, a.shape, a.dtype, False, "cuda", device_id=a.data.device_id)


def _raw_reader(cp):
    """The raw reader of CuPy arrays (see register_device_array), reading CuPy's own contiguity
    flag where this CuPy has one."""
    if hasattr(cp.ndarray, "_c_contiguous"):
        return lambda a: (a.dtype, a.shape, a.data.ptr, a._c_contiguous, False, a.data.device_id)
    return lambda a: (a.dtype, a.shape, a.data.ptr, a.flags.c_contiguous, False, a.data.device_id)


class CudaBackend(DeviceBackend):
    name = "cuda"
    preference = 0
    device_array_platforms = frozenset({"cuda"})
    takes_streams = True
    disk_cached = True
    runtime_cube_dim = True

    def units_limit(self, executable: Executable) -> int:
        # what the driver says, though __launch_bounds__(RUNTIME_CUBE_UNITS) makes ptxas fit 1024
        drv = _cupy().cuda.driver
        most = drv.funcGetAttribute(drv.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, executable.any_function.ptr)
        return min(int(most), RUNTIME_CUBE_UNITS)

    def units_bound(self, units: int) -> int:
        # ptxas allocates registers for a kernel's __launch_bounds__: up to 256 units every register
        # budget is open (a generic kernel bound at 256 got the registers and spills of the static
        # one on the RAJAPerf ports), 512 and 1024 halve it, so each is a bound of its own
        return next(b for b in (256, 512, RUNTIME_CUBE_UNITS) if units <= b)

    def __init__(self):
        self._devices: dict[DeviceProperties, int] = {}
        self._several_devices = False
        self._pending_streams: set[int] = set()    # the streams they were launched on
        self._external_streams: dict[int, Any] = {}   # raw stream handles given to use_stream, wrapped
        # (stream object, device properties, its handle) of the last direct launch with stream=: a
        # loop launching on one stream skips the stream's checks; the reference keeps the handle valid
        self._last_named: tuple = (None, None, 0)
        self._event_pools: dict[int, list] = {}      # GPU index -> CUDA events free for reuse (CudaEvent)
        self._interval_pools: dict[int, list] = {}   # GPU index -> raw CUDA event handles free for reuse (CudaInterval)
        self._fast_compile: dict[DeviceProperties, str | None] = {}   # NVRTC --Ofast-compile per probed device
        self._cupti_timer: Any = None                 # cupti.ActivityTimer; False where CUPTI cannot serve

    # --- devices ------------------------------------------------------------------------

    def probe(self, index: int = 0, checks_per_launch: bool = True, fast_compile: str | None = None,
              **_) -> DeviceProperties:
        if fast_compile not in (None, "min", "mid", "max"):
            raise ArgumentValueError(f"the CUDA device's fast_compile must be None, 'min', 'mid' or 'max' (NVRTC's "
                                     f"--Ofast-compile), got {fast_compile!r}")
        if fast_compile is not None and _nvrtc_version() < (12, 9):
            raise ArgumentValueError(f"fast_compile={fast_compile!r} needs NVRTC 12.9 or later (its --Ofast-compile); "
                                     f"this NVRTC is {_nvrtc_version()}")
        cp = _cupy()
        register_device_array(cp.ndarray, _describe_cupy, raw=_raw_reader(cp), platform="cuda")
        dlpack.CURRENT_STREAM["cuda"] = lambda: cp.cuda.get_current_stream().ptr
        try:
            count = cp.cuda.runtime.getDeviceCount()
        except Exception as e:
            raise BackendUnavailableError(f"no CUDA GPU: {str(e).splitlines()[0]}") from None
        if count == 0:
            raise BackendUnavailableError("no CUDA GPU")
        self._several_devices = count > 1
        if not 0 <= index < count:
            raise ArgumentValueError(f"CUDA device index {index} is out of range ({count} GPUs)")
        a = device_query.attributes(cp, index)
        cc = a["ComputeCapabilityMajor"] * 10 + a["ComputeCapabilityMinor"]
        name = device_query.name(cp, index)
        features = {"gpu", "fp16", "fp64", "plane_ops", "atomics", "atomic_f32_add"}
        if cc >= 80:
            features.add("bf16")
        grid_constant = cc >= 70 and cp.cuda.runtime.runtimeGetVersion() >= 11070
        props = DeviceProperties(
            name=f"{name} [{index}] sm_{cc}" + (f", NVRTC --Ofast-compile={fast_compile}" if fast_compile else ""),
            backend=self.name, plane_dim=int(a["WarpSize"]), checks_per_cube=True,
            checks_per_launch=checks_per_launch, checks_per_run=True,
            inline_array_bytes=INLINE_ARRAY_BYTES if grid_constant else 0,
            plane_size_min=int(a["WarpSize"]), plane_size_max=int(a["WarpSize"]),
            max_units_per_cube=int(a["MaxThreadsPerBlock"]),
            max_cube_dim=(int(a["MaxBlockDimX"]), int(a["MaxBlockDimY"]), int(a["MaxBlockDimZ"])),
            max_cube_count=(int(a["MaxGridDimX"]), int(a["MaxGridDimY"]), int(a["MaxGridDimZ"])),
            shared_memory_per_cube=max(a["MaxSharedMemoryPerBlockOptin"], a["MaxSharedMemoryPerBlock"]),
            vector_widths=(1, 2, 4, 8, 16), compute_units=int(a["MultiProcessorCount"]),
            features=frozenset(features))
        self._devices[props] = index
        self._fast_compile[props] = fast_compile
        return props

    # --- compile ------------------------------------------------------------------------

    def render(self, kernel: Kernel, properties: DeviceProperties | None = None) -> Rendered:
        # the renderer and its dialect load here: a kernel restored from the trace index needs neither
        from ..cstyle import CUDA, render

        return render(kernel, CUDA)

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Executable:
        return self._compiled(kernel, properties, self.render(kernel, properties))

    def snapshot(self, executable: Executable, properties: DeviceProperties) -> bytes:
        return pickle.dumps(executable.rendered, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, kernel: Kernel, properties: DeviceProperties, snapshot: bytes) -> Executable:
        # the source as rendered, built as `compile` builds it: the cubin from the disk cache under
        # a key of the source, the GPU, the CUDA runtime and the options (NVRTC on a miss)
        return self._compiled(kernel, properties, pickle.loads(snapshot))

    def _compiled(self, kernel: Kernel, properties: DeviceProperties, rendered: Rendered) -> Executable:
        from ..cstyle.host import empty_record

        cp = _cupy()
        index = self._devices.get(properties, 0)
        with cp.cuda.Device(index):
            arch = str(cp.cuda.Device(index).compute_capability)
            fast = self._fast_compile.get(properties)
            base = ("--std=c++17", f"--gpu-architecture=sm_{arch}", "-default-device", *_minimal_option(),
                    *CUDA_FP_FLAGS[kernel.fastmath], *((f"--Ofast-compile={fast}",) if fast else ()))
            version = str(cp.cuda.runtime.runtimeGetVersion())

            def build(answer: int | None, shape: tuple) -> tuple:
                """(driver function, module, from_disk) of the source built for launches whose
                launch test answered ``answer`` (None: the kernel has no launch test) and whose
                cube count has the ``shape`` (`Rendered.one_cube`)."""
                options = (*base, *build_options(rendered, answer, shape))
                key = hashlib.sha256("\0".join((rendered.source, arch, version, *options)).encode()).hexdigest()
                with cp.cuda.Device(index):
                    module, from_disk = self._load(cp, rendered, options, key)
                    try:
                        function = module.get_function(rendered.name)
                    except Exception as e:
                        raise ToolchainError(f"NVRTC rejected the generated CUDA code: {e}", kernel.name) from None
                    if rendered.dynamic_shared_bytes:     # opt in to more than 48 KiB of shared memory
                        drv = cp.cuda.driver
                        drv.funcSetAttribute(function.ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             rendered.dynamic_shared_bytes)
                return getattr(function, "kernel", function), module, from_disk    # the driver-level Function

            error = cp.zeros(len(empty_record()), cp.int32) if rendered.sites else None
            constants = {k: error.data.ptr for k, slot in enumerate(rendered.args) if slot.kind == "error"}
            packer = ArgPacker(parameter_codes(rendered), constants, on_new_thread=lambda: cp.cuda.runtime.free(0))
            return Executable(rendered, index, packer, parameter_slots(rendered), error, build)

    def _load(self, cp, rendered: Rendered, options, key: str):
        """``(module, from_disk)``: the cubin from the disk cache, NVRTC on a miss (once across
        processes); CuPy's RawModule as a fallback where CuPy's NVRTC bindings are missing."""
        try:
            cubin, from_disk = CACHE.get_or_build(key, lambda: _nvrtc_cubin(cp, rendered, options))
        except _NvrtcMissing:
            try:
                kept = tuple(o for o in options if "architecture" not in o)
                return cp.RawModule(code=rendered.source, options=kept), False
            except Exception as e:
                raise ToolchainError(f"NVRTC rejected the generated CUDA code: {e}", rendered.kernel_name) from None
        module = cp.cuda.function.Module()
        try:
            module.load(cubin)
        except Exception:
            if not from_disk:
                raise
            CACHE.discard(key)                  # an entry this driver cannot load: build it again
            return self._load(cp, rendered, options, key)
        return module, from_disk

    def source(self, kernel: Kernel, executable: Executable | None, properties: DeviceProperties, form: str) -> str:
        return executable.rendered.source if executable is not None else self.render(kernel).source

    # --- launch -------------------------------------------------------------------------

    def launch_scope(self, executable: Executable, properties: DeviceProperties, options: dict):
        """The launch's ``stream=`` (copies, kernel and copies back all go on it), and its GPU."""
        cp = _cupy()
        stream = options.get("stream")
        if stream is not None:
            return _cupy_stream(cp, stream, executable.rendered.kernel_name, executable.device_index)
        return cp.cuda.Device(executable.device_index) if self._several_devices else nullcontext()

    def enqueue(self, executable: Executable, kernel: Kernel, cube_count, cube_dim, bound: list,
                properties: DeviceProperties) -> None:
        values, proven = [], False
        for kind, param, extra in executable.slots:
            if kind == BUFFER:
                buffer = bound[param].buffer
                ptr = buffer if buffer.__class__ is int else buffer.data.ptr
                if extra > 1 and ptr % extra:
                    raise ArgumentValueError(f"argument '{kernel.params[param].name}' starts at an address not "
                                             f"aligned to {extra} bytes, which its Line loads need", kernel.name)
                values.append(ptr)
            elif kind == SHAPE:
                values.append(bound[param].shape[extra])
            elif kind == INLINE:
                data = bound[param].buffer.tobytes()
                if len(data) > extra:      # the binder keeps each capacity: a bug if this fires
                    raise ArgumentValueError(f"argument '{kernel.params[param].name}' has {len(data)} bytes; "
                                             f"its parameter holds {extra}", kernel.name)
                values.append(data)
            elif kind == LAUNCH_OK:
                proven = launch_in_bounds(kernel, cube_count, cube_dim, bound)
                values.append(int(proven))
            else:
                v = bound[param]
                values.append(v if v.__class__ is extra else extra(v))
        self._enqueue(_cupy(), executable, executable.for_launch(cube_count, proven), cube_count, cube_dim,
                      executable.packer.pack(*values))

    # --- memory: CuPy's pool, in the order of CuPy's current stream -----------------------------

    def alloc(self, nbytes: int, properties: DeviceProperties):
        return _cupy().empty(nbytes, np.uint8)

    def copy_in(self, buffer, host: np.ndarray, properties: DeviceProperties) -> None:
        cp = _cupy()
        buffer.data.copy_from_host_async(host.ctypes.data, host.nbytes, cp.cuda.get_current_stream())

    def copy_out(self, host: np.ndarray, buffer, properties: DeviceProperties) -> None:
        cp = _cupy()
        buffer.data.copy_to_host_async(host.ctypes.data, host.nbytes, cp.cuda.get_current_stream())

    def device_buffer(self, array: DeviceArray, properties: DeviceProperties) -> int:
        return array.ptr              # used in place: the kernel gets the pointer, nothing is copied

    def _enqueue(self, cp, executable: Executable, function, cube_count, cube_dim, params: int) -> None:
        if self._several_devices and cp.cuda.runtime.getDevice() != executable.device_index:
            cp.cuda.runtime.setDevice(executable.device_index)
        stream = _launch_stream(cp)
        cp.cuda.driver.launchKernel(function.ptr, *cube_count, *cube_dim,
                                    executable.rendered.dynamic_shared_bytes, stream, params, 0)
        if executable.error is not None:
            self._records()[executable] = None
            self._pending_streams.add(stream)

    def direct_launcher(self, executable: Executable, kernel: Kernel, properties: DeviceProperties,
                        cube_count, cube_dim, options: dict) -> DirectLauncher:
        """The warm path's entry: pack the slots and call cuLaunchKernel, nothing in between."""
        cp = _cupy()
        names = {BUFFER: "pointer", SHAPE: "extent", SCALAR: "scalar", INLINE: "inline", LAUNCH_OK: "launch_ok"}
        slots = tuple((names[kind], param, extra) if kind != SCALAR else ("scalar", param)
                      for kind, param, extra in executable.slots)
        launch_kernel, current_stream, named = cp.cuda.driver.launchKernel, cp.cuda.get_current_stream, _NAMED
        shared = executable.rendered.dynamic_shared_bytes
        (gx, gy, gz), (bx, by, bz) = cube_count, cube_dim
        # the host's answer to the launch test picks the build (`Executable`); without a launch
        # test there is one build and no answer (ok stays 1)
        selector = next((k for k, slot in enumerate(executable.slots) if slot[0] == LAUNCH_OK), None)
        # the builds for this launch's shape (`Executable`), chosen once: the launcher's count is fixed
        shape = executable.shape(cube_count)
        found = executable.proven(shape)
        proven = (found if found is not None else executable.function(shape)).ptr
        if self._several_devices:
            def launch(params: int, ok: int = 1) -> None:
                function = executable.proven(shape) if ok else None
                self._enqueue(cp, executable, function if function is not None else executable.function(shape),
                              cube_count, cube_dim, params)
        elif executable.error is not None:
            pending, streams = self._records(), self._pending_streams

            def launch(params: int, ok: int = 1) -> None:
                stream = named.ptr
                if stream is None:
                    stream = current_stream().ptr
                launch_kernel(proven if ok else executable.function(shape).ptr, gx, gy, gz, bx, by, bz, shared,
                              stream, params, 0)
                pending[executable] = None
                streams.add(stream)
        else:
            def launch(params: int, ok: int = 1) -> None:
                stream = named.ptr
                launch_kernel(proven if ok else executable.function(shape).ptr, gx, gy, gz, bx, by, bz, shared,
                              current_stream().ptr if stream is None else stream, params, 0)
        return DirectLauncher(slots, executable.packer.submitter(launch, selector))

    def xla_ffi_handler(self, executable: Executable, kernel: Kernel, properties: DeviceProperties, cube_count,
                        cube_dim, sources: dict, ranks: dict, zeroed: list):
        """A native XLA FFI handler launching this executable on XLA's stream (see xla_ffi.py),
        or None where it has none."""
        from cubepy.runtime.xla_ffi_native import ffi_failure

        from .xla_ffi import build_handler

        cp = _cupy()

        from ..cstyle.host import oob_error

        def out_of_bounds(_detail: int) -> None:
            record = executable.error.get()
            executable.error.fill(0)
            cp.cuda.get_current_stream().synchronize()
            error = oob_error(record, executable.rendered.sites, executable.rendered.kernel_name)
            if error is not None:
                raise error
        return build_handler(executable, sources, ranks, zeroed, cube_count, cube_dim,
                             ffi_failure(kernel, out_of_bounds))

    def to_device(self, array: np.ndarray, properties: DeviceProperties):
        """A CuPy copy of ``array`` on this device (for cb.preload)."""
        cp = _cupy()
        with cp.cuda.Device(self._devices.get(properties, 0)):
            return cp.asarray(array)

    def from_dlpack(self, obj, properties: DeviceProperties):
        """A CuPy array on the memory of a DLPack producer on this device (cb.from_dlpack)."""
        cp = _cupy()
        with cp.cuda.Device(self._devices.get(properties, 0)):
            return cp.from_dlpack(obj)

    def to_host(self, data, out: np.ndarray | None, properties: DeviceProperties) -> np.ndarray:
        return data.get(out=out)

    def device_count(self) -> int:
        """How many CUDA GPUs this process sees."""
        return int(_cupy().cuda.runtime.getDeviceCount())

    def device_index(self, properties: DeviceProperties) -> int:
        """Which GPU of the platform this device is (device arrays on another one are refused)."""
        return self._devices.get(properties, 0)

    def direct_stream(self, stream, properties: DeviceProperties):
        """The direct launchers read the stream a warm launch names from a thread-local before
        CuPy's current stream: no CuPy stream context around the launch."""
        if stream.__class__ is int:
            return _NamedStream(stream)
        last, on, ptr = self._last_named
        if stream is not last or properties is not on:
            ptr = _cupy_stream(_cupy(), stream, None, self._devices.get(properties, 0)).ptr
            self._last_named = (stream, properties, ptr)
        return _NamedStream(ptr)

    def use_stream(self, stream, properties: DeviceProperties):
        """A context in which ``stream`` is CuPy's current stream, which every launch (and the
        warm path) goes on. Raw handles (XLA's stream, called after call) wrap once."""
        if stream.__class__ is int:
            found = self._external_streams.get(stream)
            if found is None:
                found = self._external_streams[stream] = _cupy_stream(_cupy(), stream, None)
            return found
        return _cupy_stream(_cupy(), stream, None, self._devices.get(properties, 0))

    def event(self, properties: DeviceProperties) -> CudaEvent:
        index = self._devices.get(properties, 0)
        pool = self._event_pools.setdefault(index, [])
        cp = _cupy()
        if not pool and self._several_devices:
            with cp.cuda.Device(index):           # a new event belongs to the GPU current at its creation
                return CudaEvent(cp, pool)
        return CudaEvent(cp, pool)

    def launch_tally(self, properties: DeviceProperties, executable: Executable, kernel_name: str) -> Tally | None:
        """CUPTI's kernel records where CUPTI serves (`cupti`); None: events around each launch."""
        timer = self._cupti_timer
        if timer is None:
            timer = self._cupti_timer = cupti.timer(self._synchronize_gpu) or False
        if not timer:
            return None
        try:
            return timer.tally(executable.rendered.name, kernel_name, executable.device_index)
        except cupti.CuptiError as e:     # CUPTI loaded but cannot record here: events from now on
            log.info("the CUDA profile timer falls back to events: %s", e)
            self._cupti_timer = False
            cupti.forget()
            return None

    def interval(self, properties: DeviceProperties) -> CudaInterval:
        index = self._devices.get(properties, 0)
        pool = self._interval_pools.setdefault(index, [])
        cp = _cupy()
        if pool:
            start = pool.pop()
        elif self._several_devices:
            with cp.cuda.Device(index):           # an event belongs to the GPU current at its creation
                start = cp.cuda.runtime.eventCreate()
                pool.append(cp.cuda.runtime.eventCreate())     # the stop event, made here for the same reason
        else:
            start = cp.cuda.runtime.eventCreate()
        return CudaInterval(cp.cuda.runtime, pool, _launch_stream(cp), start)

    def _synchronize_gpu(self, index: int) -> None:
        cp = _cupy()
        with cp.cuda.Device(index):
            cp.cuda.runtime.deviceSynchronize()

    def finish(self, properties: DeviceProperties | None) -> None:
        """Wait for all work on the device, every stream's."""
        cp = _cupy()
        index = self._devices.get(properties) if properties is not None else None
        with cp.cuda.Device(index if index is not None else cp.cuda.runtime.getDevice()):
            cp.cuda.runtime.deviceSynchronize()
        self._pending_streams.clear()

    def settle(self, properties: DeviceProperties) -> None:
        """After copies back on the current stream: records written on other streams need the device."""
        cp = _cupy()
        current = cp.cuda.get_current_stream()
        current.synchronize()
        if self._pending_streams - {current.ptr}:
            cp.cuda.runtime.deviceSynchronize()
        self._pending_streams.clear()

    def has_error_record(self, executable: Executable) -> bool:
        return executable.error is not None

    def read_record(self, executable: Executable) -> OutOfBoundsError | None:
        from ..cstyle.host import oob_error

        record = executable.error.get()
        if not record[0]:
            return None
        executable.error.fill(0)
        _cupy().cuda.get_current_stream().synchronize()      # reset before a later launch can write it
        return oob_error(record, executable.rendered.sites, executable.rendered.kernel_name)


def _cupy_stream(cp, stream, kernel_name: str | None, device_index: int | None = None):
    """``stream=`` as a CuPy stream: a CuPy stream itself, an object of the CUDA stream protocol
    (``__cuda_stream__``), a ``torch.cuda.Stream``, or a raw handle (int). A CuPy or torch stream
    of another GPU than ``device_index`` is refused."""
    owner = getattr(stream, "device_id", None)              # CuPy streams
    if owner is None and hasattr(stream, "device") and hasattr(stream, "cuda_stream"):
        owner = getattr(stream.device, "index", None)       # torch.cuda.Stream
    if device_index is not None and owner is not None and owner != device_index:
        raise ArgumentValueError(f"stream={stream!r} belongs to cuda:{owner}, but the launch runs on "
                                 f"cuda:{device_index}; use a stream of that GPU", kernel_name)
    if isinstance(stream, (cp.cuda.Stream, cp.cuda.ExternalStream)):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        handle = stream.__cuda_stream__()[1]
    else:
        handle = getattr(stream, "cuda_stream", None)       # torch.cuda.Stream
    if handle is None and isinstance(stream, int) and not isinstance(stream, bool):
        handle = stream
    if handle is None:
        raise ArgumentTypeError(f"stream= takes a cupy.cuda.Stream, a torch.cuda.Stream, an object with "
                                f"__cuda_stream__ or a CUDA stream handle (int), got {type(stream).__name__}",
                                kernel_name)
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is not None:                            # CuPy 14 and later
        return from_external(_StreamHandle(int(handle)))
    return cp.cuda.ExternalStream(int(handle))


class _LaunchStream(threading.local):
    """The stream (a raw handle) that the warm launch under way on this thread names with
    ``stream=``; None: CuPy's current stream."""

    ptr: int | None = None


_NAMED = _LaunchStream()


def _launch_stream(cp) -> int:
    """The stream a launch goes on: the warm launch's ``stream=``, else CuPy's current stream.
    (The direct launchers inline this: it is their whole per-launch cost beside the launch.)"""
    stream = _NAMED.ptr
    return cp.cuda.get_current_stream().ptr if stream is None else stream


class _NamedStream:
    """``with _NamedStream(ptr):`` direct launches on this thread go to stream ``ptr``."""

    __slots__ = ("ptr", "_before")

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __enter__(self) -> None:
        self._before, _NAMED.ptr = _NAMED.ptr, self.ptr

    def __exit__(self, *exc) -> None:
        _NAMED.ptr = self._before


class _StreamHandle:
    """A raw stream handle, offered through the CUDA stream protocol."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


class CudaEvent:
    """A CUDA event recorded on CuPy's current stream (or a warm launch's ``stream=``); times on
    the GPU's clock.

    The CUDA events come from a pool per GPU: an event goes back when its CudaEvent is collected
    (nothing can read it then), so a ``cb.profile()`` that records two per launch creates none
    once warm."""

    __slots__ = ("_cp", "_event", "_recorded", "_pool")
    POOL_SIZE = 4096

    def __init__(self, cp, pool: list):
        self._cp, self._pool, self._recorded = cp, pool, False
        self._event = pool.pop() if pool else cp.cuda.Event()

    def __del__(self):
        if len(self._pool) < CudaEvent.POOL_SIZE:
            self._pool.append(self._event)

    def record(self) -> None:
        self._cp.cuda.runtime.eventRecord(self._event.ptr, _launch_stream(self._cp))
        self._recorded = True

    def synchronize(self) -> None:
        not_recorded(not self._recorded)
        self._event.synchronize()

    def elapsed_ms(self, start: CudaEvent) -> float:
        not_recorded(not (self._recorded and start._recorded))
        self._event.synchronize()
        return float(self._cp.cuda.get_elapsed_time(start._event, self._event))

    def done(self) -> bool:
        return self._recorded and self._event.done


NOT_READY = 600                # cudaErrorNotReady


class CudaInterval:
    """Two CUDA events around launches on one stream, as raw handles from a pool per GPU: a
    profiled warm launch makes no Python event objects and, once warm, no CUDA events either.
    Its handles go back to the pool when it is read (every profile reads what it recorded)."""

    __slots__ = ("_rt", "_pool", "_stream", "_start", "_stop", "_ms")

    def __init__(self, rt, pool: list, stream: int, start: int):
        self._rt, self._pool, self._stream, self._start, self._stop, self._ms = rt, pool, stream, start, 0, None
        rt.eventRecord(start, stream)

    def stop(self) -> None:
        pool = self._pool
        self._stop = pool.pop() if pool else self._rt.eventCreate()
        self._rt.eventRecord(self._stop, self._stream)

    def discard(self) -> None:
        self._give_back(self._start)
        self._start = 0

    def done(self) -> bool:
        return self._ms is not None or (self._stop != 0 and self._rt.eventQuery(self._stop) == 0)

    def elapsed_ms(self) -> float:
        if self._ms is None:
            not_recorded(self._stop == 0 or self._start == 0)
            rt = self._rt
            try:                       # most are read done: no call to wait
                ms = rt.eventElapsedTime(self._start, self._stop)
            except rt.CUDARuntimeError as e:
                if e.status != NOT_READY:
                    raise
                rt.eventSynchronize(self._stop)
                ms = rt.eventElapsedTime(self._start, self._stop)
            self._ms = float(ms)
            self._give_back(self._start)
            self._give_back(self._stop)
            self._start = self._stop = 0
        return self._ms

    def _give_back(self, handle: int) -> None:
        if len(self._pool) < CudaEvent.POOL_SIZE:
            self._pool.append(handle)
        else:
            self._rt.eventDestroy(handle)


class _NvrtcMissing(Exception):
    """CuPy without its NVRTC bindings: CuPy compiles the kernel its own way."""


def _nvrtc_cubin(cp, rendered: Rendered, options) -> bytes:
    """Compile with NVRTC to a cubin; raises CompileError with NVRTC's log."""
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError:
        raise _NvrtcMissing() from None
    prog = nvrtc.createProgram(rendered.source, f"{rendered.name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, list(options) + _include_options(cp))
        except Exception as e:
            log = ""
            try:
                log = nvrtc.getProgramLog(prog)
            except Exception:
                pass
            message = f"NVRTC rejected the generated CUDA code: {e}\n{log}".rstrip()
            raise ToolchainError(message, rendered.kernel_name) from None
        return nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)


_VERSION: tuple | None = None


def _nvrtc_version() -> tuple:
    """NVRTC's (major, minor) through CuPy's bindings; (0, 0) where they are missing."""
    global _VERSION
    if _VERSION is None:
        try:
            from cupy_backends.cuda.libs import nvrtc

            _VERSION = tuple(nvrtc.getVersion())
        except Exception:
            _VERSION = (0, 0)
    return _VERSION


def _minimal_option() -> tuple:
    """NVRTC's ``-minimal`` (12.4 on), which leaves out the texture, device-runtime and CUDA
    runtime API declarations the generated code never uses: the same cubin, about 4 ms less a
    compile (`benchmarks/cpu/nvrtc_options.py`: every conformance kernel's source, identical
    cubins with NVRTC 13.5). Empty where NVRTC is older or its version unknown."""
    return ("-minimal",) if _nvrtc_version() >= (12, 4) else ()


def _include_options(cp) -> list[str]:
    """Include paths NVRTC needs for cuda_fp16.h/cuda_bf16.h (CUDA's own, or the copies CuPy ships)."""
    out = []
    try:
        cuda_path = cp.cuda.get_cuda_path()
        if cuda_path and os.path.isdir(os.path.join(cuda_path, "include")):
            out.append(f"-I{os.path.join(cuda_path, 'include')}")
    except Exception:
        pass
    inc = Path(cp.__file__).parent / "_core" / "include"
    if inc.is_dir():
        out.append(f"-I{inc}")
        ver = cp.cuda.runtime.runtimeGetVersion()
        for cand in (inc / "cupy" / "_cuda" / f"cuda-{ver // 1000}.{ver % 1000 // 10}",
                     inc / "cupy" / "_cuda" / f"cuda-{ver // 1000}"):
            if cand.is_dir():
                out.append(f"-I{cand}")
    return out


BACKEND = CudaBackend()

__all__ = ["BACKEND", "INLINE_ARRAY_BYTES", "CudaBackend", "Executable", "cache_dir"]
