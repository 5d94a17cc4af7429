"""OpenCL backend (pyopencl, imported lazily): OpenCL C from the shared C-style renderer.

Plane operations run on the device's sub-group builtins where it has them (``cl_khr_subgroups``,
with ``cl_khr_subgroup_shuffle`` and ``cl_khr_subgroup_ballot`` for shuffles and ballots) and its
sub-group size is the plane size; each op it lacks, and every op on other devices, is emulated
through local memory. The plane size is the sub-group size a probe kernel gets, else the
preferred work-group size multiple, or ``plane_dim=`` given to ``cb.device("opencl", plane_dim=...)``;
``build_options=("-cl-opt-disable",)`` adds compiler options (the fuzzer compiles faster so).
A compiled kernel whose sub-groups come out another size is rendered again, emulated. Emulated
plane ops use work-group barriers, so on this backend they must be reached by every unit of the
cube (cube-uniform control flow). Neither PoCL's CPU device nor NVIDIA's driver has sub-groups:
the builtin path is compile-checked (clang, SPIR) but has not run on a device.

Checked kernels are versioned per cube and tested per run of loads as on CUDA, and the host
decides a whole launch first (`cubepy.runtime.launch_checks`; ``checks_per_launch=False`` leaves
that to the cube's test): each program is built per kind of launch (`cstyle.builds`: the host's
answer and the launch's shape), the first when the kernel is compiled, each other at its first
launch.

Compiled programs: drivers that keep a compile cache of their own (PoCL, NVIDIA's; pyopencl's
``has_src_build_cache``) keep them; on other drivers the device's binaries go to the disk cache
(`cubepy.runtime.disk_cache`, namespace "opencl"), keyed by the source, the build options, the
device, its driver and its platform. pyopencl's own cache is not used. (Asking PoCL for a
program's binaries costs it as much again as the build: 2.0 against 3.7 s per fuzzer kernel.)

Arguments: NumPy arrays are copied in (and Mut ones back, into the same array, after the
launch); ``pyopencl.array.Array`` arguments (of this device's context, at offset 0) are used in
place: the runtime describes them as `DeviceArray`s of platform "opencl", and warm launches of
them take the direct path (`direct_launcher`: the arguments set and the build enqueued, nothing
in between).
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any

import numpy as np

from cubepy.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BackendUnavailableError,
    CubeTypeError,
    OutOfBoundsError,
    ToolchainError,
)
from cubepy.ir.nodes import PLANE_OPS, Kernel, copied, walk
from cubepy.ir.types import RUNTIME_CUBE_UNITS
from cubepy.runtime.backend import DirectLauncher
from cubepy.runtime.device_arrays import DeviceArray, NotContiguous, register_device_array
from cubepy.runtime.device_host import DeviceBackend
from cubepy.runtime.disk_cache import DiskCache
from cubepy.runtime.events import not_recorded
from cubepy.runtime.launch_checks import launch_in_bounds
from cubepy.runtime.properties import DeviceProperties

from ..cstyle import OPENCL, OPENCL_NVIDIA, OPENCL_SUBGROUP_OPS, Dialect, Rendered, empty_record, oob_error, render
from ..cstyle.builds import BuildFn, Builds, build_options

CACHE = DiskCache("opencl", ".clbin")
_STREAM: ContextVar[Any] = ContextVar("cubepy_opencl_queue", default=None)     # use_stream's queue


def _cl():
    try:
        import pyopencl as cl
    except ImportError:
        raise BackendUnavailableError("pyopencl is not installed (pip install pyopencl; "
                                      "pocl-binary-distribution gives a CPU device)") from None
    return cl


@dataclass(eq=False)
class _DeviceState:
    cl_device: Any
    context: Any
    queue: Any
    dialect: Dialect = OPENCL          # with the sub-group builtins this device has, if any
    build_options: tuple = ()          # more compiler options, e.g. -cl-opt-disable to compile faster
    strict_options: tuple = ()         # what strict floating point needs on this device
    driver_caches: bool = False        # the driver keeps a compile cache of its own
    # one program for every CubeDim pays (PoCL builds a work-group function per local size at the
    # first enqueue anyway, and without reqd_work_group_size its conformance suite compiled 2.6x
    # slower: 60 s against 23 s on the 2-core machine)
    shape_generic: bool = True
    # held from a launch's set_args to its enqueue: a pyopencl.Kernel keeps the arguments it was
    # last given, and two threads launching one build must not enqueue each other's
    arguments: threading.Lock = field(default_factory=threading.Lock)


class Executable(Builds):
    """A kernel's programs on one device: one source, built once per kind of launch on first need
    (`Builds`: per answer to the launch test and per launch shape; a build's function is its
    ``pyopencl.Kernel``, a program the module that keeps it), with the device-side error record."""

    __slots__ = ("state", "error_buffer", "plan")

    def __init__(self, rendered: Rendered, state: _DeviceState, build: BuildFn):
        self.state, self.error_buffer = state, None
        # per argument slot: (kind, param index, the extent's axis or the scalar's NumPy type); a
        # Line array's extents leave out its last axis (the Line's), which no slot names
        self.plan = tuple((slot.kind, slot.param, np.dtype(slot.numpy).type if slot.kind == "scalar" else slot.dim)
                          for slot in rendered.args)
        super().__init__(rendered, build)


_SUB_GROUP_PROBE = """#pragma OPENCL EXTENSION cl_khr_subgroups : enable
__kernel void cb_probe(__global int* x) { x[get_global_id(0)] = sub_group_reduce_add(x[get_global_id(0)]); }"""


def _sub_group_size(cl, ctx, dev, extensions: set[str]) -> int | None:
    """The sub-group size a 256-unit cube gets on this device, if it has sub-groups (and the size
    is a power of two up to 64), else None."""
    if "cl_khr_subgroups" not in extensions:
        return None
    try:
        program = cl.Program(ctx, _SUB_GROUP_PROBE).build(options=["-cl-std=CL2.0"])
        size = int(program.cb_probe.get_sub_group_info(
            dev, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE, (256,)))
    except Exception:       # a driver that lists the extension but cannot build or query it
        return None
    return size if 1 <= size <= 64 and size & (size - 1) == 0 else None


def _kernel_sub_group_size(cl, state: _DeviceState, function, kernel: Kernel) -> int | None:
    try:
        return int(function.get_sub_group_info(
            state.cl_device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE, tuple(kernel.cube_dim)))
    except Exception:
        return None


def _working_device(cl, found: list, index: int) -> tuple:
    """``(platform index, device, context, preferred work-group multiple)`` of the ``index``-th
    device whose compiler builds a trivial kernel. A driver that lists a device it cannot compile
    for (PoCL 3.0 on CPUs its LLVM does not know: "unknown target CPU 'generic'") is skipped."""
    working, failure = [], None
    for pi, dev in found:
        try:
            ctx = cl.Context([dev])
            working.append((pi, dev, ctx, _preferred_multiple(cl, ctx, dev)))
        except Exception as e:
            lines = [ln.strip() for ln in str(e).splitlines() if "error" in ln.lower()] or str(e).splitlines()
            failure = failure or f"{dev.name.strip()}: {lines[0] if lines else type(e).__name__}"
            continue
        if len(working) > index:
            return working[index]
    if not working:
        raise BackendUnavailableError(f"no OpenCL device whose compiler works ({failure})")
    raise ArgumentValueError(f"OpenCL device index {index} is out of range (found {len(working)} working devices)")


def _preferred_multiple(cl, ctx, dev) -> int:
    prog = cl.Program(ctx, "__kernel void cb_probe(__global int* x) { x[get_global_id(0)] = 0; }").build()
    mult = prog.cb_probe.get_work_group_info(cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, dev)
    return 1 << (max(1, min(64, int(mult))).bit_length() - 1)


def _describe_cl_array(a) -> DeviceArray:
    """A pyopencl array as a DeviceArray. OpenCL has no pointers: ``ptr`` orders buffers by their
    handle (distinct buffers never overlap) and places the array at its offset inside its buffer."""
    if not a.flags.c_contiguous:
        raise NotContiguous(f"strides {a.strides}")
    if a.offset:
        raise ValueError(f"is an OpenCL array at offset {a.offset} inside its buffer; pass a copy at offset 0")
    return DeviceArray(a, (a.base_data.int_ptr << _HANDLE_SHIFT) + a.offset, tuple(a.shape), a.dtype, False,
                       "opencl")


def _ranges(cube_count, cube_dim) -> tuple[tuple, tuple]:
    """The launch's global and local ranges (3-D: as fast to enqueue on PoCL as 1-D,
    `benchmarks/gpu/opencl_enqueue.py`)."""
    local = tuple(int(d) for d in cube_dim)
    return tuple(int(c) * d for c, d in zip(cube_count, local)), local


def _cl_array_facts(a) -> tuple:
    return (a.dtype, a.ndim, a.flags.c_contiguous)


def _cl_array_raw(a) -> tuple | None:
    """The warm path's reading of a pyopencl array (`register_device_array`): its "pointer" is the
    `DeviceArray`'s (the buffer's handle, shifted: distinct buffers never overlap), for the warm
    path's aliasing test; the direct launcher takes the array itself (an ``owner`` slot) and
    passes its buffer. An array at an offset takes the full path, which says why."""
    if a.offset:
        return None
    return (a.dtype, a.shape, a.base_data.int_ptr << _HANDLE_SHIFT, a.flags.c_contiguous, False, None)


_HANDLE_SHIFT = 40


class OpenCLBackend(DeviceBackend):
    name = "opencl"
    preference = 20
    device_array_platforms = frozenset({"opencl"})
    takes_streams = True
    runtime_cube_dim = True

    def prefers_shape_generic(self, properties: DeviceProperties) -> bool:
        return self._state(properties).shape_generic

    def accepts_shape_generic(self, kernel: Kernel, properties: DeviceProperties) -> bool:
        # a sub-group's size may depend on the work-group's, and the emulation's scratch on its units
        return not any(op.opcode in PLANE_OPS or op.opcode == "builtin" and op.attrs["name"] == "unit_pos_plane"
                       for op in walk(kernel.body))

    def units_limit(self, executable: Executable) -> int:
        cl = _cl()
        most = executable.any_function.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                                     executable.state.cl_device)
        return min(int(most), RUNTIME_CUBE_UNITS)

    def __init__(self):
        self._states: dict[DeviceProperties, _DeviceState] = {}
        self._user_queues: list = []      # queues given as stream=, finished at synchronize()

    # --- devices ------------------------------------------------------------------------

    def probe(self, index: int = 0, platform: int | None = None, plane_dim: int | None = None,
              build_options: tuple = (), checks_per_launch: bool = True, **_) -> DeviceProperties:
        cl = _cl()
        import pyopencl.array

        register_device_array(pyopencl.array.Array, _describe_cl_array, _cl_array_facts, raw=_cl_array_raw,
                              platform="opencl")
        try:
            platforms = cl.get_platforms()
        except Exception as e:  # no ICD loader or no platform
            raise BackendUnavailableError(f"no OpenCL platform: {str(e).splitlines()[0]}") from None
        found = [(pi, d) for pi, p in enumerate(platforms) if platform is None or pi == platform
                 for d in p.get_devices()]
        found.sort(key=lambda item: not item[1].type & cl.device_type.GPU)   # GPUs first, else in order
        if not found:
            raise BackendUnavailableError("no OpenCL device found")
        pi, dev, ctx, multiple = _working_device(cl, found, index)
        queue = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
        ext = set(dev.extensions.split())
        native = _sub_group_size(cl, ctx, dev, ext)
        if plane_dim is None:
            plane_dim = native or multiple
        elif isinstance(plane_dim, bool) or not isinstance(plane_dim, int) or not (
                1 <= plane_dim <= 64 and plane_dim & (plane_dim - 1) == 0):
            raise ArgumentValueError(f"OpenCL plane_dim must be a power of two from 1 to 64, got {plane_dim!r}")
        # NVIDIA's compiler takes inline PTX: CUDA's workarounds of ptxas written in it apply there too
        dialect = OPENCL_NVIDIA if "NVIDIA" in platforms[pi].name else OPENCL
        if native == plane_dim:
            dialect = dialect.with_(subgroup_ops={op: entry for op, entry in OPENCL_SUBGROUP_OPS.items()
                                                  if entry[0] in ext})
        pocl = "Portable Computing Language" in platforms[pi].name
        if pocl:
            # PoCL adds barriers of its own to loops whose trip count looks uniform (in kernels
            # with barriers) and miscompiles them: a guard after such a loop let every
            # work-item through. Trip counts read through a volatile stop it doing so. A barrier
            # loop with several exits gets a barrier after it, where its exits meet (one exit
            # threaded straight to the kernel's end by LLVM let every work-item through a guard
            # after the loop). A barrier loop that never reaches the end of its body becomes an
            # if, and a continue before a barrier a flag, so that LLVM finds no barrier under a
            # conditional of its own making (both let every work-item through a guard).
            dialect = dialect.with_(opaque_loops=True, join_loop_exits=True, unloop_once=True, flag_continues=True)
        features = {"plane_ops", "atomics"} | ({"subgroups"} if dialect.subgroup_ops else set())
        if dev.type & cl.device_type.GPU:
            features.add("gpu")
        if "cl_khr_fp64" in ext or dev.double_fp_config:
            features.add("fp64")
        if "cl_khr_fp16" in ext:
            features.add("fp16")
        sizes = tuple(int(s) for s in dev.max_work_item_sizes) + (1, 1)
        props = DeviceProperties(
            name=f"{dev.name.strip()} [{pi}:{index}]" + "".join(f" {o}" for o in build_options), backend=self.name,
            plane_dim=plane_dim,
            plane_size_min=plane_dim, plane_size_max=plane_dim,
            max_units_per_cube=int(dev.max_work_group_size), max_cube_dim=sizes[:3],
            max_cube_count=(2**31 - 1, 2**31 - 1, 2**31 - 1),
            shared_memory_per_cube=int(dev.local_mem_size) - 8 * int(dev.max_work_group_size),
            vector_widths=(1, 2, 4, 8, 16), compute_units=int(dev.max_compute_units),
            features=frozenset(features), checks_per_cube=True, checks_per_run=True,
            checks_per_launch=bool(checks_per_launch), versions_barriers=False)
        if isinstance(build_options, str) or not all(isinstance(o, str) for o in build_options):
            raise ArgumentValueError(f"build_options takes a tuple of OpenCL compiler options, got {build_options!r}")
        # f32 division and sqrt may be approximate (2.5 and 3 ulp) in OpenCL unless asked for
        strict = (("-cl-fp32-correctly-rounded-divide-sqrt",)
                  if dev.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT else ())
        from pyopencl.characterize import has_src_build_cache

        # a device probed again with the same properties keeps its first state: its executables
        # were built in that context, and the runtime finds them by the properties
        self._states.setdefault(props, _DeviceState(dev, ctx, queue, dialect, tuple(build_options), strict,
                                                    bool(has_src_build_cache(dev)), shape_generic=not pocl))
        return props

    def queue(self, properties: DeviceProperties):
        """The device's pyopencl CommandQueue: make `pyopencl.array` arrays with it to have kernels
        use them in place (``cb.device("opencl").backend.queue(dev.properties)``)."""
        return self._state(properties).queue

    def _state(self, properties: DeviceProperties) -> _DeviceState:
        state = self._states.get(properties)
        if state is None:
            raise BackendUnavailableError(f"OpenCL device '{properties.name}' was not probed in this process")
        return state

    # --- compile ------------------------------------------------------------------------

    def render(self, kernel: Kernel, properties: DeviceProperties | None = None) -> Rendered:
        state = self._states.get(properties)
        dialect = state.dialect if state is not None else OPENCL
        return render(_barriers_hoisted(kernel, dialect), dialect)

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Executable:
        cl = _cl()
        state = self._state(properties)
        _check_float_types(kernel, properties)
        rendered = self.render(kernel, properties)
        exe = self._executable(cl, state, rendered, kernel)
        if rendered.subgroups and _kernel_sub_group_size(cl, state, exe.any_function, kernel) != kernel.plane_dim:
            emulated = state.dialect.with_(subgroup_ops={})               # sub-groups of another size: emulate
            exe = self._executable(cl, state, render(_barriers_hoisted(kernel, emulated), emulated), kernel)
        return exe

    def snapshot(self, executable: Executable, properties: DeviceProperties) -> bytes:
        return pickle.dumps(executable.rendered, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, kernel: Kernel, properties: DeviceProperties, snapshot: bytes) -> Executable:
        # the source as rendered for this device: built as `compile` builds it (from the binary in
        # the disk cache, under a key of the source, the device, its driver and the options)
        cl = _cl()
        state = self._state(properties)
        return self._executable(cl, state, pickle.loads(snapshot), kernel)

    @classmethod
    def _executable(cls, cl, state: _DeviceState, rendered: Rendered, kernel: Kernel) -> Executable:
        # the scalar parameters' types, given to each pyopencl.Kernel: its set_args then packs them
        # in 0.6 us, against 31 us where it finds each argument's type itself (PoCL, 6 arguments,
        # benchmarks/gpu/opencl_enqueue.py)
        scalar_types = [None if slot.kind in ("buffer", "error") else
                        np.dtype(slot.numpy) if slot.kind == "scalar" else np.dtype(np.int32)
                        for slot in rendered.args]

        def build(answer: int | None, shape: tuple) -> tuple:
            program, from_disk = cls._build(cl, state, rendered, kernel, build_options(rendered, answer, shape))
            function = cl.Kernel(program, rendered.name)
            function.set_scalar_arg_dtypes(scalar_types)
            return function, program, from_disk

        exe = Executable(rendered, state, build)
        if rendered.sites:
            exe.error_buffer = cl.Buffer(state.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                         hostbuf=empty_record())
        return exe

    @staticmethod
    def _build(cl, state: _DeviceState, rendered: Rendered, kernel: Kernel, defines: tuple) -> tuple[Any, bool]:
        """``(program, from_disk)`` of the source built with ``defines`` (`build_options`): compiled
        where the driver caches compiles itself; else built from the device's binary in the disk
        cache, or compiled (once across processes) and its binary stored."""
        strict = state.strict_options if kernel.fastmath is None else ()
        options = [*OPENCL.fp_flags[kernel.fastmath], *strict, *state.build_options, *defines]

        def compile_source():
            try:
                return cl.Program(state.context, rendered.source).build(options=options, cache_dir=False)
            except cl.RuntimeError as e:
                raise ToolchainError(f"the OpenCL compiler rejected the generated code:\n{e}", kernel.name) from None

        if state.driver_caches:
            return compile_source(), False
        dev = state.cl_device
        key = sha256("\0".join((rendered.source, dev.platform.name, dev.platform.version, dev.name,
                                dev.driver_version, *options)).encode()).hexdigest()
        built = []

        def compile_binary() -> bytes:
            built.append(compile_source())
            return bytes(built[0].get_info(cl.program_info.BINARIES)[0])

        binary, _ = CACHE.get_or_build(key, compile_binary)
        if built:
            return built[0], False
        try:
            return cl.Program(state.context, [dev], [binary]).build(options=options), True
        except cl.Error:                    # a binary this driver no longer loads: compile again
            CACHE.discard(key)
            return compile_source(), False

    def source(self, kernel: Kernel, executable: Executable | None, properties: DeviceProperties, form: str) -> str:
        return executable.rendered.source if executable is not None else self.render(kernel).source

    # --- launch -------------------------------------------------------------------------

    def launch_scope(self, executable: Executable, properties: DeviceProperties, options: dict):
        stream = options.get("stream")
        return nullcontext() if stream is None else self.use_stream(stream, properties, executable.rendered.kernel_name)

    def enqueue(self, executable: Executable, kernel: Kernel, cube_count, cube_dim, bound: list,
                properties: DeviceProperties) -> None:
        values, proven = [], False
        for kind, param, extra in executable.plan:
            if kind == "buffer":
                values.append(bound[param].buffer)
            elif kind == "shape":
                values.append(int(bound[param].shape[extra]))
            elif kind == "scalar":
                values.append(extra(bound[param]))
            elif kind == "launch_ok":
                proven = launch_in_bounds(kernel, cube_count, cube_dim, bound)
                values.append(int(proven))
            else:
                values.append(executable.error_buffer)
        function = executable.for_launch(cube_count, proven)
        gsize, local = _ranges(cube_count, cube_dim)
        with executable.state.arguments:       # a pyopencl.Kernel holds its arguments until enqueued
            function.set_args(*values)
            _cl().enqueue_nd_range_kernel(self._current_queue(executable.state), function, gsize, local)

    def direct_launcher(self, executable: Executable, kernel: Kernel, properties: DeviceProperties,
                        cube_count, cube_dim, options: dict) -> DirectLauncher:
        """The warm path's entry for pyopencl arrays: set the build's arguments and enqueue it on
        the current queue (``stream=``'s, else the device's), nothing in between."""
        cl = _cl()
        slots, kinds = [], []
        for kind, param, extra in executable.plan:
            if kind == "buffer":
                slots.append(("owner", param, None))
            elif kind == "shape":
                slots.append(("extent", param, extra))
            elif kind == "scalar":
                slots.append(("scalar", param))
            elif kind == "launch_ok":
                slots.append(("launch_ok", None, None))
            kinds.append((kind, extra))
        selector = next((k for k, slot in enumerate(slots) if slot[0] == "launch_ok"), None)
        shape = executable.shape(cube_count)
        found = executable.proven(shape)
        proven = found if found is not None else executable.function(shape)
        gsize, local = _ranges(cube_count, cube_dim)
        state, error, enqueue = executable.state, executable.error_buffer, cl.enqueue_nd_range_kernel
        pending = self._records() if error is not None else None
        stream, lock = _STREAM.get, state.arguments

        def submit(*values) -> bool:
            args, given = [], iter(values)
            try:
                for kind, extra in kinds:
                    if kind == "buffer":
                        args.append(next(given).base_data)
                    elif kind == "scalar":
                        args.append(extra(next(given)))
                    elif kind == "error":
                        args.append(error)
                    else:
                        args.append(next(given))
            except OverflowError:           # a scalar its C type cannot hold: the full path says so
                return False
            function = proven if selector is None or values[selector] else executable.function(shape)
            with lock:
                try:
                    function.set_args(*args)
                except RuntimeError:        # an extent or scalar pyopencl cannot pack
                    return False
                enqueue(stream() or state.queue, function, gsize, local)
            if pending is not None:
                pending[executable] = None
            return True
        return DirectLauncher(tuple(slots), submit)

    def _current_queue(self, state: _DeviceState):
        return _STREAM.get() or state.queue

    # --- memory -------------------------------------------------------------------------------

    def alloc(self, nbytes: int, properties: DeviceProperties):
        cl = _cl()
        return cl.Buffer(self._state(properties).context, cl.mem_flags.READ_WRITE, size=nbytes)

    def copy_in(self, buffer, host: np.ndarray, properties: DeviceProperties) -> None:
        _cl().enqueue_copy(self._current_queue(self._state(properties)), buffer, host, is_blocking=False)

    def copy_out(self, host: np.ndarray, buffer, properties: DeviceProperties) -> None:
        _cl().enqueue_copy(self._current_queue(self._state(properties)), host, buffer, is_blocking=False)

    def device_buffer(self, array: DeviceArray, properties: DeviceProperties):
        return array.owner.base_data         # a pyopencl array, used in place

    def _queue(self, cl, state: _DeviceState, stream, kernel_name: str | None):
        """The ``stream=`` queue, which must be of the device's context."""
        if not isinstance(stream, cl.CommandQueue):
            raise ArgumentTypeError(f"stream= takes a pyopencl.CommandQueue on OpenCL, got {type(stream).__name__}",
                                    kernel_name)
        if stream.context != state.context:
            raise ArgumentValueError("stream= is a queue of another OpenCL context; make it with the device's "
                                     "(cb.device('opencl').backend.queue(dev.properties).context)", kernel_name)
        if all(q is not stream for q in self._user_queues):
            self._user_queues.append(stream)
        return stream

    @contextmanager
    def use_stream(self, stream, properties: DeviceProperties, kernel_name: str | None = None) -> Iterator[None]:
        """A context in which launches and copies go on the pyopencl queue ``stream``."""
        self._queue(_cl(), self._state(properties), stream, kernel_name)       # refuse a queue it cannot take
        token = _STREAM.set(stream)
        try:
            yield
        finally:
            _STREAM.reset(token)

    def to_device(self, array: np.ndarray, properties: DeviceProperties):
        """A pyopencl array copy of ``array`` on this device (for cb.preload)."""
        import pyopencl.array

        return pyopencl.array.to_device(self._state(properties).queue, array)

    def to_host(self, data, out: np.ndarray | None, properties: DeviceProperties) -> np.ndarray:
        return data.get(self._state(properties).queue, ary=out)

    def event(self, properties: DeviceProperties) -> OpenCLEvent:
        return OpenCLEvent(_cl(), self._current_queue(self._state(properties)))

    def finish(self, properties: DeviceProperties | None) -> None:
        for queue in self._user_queues:
            queue.finish()
        for state in self._states.values():
            state.queue.finish()

    def synchronize(self, properties: DeviceProperties | None = None) -> None:
        super().synchronize(properties)
        self._user_queues.clear()

    def has_error_record(self, executable: Executable) -> bool:
        return executable.error_buffer is not None

    def read_record(self, executable: Executable) -> OutOfBoundsError | None:
        cl = _cl()
        record = empty_record()
        cl.enqueue_copy(executable.state.queue, record, executable.error_buffer, is_blocking=True)
        if not record[0]:
            return None
        cl.enqueue_copy(executable.state.queue, executable.error_buffer, empty_record(), is_blocking=True)
        return oob_error(record, executable.rendered.sites, executable.rendered.kernel_name)


