"""WebGPU backend (wgpu-py, imported lazily): WGSL compute shaders from the IR (`wgsl.py`).

The plane size is the adapter's subgroup size (probed with a kernel), or 1 without subgroups,
or ``plane_dim=`` (a power of two up to 64). Plane ops run on the subgroup builtins where
subgroups are planes for the kernel's cube shape (runs of consecutive units, probed per shape),
else through workgroup memory between barriers (`subgroups`), which must then be reached by
every unit of the cube.

Arguments: NumPy arrays are copied to storage buffers for each launch (``Mut`` ones back, into the
same array, when the launch is done). WGSL has no 8- or 16-bit integers and no host-shareable
bool: such arrays travel as 32-bit words, widened and narrowed on the host. ``cb.preload`` keeps
an array in a storage buffer (`WgpuArray`). ``dev.event()`` uses timestamp queries where the
adapter has them, else the host clock.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubepy.errors import ArgumentValueError, BackendUnavailableError, ToolchainError
from cubepy.ir.nodes import Buffer, Kernel
from cubepy.runtime.device_arrays import DeviceArray, register_device_array
from cubepy.runtime.events import HostEvent
from cubepy.runtime.properties import DeviceProperties
from cubepy.runtime.residency import note_download, note_upload

from ..cstyle import empty_record, oob_error
from .checks import check_types
from .dialect import STORAGE_NUMPY
from .events import TimestampEvent
from .subgroups import barriers_hoisted, subgroup_size, subgroups_are_planes, uses_planes
from .wgsl import WgslRendered, render

_FEATURES = ("shader-f16", "shader-f64", "shader-int64", "shader-int64-atomic-all-ops", "subgroup", "timestamp-query")
_LIMITS = ("max-storage-buffers-per-shader-stage", "max-storage-buffer-binding-size", "max-buffer-size",
           "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
           "max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
           "max-compute-workgroups-per-dimension", "max-bindings-per-bind-group")


def _wgpu():
    try:
        import wgpu
    except ImportError:
        raise BackendUnavailableError("wgpu is not installed (pip install wgpu; Mesa's lavapipe gives a CPU "
                                      "adapter)") from None
    return wgpu


@dataclass(eq=False)
class _DeviceState:
    wgpu: Any
    adapter: Any
    device: Any
    features: frozenset
    native_plane: int | None = None     # the subgroup size, where subgroups can be planes
    fence: Any = None          # a small buffer whose read-back waits for the queue

    def wait(self) -> None:
        """Wait for all work submitted so far (the queue runs in order; a read-back waits for
        the last submission)."""
        if self.fence is None:
            self.fence = self.device.create_buffer(size=16, usage=self.wgpu.BufferUsage.COPY_SRC)
        self.device.queue.read_buffer(self.fence)


@dataclass(eq=False)
class Executable:
    rendered: WgslRendered
    pipeline: Any
    layout: Any
    state: _DeviceState
    args_buffer: Any = None
    error_buffer: Any = None


class WgpuArray:
    """An array in a storage buffer of a WebGPU device (what ``cb.preload`` gives there). Its
    elements are held as ``storage`` (32-bit words for bool and 8- and 16-bit integers)."""

    _serials = itertools.count(1)

    def __init__(self, buffer, shape: tuple, dtype: np.dtype, storage: np.dtype, state: _DeviceState):
        self.buffer, self.shape, self.dtype, self.storage, self.state = buffer, shape, dtype, storage, state
        self.serial = next(self._serials)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def copy(self) -> WgpuArray:
        device = self.state.device
        usage = self.buffer.usage
        twin = device.create_buffer(size=self.buffer.size, usage=usage)
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(self.buffer, 0, twin, 0, self.buffer.size)
        device.queue.submit([encoder.finish()])
        return WgpuArray(twin, self.shape, self.dtype, self.storage, self.state)


def _describe_wgpu_array(a: WgpuArray) -> DeviceArray:
    # no pointers in WebGPU: distinct buffers never overlap, so a serial per buffer orders them
    return DeviceArray(a, a.serial << 40, tuple(a.shape), a.dtype, False, "wgpu")


def _wgpu_array_facts(a: WgpuArray) -> tuple:
    return (a.dtype, len(a.shape), True)


def _storage_dtype(dtype: np.dtype) -> np.dtype:
    from cubepy.ir.types import dtype_from_numpy

    return np.dtype(STORAGE_NUMPY.get(dtype_from_numpy(dtype).name, dtype.name))


def _words(host: np.ndarray, storage: np.dtype) -> np.ndarray:
    """``host`` as the bytes of a storage buffer: widened to ``storage``, padded to 16 bytes at least."""
    data = np.ascontiguousarray(host).astype(storage, copy=False).reshape(-1).view(np.uint8)
    size = max(16, -(-data.nbytes // 4) * 4)
    if size != data.nbytes:
        data = np.concatenate([data, np.zeros(size - data.nbytes, np.uint8)])
    return data


def _upload(state: _DeviceState, host: np.ndarray, storage: np.dtype, what: str, kernel: str | None = None):
    """A storage buffer holding ``host``; one larger than the adapter binds is refused by name."""
    data = _words(host, storage)
    most = state.adapter.limits["max-storage-buffer-binding-size"]
    if data.nbytes > most:
        raise ArgumentValueError(f"{what} takes {data.nbytes} bytes on the WebGPU device, more than the {most} "
                                 "the adapter binds in one storage buffer; split the array", kernel)
    usage = state.wgpu.BufferUsage
    return state.device.create_buffer_with_data(data=data, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)


def _from_words(raw, storage: np.dtype, shape: tuple, dtype: np.dtype) -> np.ndarray:
    n = int(np.prod(shape))
    values = np.frombuffer(raw, storage, count=n).reshape(shape)
    return values != 0 if dtype == np.bool_ else values.astype(dtype, copy=False)


class WgpuBackend:
    name = "wgpu"
    device_array_platforms = frozenset({"wgpu"})

    def __init__(self):
        self._states: dict[DeviceProperties, _DeviceState] = {}
        self._pending: list[Executable] = []

    # --- devices ------------------------------------------------------------------------

    def probe(self, index: int = 0, plane_dim: int | None = None, **_) -> DeviceProperties:
        wgpu = _wgpu()
        register_device_array(WgpuArray, _describe_wgpu_array, _wgpu_array_facts)
        try:
            adapters = wgpu.gpu.enumerate_adapters_sync()
        except Exception as e:
            raise BackendUnavailableError(f"no WebGPU adapter: {str(e).splitlines()[0]}") from None
        adapters.sort(key=lambda a: a.info.get("adapter_type", "") in ("CPU", "cpu"))     # GPUs first
        if not adapters:
            raise BackendUnavailableError("no WebGPU adapter found")
        if not 0 <= index < len(adapters):
            raise ArgumentValueError(f"WebGPU adapter index {index} is out of range (found {len(adapters)})")
        adapter = adapters[index]
        features = frozenset(f for f in _FEATURES if f in adapter.features)
        limits = {k: adapter.limits[k] for k in _LIMITS if k in adapter.limits}
        device = adapter.request_device_sync(required_features=sorted(features), required_limits=limits)
        state = _DeviceState(wgpu, adapter, device, features)
        native = subgroup_size(state) if "subgroup" in features else None
        if plane_dim is None:
            plane_dim = native or 1
        elif isinstance(plane_dim, bool) or not isinstance(plane_dim, int) or not (
                1 <= plane_dim <= 64 and plane_dim & (plane_dim - 1) == 0):
            raise ArgumentValueError(f"WebGPU plane_dim must be a power of two from 1 to 64, got {plane_dim!r} "
                                     f"(the adapter's subgroup size, {native}, runs plane ops on subgroups)")
        state.native_plane = native
        info = adapter.info
        flags = {"atomics", "plane_ops", "atomic_f32_add"}
        flags |= {flag for feature, flag in (("shader-f16", "fp16"), ("shader-f64", "fp64"),
                                             ("shader-int64", "int64"), ("timestamp-query", "timestamps"))
                  if feature in features}
        if plane_dim > 1:
            flags.add("subgroups")
        if "shader-int64-atomic-all-ops" in features:
            flags.add("atomics64")
        if info.get("adapter_type", "") not in ("CPU", "cpu"):
            flags.add("gpu")
        lim = adapter.limits
        count = lim["max-compute-workgroups-per-dimension"]
        props = DeviceProperties(
            name=f"{info.get('device', '') or info.get('vendor', 'adapter')} [{index}]", backend=self.name,
            plane_dim=plane_dim, plane_size_min=plane_dim, plane_size_max=plane_dim,
            max_units_per_cube=lim["max-compute-invocations-per-workgroup"],
            max_cube_dim=tuple(lim[f"max-compute-workgroup-size-{a}"] for a in "xyz"),
            max_cube_count=(count, count, count),
            shared_memory_per_cube=lim["max-compute-workgroup-storage-size"],
            vector_widths=(1, 2, 4, 8, 16), compute_units=1, features=frozenset(flags))
        self._states[props] = state
        return props

    def _state(self, properties: DeviceProperties) -> _DeviceState:
        state = self._states.get(properties)
        if state is None:
            raise BackendUnavailableError(f"WebGPU device '{properties.name}' was not probed in this process")
        return state

    # --- compile ------------------------------------------------------------------------

    def render(self, kernel: Kernel, properties: DeviceProperties | None = None) -> WgslRendered:
        atomics64 = True
        emulate = False
        if properties is not None:
            check_types(kernel, properties)
            atomics64 = properties.supports("atomics64")
            state = self._state(properties)
            emulate = kernel.plane_dim > 1 and uses_planes(kernel) and (
                kernel.plane_dim != state.native_plane
                or not subgroups_are_planes(state, kernel.cube_dim, kernel.plane_dim))
        if emulate:
            kernel = barriers_hoisted(kernel)
        return render(kernel, atomics64=atomics64, emulate=emulate)

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Executable:
        state = self._state(properties)
        rendered = self.render(kernel, properties)
        wgpu, device = state.wgpu, state.device
        bindings = len(rendered.buffers) + (rendered.args_size > 0) + (rendered.error_binding is not None)
        most = state.adapter.limits["max-storage-buffers-per-shader-stage"]
        if bindings > most:
            raise ToolchainError(f"the kernel needs {bindings} storage buffers, more than the {most} the WebGPU "
                                 "adapter binds; pass fewer arrays", kernel.name)
        storage = wgpu.BufferBindingType.storage
        entries = [{"binding": b.binding, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": storage if b.writable else wgpu.BufferBindingType.read_only_storage}}
                   for b in rendered.buffers]
        if rendered.args_size:
            entries.append({"binding": rendered.args_binding, "visibility": wgpu.ShaderStage.COMPUTE,
                            "buffer": {"type": wgpu.BufferBindingType.read_only_storage}})
        if rendered.error_binding is not None:
            entries.append({"binding": rendered.error_binding, "visibility": wgpu.ShaderStage.COMPUTE,
                            "buffer": {"type": storage}})
        try:
            module = device.create_shader_module(code=rendered.source)
            layout = device.create_bind_group_layout(entries=entries)
            pipeline = device.create_compute_pipeline(
                layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": rendered.name})
        except Exception as e:
            raise ToolchainError(f"WebGPU rejected the generated WGSL:\n{e}", kernel.name) from None
        exe = Executable(rendered, pipeline, layout, state)
        usage = wgpu.BufferUsage
        if rendered.args_size:
            exe.args_buffer = device.create_buffer(size=rendered.args_size, usage=usage.STORAGE | usage.COPY_DST)
        if rendered.error_binding is not None:
            exe.error_buffer = device.create_buffer_with_data(
                data=empty_record(), usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
        return exe

    def source(self, kernel: Kernel, executable: Executable | None, properties: DeviceProperties, form: str) -> str:
        return executable.rendered.source if executable is not None else self.render(kernel).source

    # --- launch -------------------------------------------------------------------------

    def launch(self, executable: Executable, kernel: Kernel, cube_count, cube_dim, args: list,
               properties: DeviceProperties, options: dict) -> None:
        state, rendered = executable.state, executable.rendered
        device = state.device
        most = properties.max_cube_count[0]
        if any(int(c) > most for c in cube_count):
            raise ArgumentValueError(f"cube count {tuple(cube_count)} is more than the WebGPU adapter's {most} "
                                     "cubes per axis; spread the cubes over more axes", kernel.name)
        params = kernel.params
        entries, copy_back = [], []
        for slot in rendered.buffers:
            arr, param = args[slot.param], params[slot.param]
            if isinstance(arr, np.ndarray):
                storage = np.dtype(slot.numpy)
                if arr.size:
                    note_upload(kernel.name, param.name, arr)
                buffer = _upload(state, arr, storage, f"argument '{param.name}'", kernel.name)
                if param.mutable and arr.size:
                    copy_back.append((arr, buffer, storage))
            elif isinstance(arr, DeviceArray) and isinstance(arr.owner, WgpuArray):
                buffer = arr.owner.buffer
            else:
                raise ArgumentValueError(f"argument '{param.name}' is a {type(arr).__name__}, which the WebGPU "
                                         "device cannot use", kernel.name)
            entries.append({"binding": slot.binding, "resource": {"buffer": buffer, "offset": 0, "size": buffer.size}})
        if rendered.args_size:
            packed = np.zeros(rendered.args_size, np.uint8)
            for f in rendered.fields:
                value = _shape_of(args[f.param], params[f.param])[f.dim] if f.kind == "shape" else args[f.param]
                raw = np.array(value).astype(f.numpy).tobytes()
                packed[f.offset:f.offset + len(raw)] = np.frombuffer(raw, np.uint8)
            device.queue.write_buffer(executable.args_buffer, 0, packed)
            entries.append({"binding": rendered.args_binding, "resource": {"buffer": executable.args_buffer,
                                                                           "offset": 0, "size": rendered.args_size}})
        if executable.error_buffer is not None:
            entries.append({"binding": rendered.error_binding, "resource": {
                "buffer": executable.error_buffer, "offset": 0, "size": executable.error_buffer.size}})
        group = device.create_bind_group(layout=executable.layout, entries=entries)
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(executable.pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*(int(c) for c in cube_count))
        compute.end()
        device.queue.submit([encoder.finish()])
        for arr, buffer, storage in copy_back:
            np.copyto(arr, _from_words(device.queue.read_buffer(buffer), storage, arr.shape, arr.dtype),
                      casting="unsafe")
            note_download(kernel.name, arr)
        if executable.error_buffer is not None and executable not in self._pending:
            self._pending.append(executable)
        if copy_back:          # the host waited for the results: read the error records now
            self._check_errors()

    # --- residency, events, synchronization ------------------------------------------------

    def to_device(self, array: np.ndarray, properties: DeviceProperties) -> WgpuArray:
        """A storage-buffer copy of ``array`` on this device (for cb.preload)."""
        state = self._state(properties)
        storage = _storage_dtype(array.dtype)
        buffer = _upload(state, array, storage, "cb.preload's array")
        return WgpuArray(buffer, tuple(array.shape), array.dtype, storage, state)

    def to_host(self, data: WgpuArray, out: np.ndarray | None, properties: DeviceProperties) -> np.ndarray:
        values = _from_words(data.state.device.queue.read_buffer(data.buffer), data.storage, data.shape, data.dtype)
        if out is None:
            return values.copy() if values.base is not None else values
        np.copyto(out, values)
        return out

    def event(self, properties: DeviceProperties):
        state = self._state(properties)
        if "timestamp-query" in state.features:
            return TimestampEvent(state.wgpu, state.device)
        return HostEvent(lambda: self.synchronize(properties))

    def synchronize(self, properties: DeviceProperties | None = None) -> None:
        for state in self._states.values():
            state.wait()
        self._check_errors()

    def _check_errors(self) -> None:
        pending, self._pending = self._pending, []
        first = None
        for exe in pending:
            queue = exe.state.device.queue
            record = np.frombuffer(queue.read_buffer(exe.error_buffer), np.int32).copy()
            if record[0]:
                queue.write_buffer(exe.error_buffer, 0, empty_record())
                first = first or oob_error(record, exe.rendered.sites, exe.rendered.name)
        if first is not None:
            raise first


def _shape_of(arr, buf: Buffer) -> tuple[int, ...]:
    shape = tuple(int(s) for s in arr.shape)
    return shape[:-1] if buf.type.width > 1 else shape


BACKEND = WgpuBackend()

__all__ = ["BACKEND", "Executable", "WgpuArray", "WgpuBackend"]
