"""HIP backend (hip-python, imported lazily): HIP C++ from the shared C-style renderer, hiprtc-compiled.

- probe: the device's gfx architecture (``gcnArchName``) and wavefront size (64 on CDNA, 32 on
  RDNA); planes are whole wavefronts and ballots are 64-bit on both.
- compile: hiprtc with ``--offload-arch=<gfx>``, once per kind of launch (`cstyle.builds`: the
  host's answer to the launch test and the launch's shape); code objects are kept on disk under
  ``$CUBEPY_CACHE_DIR/hip`` (`cubepy.runtime.disk_cache`: checksummed, built once across processes)
  keyed by sha256 of source, architecture, HIP version and options.
- launch: ``hipModuleLaunchKernel`` through the shared host layer (`cubepy.runtime.device_host`):
  NumPy arrays move by type (Array: to the device; Mut: there and back, into the same array);
  ``cb.preload`` keeps hipMalloc'd `DeviceBuffer`s, used in place.

No AMD GPU was available where this was written: it is compile-checked (hipcc on the generated
source), not run.
"""

from __future__ import annotations

import ctypes
import hashlib

import numpy as np

from cubepy.errors import ArgumentValueError, BackendUnavailableError, OutOfBoundsError, ToolchainError
from cubepy.ir.nodes import Kernel
from cubepy.runtime.device_host import DeviceBackend
from cubepy.runtime.disk_cache import DiskCache
from cubepy.runtime.events import not_recorded
from cubepy.runtime.launch_checks import launch_in_bounds
from cubepy.runtime.properties import DeviceProperties

from ..cstyle import HIP, Rendered, empty_record, oob_error, render
from ..cstyle.builds import BuildFn, Builds, build_options

_CTYPES = {"bool": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
           "uint64": ctypes.c_uint64, "float32": ctypes.c_float, "float64": ctypes.c_double}


def _hip():
    try:
        from hip import hip, hiprtc
    except ImportError:
        raise BackendUnavailableError("hip-python is not installed (pip install hip-python)") from None
    except Exception as e:  # the package is there but the ROCm runtime is not
        raise BackendUnavailableError(f"hip-python failed to load: {str(e).splitlines()[0]}") from None
    return hip, hiprtc


def _check(result, what: str = "HIP"):
    """hip-python calls return (err, *values); raise on a non-success code, else the values."""
    err = result[0] if isinstance(result, tuple) else result
    code = getattr(err, "value", err)
    if code != 0:
        raise RuntimeError(f"{what} failed: {err}")
    rest = result[1:] if isinstance(result, tuple) else ()
    return rest[0] if len(rest) == 1 else rest


class Executable(Builds):
    """A kernel's code objects on one GPU: one source, built once per kind of launch on first need
    (`Builds`: per answer to the launch test and per launch shape), with the device-side error
    record (a device pointer)."""

    __slots__ = ("device_index", "error")

    def __init__(self, rendered: Rendered, device_index: int, build: BuildFn):
        self.device_index, self.error = device_index, None
        super().__init__(rendered, build)


CACHE = DiskCache("hip", ".hsaco")