def _barriers_hoisted(kernel: Kernel, dialect: Dialect) -> Kernel:
    """A copy of ``kernel`` with every barrier (``sync_cube``, and plane ops the dialect emulates
    through local memory) out of conditionals (`cubepy.ir.hoist`). In OpenCL every work-item of a
    work-group must reach each barrier, and PoCL miscompiled a barrier under a uniform ``if``
    followed by a per-unit guard (every unit passed the guard). These are the backend's own
    stages of the compile pipeline (`cubepy.ir.pipeline`), after the ones every kernel runs."""
    from cubepy.ir.hoist import check_barriers, hoist_barriers
    from cubepy.ir.pipeline import Pipeline, Stage
    from cubepy.ir.verify import verify

    from ..cstyle.plane import uses_barrier

    def is_barrier(op):
        return uses_barrier(op, dialect)
    if not any(is_barrier(op) for op in walk(kernel.body)):
        return kernel
    stages = Pipeline([
        Stage("hoist_barriers", lambda k, o: hoist_barriers(k, is_barrier, continues=dialect.flag_continues,
                                                            once=dialect.unloop_once), "transform"),
        Stage("check_barriers", lambda k, o: check_barriers(
            k, lambda op: op.opcode != "sync_cube" and is_barrier(op),
            "this OpenCL device runs plane ops through local memory between work-group barriers"), "check"),
        Stage("verify_hoisted", lambda k, o: verify(k), "check"),
    ])
    return stages.run(copied(kernel))


