"""WebGPU backend (wgpu-py, imported lazily): WGSL compute shaders from the IR (`wgsl.py`).

The plane size is the adapter's subgroup size (probed with a kernel), or 1 without subgroups,
or ``plane_dim=`` (a power of two up to 64). Plane ops run on the subgroup builtins where
subgroups are planes for the kernel's cube shape (runs of consecutive units, probed per shape),
else through workgroup memory between barriers (`subgroups`), which must then be reached by
every unit of the cube.

The host side is `cubepy.runtime.device_host.DeviceBackend`'s: NumPy arguments are copied to
storage buffers for each launch (``Mut`` ones back, into the same array), ``cb.preload`` keeps
an array in one. WGSL has no 8- or 16-bit integers and no host-shareable bool: such arrays are
held as 32-bit words, widened on the way in and narrowed on the way out (`_Storage`).
``dev.event()`` uses timestamp queries where the adapter has them, else the host clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cubepy.errors import ArgumentValueError, BackendUnavailableError, OutOfBoundsError, ToolchainError
from cubepy.ir.nodes import Buffer, Kernel
from cubepy.runtime.device_host import DeviceBackend
from cubepy.runtime.properties import DeviceProperties

from .checks import check_types
from .events import TimestampEvent
from .quirks import WORST, Quirks, probe_quirks, worst
from .subgroups import barriers_hoisted, subgroup_size, subgroups_are_planes, uses_planes

if TYPE_CHECKING:       # the renderer is imported at the first compile: the registry imports every backend
    from .wgsl import WgslRendered

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
    quirks: Quirks = WORST              # what its shader compiler does to arithmetic (probed)
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


# what a storage buffer holds per host element, where WGSL has no such type (bool arrives as bytes)
_WIDE = {np.dtype(np.int8): np.dtype(np.int32), np.dtype(np.int16): np.dtype(np.int32),
         np.dtype(np.uint8): np.dtype(np.uint32), np.dtype(np.uint16): np.dtype(np.uint32)}


def _wide(dtype: np.dtype) -> np.dtype:
    return _WIDE.get(dtype, dtype)


class _Storage:
    """A storage buffer, made when its data arrives (`WgpuBackend.copy_in`): only then is it known
    whether it holds 32-bit words for 8- and 16-bit elements."""

    __slots__ = ("state", "nbytes", "gpu")

    def __init__(self, state: _DeviceState, nbytes: int):
        self.state, self.nbytes, self.gpu = state, nbytes, None

    def buffer(self):
        if self.gpu is None:                # never written (an empty array): zeros, room for words
            usage = self.state.wgpu.BufferUsage
            self.gpu = self.state.device.create_buffer(size=max(16, 4 * -(-self.nbytes // 4)),
                                                       usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
        return self.gpu


def _words(host: np.ndarray, storage: np.dtype) -> np.ndarray:
    """``host`` as the bytes of a storage buffer: widened to ``storage``, padded to 16 bytes at least."""
    data = np.ascontiguousarray(host).astype(storage, copy=False).reshape(-1).view(np.uint8)
    size = max(16, -(-data.nbytes // 4) * 4)
    if size != data.nbytes:
        data = np.concatenate([data, np.zeros(size - data.nbytes, np.uint8)])
    return data


class WgpuBackend(DeviceBackend):
    name = "wgpu"
    preference = 30            # after the vendors' GPU backends, before the CPU
    # Only where named: the conformance suite passes on lavapipe and on NVIDIA's Vulkan driver
    # (with the probed workarounds, `quirks.py`), but no other vendor's driver has run it, and
    # probing Vulkan would cost every CPU-only process its start-up (docs/device-runs.md).
    default_candidate = False
    device_array_platforms = frozenset({"wgpu"})

    def __init__(self):
        self._states: dict[DeviceProperties, _DeviceState] = {}

    # --- devices ------------------------------------------------------------------------

    def probe(self, index: int = 0, plane_dim: int | None = None, workarounds: str = "probed", **_) -> DeviceProperties:
        """``workarounds``: "probed" renders the arithmetic workarounds the adapter needs, found by
        probe shaders (`quirks.probe_quirks`); "all" renders every one, whatever the adapter does."""
        if workarounds not in ("probed", "all"):
            raise ArgumentValueError(f"WebGPU workarounds must be 'probed' or 'all', got {workarounds!r}")
        wgpu = _wgpu()
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
        probed = probe_quirks(state)
        state.quirks = probed if workarounds == "probed" else worst("shader-f64" in features)
        info = adapter.info
        flags = {"atomics", "plane_ops", "atomic_f32_add"}
        flags |= {flag for feature, flag in (("shader-f16", "fp16"), ("shader-f64", "fp64"),
                                             ("shader-int64", "int64"), ("timestamp-query", "timestamps"))
                  if feature in features}
        if plane_dim > 1:
            flags.add("subgroups")
        if probed.flushes_f32_subnormals:
            flags.add("flushes_f32_subnormals")
        if "shader-int64-atomic-all-ops" in features:
            flags.add("atomics64")
        if info.get("adapter_type", "") not in ("CPU", "cpu"):
            flags.add("gpu")
        lim = adapter.limits
        count = lim["max-compute-workgroups-per-dimension"]
        props = DeviceProperties(
            name=f"{info.get('device', '') or info.get('vendor', 'adapter')} [{index}]"
                 + (" (all workarounds)" if workarounds == "all" else ""), backend=self.name,
            plane_dim=plane_dim, plane_size_min=plane_dim, plane_size_max=plane_dim,
            max_units_per_cube=lim["max-compute-invocations-per-workgroup"],
            max_cube_dim=tuple(lim[f"max-compute-workgroup-size-{a}"] for a in "xyz"),
            max_cube_count=(count, count, count),
            shared_memory_per_cube=lim["max-compute-workgroup-storage-size"],
            vector_widths=(1, 2, 4, 8, 16), compute_units=1, features=frozenset(flags))
        # a device probed again with the same properties keeps its first state: its pipelines and
        # buffers belong to that GPUDevice, and the runtime finds them by the properties
        self._states.setdefault(props, state)
        return props

    def quirks(self, properties: DeviceProperties) -> Quirks:
        """What the probe found about this adapter's arithmetic, i.e. which workarounds its kernels
        render (`quirks.Quirks`; every one with ``workarounds="all"``)."""
        return self._state(properties).quirks

    def _state(self, properties: DeviceProperties) -> _DeviceState:
        state = self._states.get(properties)
        if state is None:
            raise BackendUnavailableError(f"WebGPU device '{properties.name}' was not probed in this process")
        return state

    # --- compile ------------------------------------------------------------------------

    def render(self, kernel: Kernel, properties: DeviceProperties | None = None) -> WgslRendered:
        atomics64 = True
        emulate = False
        quirks = WORST
        if properties is not None:
            check_types(kernel, properties)
            atomics64 = properties.supports("atomics64")
            state = self._state(properties)
            quirks = state.quirks
            emulate = kernel.plane_dim > 1 and uses_planes(kernel) and (
                kernel.plane_dim != state.native_plane
                or not subgroups_are_planes(state, kernel.cube_dim, kernel.plane_dim))
        if emulate:
            kernel = barriers_hoisted(kernel)
        from .wgsl import render

        return render(kernel, atomics64=atomics64, emulate=emulate, quirks=quirks)

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Executable:
        state = self._state(properties)
        rendered = self.render(kernel, properties)
        wgpu, device = state.wgpu, state.device
        bindings = len(rendered.buffers) + 1 + (rendered.error_binding is not None)     # + the argument struct
        most = state.adapter.limits["max-storage-buffers-per-shader-stage"]
        if bindings > most:
            raise ToolchainError(f"the kernel needs {bindings} storage buffers, more than the {most} the WebGPU "
                                 "adapter binds; pass fewer arrays", kernel.name)
        storage = wgpu.BufferBindingType.storage
        entries = [{"binding": b.binding, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": storage if b.writable else wgpu.BufferBindingType.read_only_storage}}
                   for b in rendered.buffers]
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
        exe.args_buffer = device.create_buffer(size=rendered.args_size, usage=usage.STORAGE | usage.COPY_DST)
        if rendered.error_binding is not None:
            from ..cstyle import empty_record

            exe.error_buffer = device.create_buffer_with_data(
                data=empty_record(), usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)
        return exe

    def source(self, kernel: Kernel, executable: Executable | None, properties: DeviceProperties, form: str) -> str:
        return executable.rendered.source if executable is not None else self.render(kernel).source

    # --- launch -------------------------------------------------------------------------

    def enqueue(self, executable: Executable, kernel: Kernel, cube_count, cube_dim, bound: list,
                properties: DeviceProperties) -> None:
        state, rendered = executable.state, executable.rendered
        device = state.device
        most = properties.max_cube_count[0]
        if any(int(c) > most for c in cube_count):
            raise ArgumentValueError(f"cube count {tuple(cube_count)} is more than the WebGPU adapter's {most} "
                                     "cubes per axis; spread the cubes over more axes", kernel.name)
        params = kernel.params
        entries = []
        for slot in rendered.buffers:
            buffer = bound[slot.param].buffer.buffer()
            entries.append({"binding": slot.binding, "resource": {"buffer": buffer, "offset": 0, "size": buffer.size}})
        packed = np.zeros(rendered.args_size, np.uint8)
        for f in rendered.fields:
            value = (_shape_of(bound[f.param], params[f.param])[f.dim] if f.kind == "shape" else
                     0 if f.kind == "zero" else bound[f.param])
            raw = np.frombuffer(np.array(value).astype(f.numpy).tobytes(), np.uint8)
            packed[f.offset:f.offset + len(raw)] = raw
        device.queue.write_buffer(executable.args_buffer, 0, packed)      # in order with the dispatches
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

    def finish(self, properties: DeviceProperties | None) -> None:
        for state in self._states.values():
            state.wait()

    def has_error_record(self, executable: Executable) -> bool:
        return executable.error_buffer is not None

    def read_record(self, executable: Executable) -> OutOfBoundsError | None:
        from ..cstyle import empty_record, oob_error

        queue = executable.state.device.queue
        record = np.frombuffer(queue.read_buffer(executable.error_buffer), np.int32).copy()
        if not record[0]:
            return None
        queue.write_buffer(executable.error_buffer, 0, empty_record())
        return oob_error(record, executable.rendered.sites, executable.rendered.kernel_name)

    def event(self, properties: DeviceProperties):
        state = self._state(properties)
        if "timestamp-query" in state.features:
            return TimestampEvent(state.wgpu, state.device)
        return super().event(properties)

    # --- memory: storage buffers ----------------------------------------------------------------

    def alloc(self, nbytes: int, properties: DeviceProperties) -> _Storage:
        return _Storage(self._state(properties), nbytes)

    def copy_in(self, buffer: _Storage, host: np.ndarray, properties: DeviceProperties) -> None:
        data = _words(host, _wide(host.dtype))
        most = buffer.state.adapter.limits["max-storage-buffer-binding-size"]
        if data.nbytes > most:
            raise ArgumentValueError(f"an array of {host.size} {host.dtype} takes {data.nbytes} bytes on the WebGPU "
                                     f"device, more than the {most} the adapter binds in one storage buffer; split it")
        usage = buffer.state.wgpu.BufferUsage
        buffer.gpu = buffer.state.device.create_buffer_with_data(
            data=data, usage=usage.STORAGE | usage.COPY_SRC | usage.COPY_DST)

    def copy_out(self, host: np.ndarray, buffer: _Storage, properties: DeviceProperties) -> None:
        raw = buffer.state.device.queue.read_buffer(buffer.buffer())      # waits for the work before
        values = np.frombuffer(raw, _wide(host.dtype), count=host.size).reshape(host.shape)
        np.copyto(host, values, casting="unsafe")


def _shape_of(arr, buf: Buffer) -> tuple[int, ...]:
    shape = tuple(int(s) for s in arr.shape)
    return shape[:-1] if buf.type.width > 1 else shape


BACKEND = WgpuBackend()

__all__ = ["BACKEND", "Executable", "WgpuBackend"]