class HipBackend(DeviceBackend):
    name = "hip"
    preference = 10
    disk_cached = True
    device_array_platforms = frozenset({"hip"})     # cb.preload's DeviceBuffers

    def __init__(self):
        self._devices: dict[DeviceProperties, int] = {}

    def probe(self, index: int = 0, **_) -> DeviceProperties:
        hip, _ = _hip()
        try:
            count = _check(hip.hipGetDeviceCount(), "hipGetDeviceCount")
        except Exception as e:
            raise BackendUnavailableError(f"no AMD GPU: {str(e).splitlines()[0]}") from None
        if not count:
            raise BackendUnavailableError("no AMD GPU")
        if not 0 <= index < count:
            raise ArgumentValueError(f"HIP device index {index} is out of range ({count} GPUs)")
        p = hip.hipDeviceProp_t()
        _check(hip.hipGetDeviceProperties(p, index), "hipGetDeviceProperties")
        arch = _text(p.gcnArchName).split(":")[0]
        wave = int(p.warpSize)
        optin = int(getattr(p, "sharedMemPerBlockOptin", 0) or p.sharedMemPerBlock)
        props = DeviceProperties(
            name=f"{_text(p.name)} [{index}] {arch}", backend=self.name, plane_dim=wave, plane_size_min=wave,
            plane_size_max=wave, max_units_per_cube=int(p.maxThreadsPerBlock),
            max_cube_dim=tuple(int(v) for v in p.maxThreadsDim[:3]),
            max_cube_count=tuple(int(v) for v in p.maxGridSize[:3]),
            shared_memory_per_cube=optin, vector_widths=(1, 2, 4, 8, 16), checks_per_cube=True,
            checks_per_launch=True, checks_per_run=True,
            compute_units=int(p.multiProcessorCount),
            features=frozenset({"gpu", "fp16", "fp64", "bf16", "plane_ops", "atomics", "atomic_f32_add", arch}))
        self._devices[props] = index
        return props

    def render(self, kernel: Kernel, properties: DeviceProperties | None = None) -> Rendered:
        return render(kernel, HIP)

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Executable:
        hip, hiprtc = _hip()
        index = self._devices.get(properties, 0)
        arch = next((f for f in properties.features if f.startswith("gfx")), "gfx90a")
        rendered = self.render(kernel, properties)
        version = str(_check(hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion"))
        fp_flags = HIP.fp_flags[kernel.fastmath]

        def compile_code(options: tuple) -> bytes:
            prog = _check(hiprtc.hiprtcCreateProgram(rendered.source.encode(), f"{rendered.name}.hip".encode(),
                                                     0, [], []), "hiprtcCreateProgram")
            opts = [f"--offload-arch={arch}".encode(), b"-O3", b"-std=c++17", *(o.encode() for o in options)]
            err = hiprtc.hiprtcCompileProgram(prog, len(opts), opts)
            if getattr(err[0] if isinstance(err, tuple) else err, "value", 1) != 0:
                size = _check(hiprtc.hiprtcGetProgramLogSize(prog))
                log = bytearray(size)
                hiprtc.hiprtcGetProgramLog(prog, log)
                raise ToolchainError(f"hiprtc rejected the generated HIP code:\n{log.decode(errors='replace')}",
                                   kernel.name)
            size = _check(hiprtc.hiprtcGetCodeSize(prog), "hiprtcGetCodeSize")
            buf = bytearray(size)
            _check(hiprtc.hiprtcGetCode(prog, buf), "hiprtcGetCode")
            hiprtc.hiprtcDestroyProgram(prog.createRef())
            return bytes(buf)

        def build(answer: int | None, shape: tuple) -> tuple:
            options = (*fp_flags, *build_options(rendered, answer, shape))
            key = hashlib.sha256("\0".join((rendered.source, arch, version, *options)).encode()).hexdigest()
            code, from_disk = CACHE.get_or_build(key, lambda: compile_code(options))
            _check(hip.hipSetDevice(index), "hipSetDevice")
            module = _check(hip.hipModuleLoadData(code), "hipModuleLoadData")
            function = _check(hip.hipModuleGetFunction(module, rendered.name.encode()), "hipModuleGetFunction")
            return function, module, from_disk

        exe = Executable(rendered, index, build)
        if rendered.sites:
            rec = empty_record()
            exe.error = _check(hip.hipMalloc(rec.nbytes), "hipMalloc")
            _check(hip.hipMemcpy(exe.error, rec, rec.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
        return exe

    def source(self, kernel: Kernel, executable: Executable | None, properties: DeviceProperties, form: str) -> str:
        return executable.rendered.source if executable is not None else self.render(kernel).source

    def enqueue(self, executable: Executable, kernel: Kernel, cube_count, cube_dim, bound: list,
                properties: DeviceProperties) -> None:
        hip, _ = _hip()
        params, values, proven = kernel.params, [], False
        for slot in executable.rendered.args:
            if slot.kind == "buffer":
                values.append(bound[slot.param].buffer)
            elif slot.kind == "shape":
                shape = bound[slot.param].shape
                shape = shape[:-1] if params[slot.param].type.width > 1 else shape
                values.append(ctypes.c_int32(int(shape[slot.dim])))
            elif slot.kind == "scalar":
                values.append(_CTYPES[slot.numpy](np.dtype(slot.numpy).type(bound[slot.param]).item()))
            elif slot.kind == "launch_ok":
                proven = launch_in_bounds(kernel, cube_count, cube_dim, bound)
                values.append(ctypes.c_int32(int(proven)))
            else:
                values.append(executable.error)
        r = executable.rendered
        _check(hip.hipModuleLaunchKernel(executable.for_launch(cube_count, proven), *(int(c) for c in cube_count),
                                         *(int(d) for d in cube_dim), sharedMemBytes=r.dynamic_shared_bytes,
                                         stream=None, kernelParams=None, extra=tuple(values)),
               "hipModuleLaunchKernel")

    # --- memory: hipMalloc'd buffers, synchronous copies on the null stream ----------------------

    def alloc(self, nbytes: int, properties: DeviceProperties):
        hip, _ = _hip()
        _check(hip.hipSetDevice(self._devices.get(properties, 0)), "hipSetDevice")
        return _check(hip.hipMalloc(nbytes), "hipMalloc")

    def free(self, buffer) -> None:
        _hip()[0].hipFree(buffer)

    def copy_in(self, buffer, host: np.ndarray, properties: DeviceProperties) -> None:
        hip, _ = _hip()
        _check(hip.hipMemcpy(buffer, host, host.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice), "hipMemcpy")

    def copy_out(self, host: np.ndarray, buffer, properties: DeviceProperties) -> None:
        hip, _ = _hip()
        _check(hip.hipMemcpy(host, buffer, host.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost), "hipMemcpy")

    def device_index(self, properties: DeviceProperties) -> int:
        return self._devices.get(properties, 0)

    def event(self, properties: DeviceProperties) -> HipEvent:
        return HipEvent(_hip()[0])

    def finish(self, properties: DeviceProperties | None) -> None:
        _check(_hip()[0].hipDeviceSynchronize(), "hipDeviceSynchronize")

    def has_error_record(self, executable: Executable) -> bool:
        return executable.error is not None

    def read_record(self, executable: Executable) -> OutOfBoundsError | None:
        hip, _ = _hip()
        record = empty_record()
        _check(hip.hipMemcpy(record, executable.error, record.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost))
        if not record[0]:
            return None
        zero = empty_record()
        _check(hip.hipMemcpy(executable.error, zero, zero.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
        return oob_error(record, executable.rendered.sites, executable.rendered.kernel_name)


class HipEvent:
    """A HIP event recorded on the null stream, where launches go (never run: no AMD GPU here)."""

    def __init__(self, hip):
        self._hip, self._recorded = hip, False
        self._event = _check(hip.hipEventCreate(), "hipEventCreate")

    def record(self) -> None:
        _check(self._hip.hipEventRecord(self._event, None), "hipEventRecord")
        self._recorded = True

    def synchronize(self) -> None:
        not_recorded(not self._recorded)
        _check(self._hip.hipEventSynchronize(self._event), "hipEventSynchronize")

    def elapsed_ms(self, start: HipEvent) -> float:
        not_recorded(not (self._recorded and start._recorded))
        self.synchronize()
        return float(_check(self._hip.hipEventElapsedTime(start._event, self._event), "hipEventElapsedTime"))

    def done(self) -> bool:
        if not self._recorded:
            return False
        status = self._hip.hipEventQuery(self._event)
        status = status[0] if isinstance(status, tuple) else status
        return getattr(status, "value", status) == 0          # hipSuccess; hipErrorNotReady otherwise


def _text(v) -> str:
    return v.decode(errors="replace").rstrip("\0") if isinstance(v, (bytes, bytearray)) else str(v)


BACKEND = HipBackend()

__all__ = ["BACKEND", "Executable", "HipBackend"]