_FLOAT_FEATURES = {"f16": ("fp16", "cl_khr_fp16"), "f64": ("fp64", "cl_khr_fp64")}


def _check_float_types(kernel: Kernel, properties: DeviceProperties) -> None:
    """One clear line, not the OpenCL compiler's pages of errors, for a float type the device lacks."""
    for t, loc in _types_used(kernel):
        need = _FLOAT_FEATURES.get(t.dtype.name)
        if need is not None and not properties.supports(need[0]):
            raise CubeTypeError(f"the OpenCL device '{properties.name}' has no {need[0]} ({need[1]}), so it cannot "
                                f"run {t.dtype} values; use f32, or a device that lists {need[0]} in its features",
                                kernel.name, loc)


def _types_used(kernel: Kernel):
    from cubepy.ir.nodes import walk

    for p in kernel.params:
        yield p.type, kernel.loc
    for b in kernel.buffers:
        yield b.type, kernel.loc
    for op in walk(kernel.body):
        if op.result is not None:
            yield op.result.type, op.loc


BACKEND = OpenCLBackend()

__all__ = ["BACKEND", "Executable", "OpenCLBackend"]


class OpenCLEvent:
    """A marker in the device's queue (which profiles), timed on the device's clock."""

    def __init__(self, cl, queue):
        self._cl, self._queue, self._marker = cl, queue, None

    def record(self) -> None:
        self._marker = self._cl.enqueue_marker(self._queue)

    def synchronize(self) -> None:
        not_recorded(self._marker is None)
        self._marker.wait()

    def elapsed_ms(self, start: OpenCLEvent) -> float:
        not_recorded(self._marker is None or start._marker is None)
        self._marker.wait()
        return (self._marker.profile.end - start._marker.profile.end) * 1e-6

    def done(self) -> bool:
        return self._marker is not None and \
            self._marker.command_execution_status == self._cl.command_execution_status.COMPLETE
