"""`@cb.kernel` and `@cb.func`: specialization, caching and launch."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from .. import settings
from ..errors import ArgumentTypeError, ArgumentValueError, CubeError, LaunchError, caller_loc, user_facing
from ..frontend.dependencies import Dependencies, recording
from ..frontend.source import capture_source, function_source
from ..frontend.spec import KernelSpec
from ..frontend.trace import trace_kernel
from ..ir.nodes import Kernel
from ..ir.printer import print_kernel
from ..lang.types import LinesArg
from ..log import logger
from . import pickling, trace_index
from .args import Signature, bind_arguments, make_binder, match_arguments, quick_key, read_signature
from .compiled import CompiledKernel
from .device_arrays import DeviceArray
from .devices import Device, current_device
from .devices import device as get_device
from .fake_launches import SKIPPING, skipped
from .gc_pause import collector_paused
from .graph_breaks import register_entry_point
from .profiling import ACTIVE as PROFILES
from .profiling import TOTALS, record
from .shapes import ShapeGenericCache
from .topology import CubeCount, CubeDim, check_limits, topology


def _classes(args) -> tuple:
    return tuple((a.__class__, a.array.__class__ if a.__class__ is LinesArg else a.__class__) for a in args)


def _check_device_arrays(kernel_name: str, dev: Device, names, values) -> None:
    accepted = dev.backend.device_array_platforms
    for name, value in zip(names, values):
        if isinstance(value, DeviceArray):
            check_device_array(kernel_name, name, value, dev, accepted)


def check_device_array(kernel_name: str, name: str, value: DeviceArray, dev: Device, accepted=None) -> None:
    """Refuse a device array this device cannot read: another platform's, or another GPU's."""
    if accepted is None:
        accepted = dev.backend.device_array_platforms
    if value.platform not in accepted:
        raise ArgumentTypeError(f"parameter '{name}' is an array in {value.platform} device memory, which "
                                f"device '{dev.name}' cannot read; launch on a {value.platform} device or "
                                "pass a host (NumPy) array", kernel_name)
    index = dev.index
    if value.device_id is not None and index is not None and value.device_id != index:
        raise ArgumentValueError(f"parameter '{name}' is on {value.platform}:{value.device_id}, but the launch runs "
                                 f"on {value.platform}:{index} ({dev.properties.name}); move it to that device, or "
                                 f"launch on cb.device('{value.platform}:{value.device_id}')", kernel_name)


_concat = tuple.__add__


def _cacheable(extent) -> bool:
    """Whether a launch extent can key the launcher cache (ints only, never a bool)."""
    cls = extent.__class__
    if cls is int or cls is CubeCount or cls is CubeDim:
        return True
    if cls is not tuple:
        return False
    for v in extent:              # a loop, not all(...): a generator costs a warm launch 0.2 us a tuple
        if v.__class__ is not int:
            return False
    return True


class Launcher:
    """``kernel[count, dim]``: launches the kernel at one launch shape, on any device and argument
    kinds; a repeated launch with the kinds, device and modes of the previous one takes the warm
    path of its compiled kernel (see `warm_path`)."""

    __slots__ = ("kernel", "count", "dim", "_last")

    def __init__(self, kernel: KernelFunction, count, dim):
        self.kernel, self.count, self.dim = kernel, count, dim
        self._last = None   # (warm path, device argument, checked, races, compiled) of the previous launch

    @property
    def warm_path(self) -> Any:
        """The warm path the next launch tries first (None before a launch that kept one)."""
        return self._last and self._last[0]

    def __call__(self, *args, device=None, checked=None, races=False, stream=None, **kwargs) -> None:
        # The warm path: same device, modes and argument kinds as the previous launch of this
        # launcher, on the current stream; it returns False if any kind differs. The topology
        # was checked when the compiled kernel was made.
        last = self._last
        if last is not None and not kwargs and not SKIPPING:
            warm, device_arg, was_checked, had_races, compiled = last
            if device is device_arg and checked is was_checked and races is had_races and (
                    device is not None or current_device() is compiled.device):
                try:
                    if stream is None and not PROFILES:
                        if warm(args):
                            return
                    elif compiled.run_warm(warm, args, stream):
                        return
                except LaunchError as e:
                    if e.loc is None:
                        e.loc = caller_loc()
                    raise user_facing(e) from e.__cause__
        try:
            compiled, count = self.kernel._launch(self.count, self.dim, args, kwargs, device, checked, races, stream)
        except LaunchError as e:
            if e.loc is None:
                e.loc = caller_loc()
            raise user_facing(e) from e.__cause__
        except CubeError as e:
            raise user_facing(e) from e.__cause__
        self._last = None if kwargs or compiled is None else (
            compiled.warm_path(count), device, checked, races, compiled)


class KernelFunction:
    """A kernel: call ``k[count, dim](*args)`` or ``k.launch(count, dim, *args)``.

    Example::

        @cb.kernel
        def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
            i = cb.ABSOLUTE_POS
            if i < len(x):
                y[i] = a * x[i] + y[i]

        saxpy[cb.CubeCount(4096), cb.CubeDim(256)](x, y, 2.0)
    """

    def __init__(self, fn: Callable, checked: bool | None = None, fastmath: str | None = None):
        if fastmath not in (None, "algebraic"):
            raise ValueError(f"fastmath must be None or 'algebraic', got {fastmath!r}")
        self.fn = fn
        self.__name__, self.__qualname__, self.__module__ = fn.__name__, fn.__qualname__, fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.__cubepy_kernel__ = self
        self.source_text = capture_source(fn)       # the source as decorated (None where Python keeps none)
        self.checked = checked
        self.fastmath = fastmath
        self._signature: Signature | None = None
        self._cache: dict[tuple, tuple[Kernel, Any]] = {}
        self._shapes = ShapeGenericCache()
        self._plans: dict[tuple, CompiledKernel] = {}
        self._launchers: dict = {}
        self._reads = Dependencies()        # what its traces read outside its source (trace_index)
        self.trace_count = 0

    @property
    def signature(self) -> Signature:
        if self._signature is None:
            self._signature = read_signature(self.fn, self.__name__)
        return self._signature

    @property
    def source_digest(self) -> str:
        """sha256 of the kernel's source text: part of every cache key derived from this kernel."""
        return function_source(self.fn).digest

    def __getitem__(self, config) -> Launcher:
        # Reuse the launcher of a configuration seen before: ints, tuples of ints, cb.CubeCount and
        # cb.CubeDim (classes are checked, so that True never finds the launcher made for 1).
        if not (config.__class__ is tuple and len(config) == 2):
            raise ArgumentTypeError("launch as kernel[cube_count, cube_dim](*args)", self.__name__)
        count, dim = config
        key = None
        if count.__class__ is int and dim.__class__ is int:
            key = config
        elif count.__class__ is CubeCount and dim.__class__ is CubeDim:
            # keyed by the extents (a plain 6-tuple, never equal to a 2-tuple key): the objects
            # are usually made anew for each launch
            key = _concat(count, dim)
        else:
            if isinstance(count, np.integer) and isinstance(dim, np.integer):
                count, dim = int(count), int(dim)           # NumPy ints from array arithmetic
                config = (count, dim)
            if _cacheable(count) and _cacheable(dim):
                key = config
        if key is not None:
            found = self._launchers.get(key)
            if found is not None:
                return found
        launcher = Launcher(self, count, dim)
        if key is not None and len(self._launchers) < 256:
            self._launchers[key] = launcher
        return launcher

    def launch(self, count, dim, *args, device: Device | str | None = None, checked: bool | None = None,
               races: bool = False, stream: Any = None, **kwargs) -> None:
        """Launch on ``device`` (default: the current device) with ``count`` cubes of ``dim`` units.

        ``races=True`` (interpreter) reports data races between units; ``checked`` overrides the
        kernel's bounds-checking mode for this launch. ``stream`` enqueues on that stream instead
        of the current one: on ``cuda`` a ``cupy.cuda.Stream``, a ``torch.cuda.Stream`` or a raw
        handle (int); on ``opencl`` a ``pyopencl.CommandQueue`` of the device's context. Launches
        on the current stream (``with cupy.cuda.Stream(): ...``) take the faster warm path.
        """
        self[count, dim](*args, device=device, checked=checked, races=races, stream=stream, **kwargs)

    def compile(self, *args, dim, count=None, device: Device | str | None = None, checked: bool | None = None,
                races: bool = False, **kwargs) -> CompiledKernel:
        """Compile the specialization for arguments of these kinds (values are not kept) and
        return its handle: ``.ir``, ``.source(form)``, ``.parameters``, and ``compiled[count](...)``
        to launch it through the warm path (``compiled(...)`` when ``count`` is given here).

        Example::

            compiled = saxpy.compile(x, y, 2.0, dim=256, count=4096)
            compiled(x, y, 2.0)
        """
        try:
            compiled, _, _ = self._compiled(self._device(device), topology(dim, "CubeDim", self.__name__),
                                            args, kwargs, checked, races)
        except LaunchError as e:
            if e.loc is None:
                e.loc = caller_loc()
            raise user_facing(e) from e.__cause__
        except CubeError as e:
            raise user_facing(e) from e.__cause__
        if count is None:
            return compiled
        count_t = topology(count, "CubeCount", self.__name__)
        compiled.check_count(count_t)
        return replace(compiled, count=count_t, warm_paths={})

    def _launch(self, count, dim, args, kwargs, device, checked, races, stream=None) -> tuple:
        """Launch through the compiled kernel for these argument kinds (made on first use); return
        ``(compiled, count)`` for the launcher's warm path (no compiled kernel if none was kept)."""
        if SKIPPING and skipped():
            return None, None
        dev = self._device(device)
        if stream is not None and not dev.backend.takes_streams:
            raise ArgumentValueError(f"stream={stream!r}: device '{dev.name}' runs each launch to completion "
                                     "and takes no stream", self.__name__)
        count_t = topology(count, "CubeCount", self.__name__)
        compiled, values, kept = self._compiled(dev, topology(dim, "CubeDim", self.__name__), args, kwargs,
                                                checked, races)
        compiled.check_count(count_t)
        compiled.run_profiled(count_t, values, stream)
        return (compiled if kept else None), count_t

    def _compiled(self, dev: Device, dim_t: tuple, args: tuple, kwargs: dict, checked, races) -> tuple:
        """``(compiled kernel, bound values, kept)`` for these arguments: the one made for their
        kinds before (``kept``: found or stored by a cheap key), or a new one."""
        name, signature = self.__name__, self.signature
        quick = None if kwargs else quick_key(signature.comptime, args)
        key = (id(dev), dim_t, checked, races, quick)
        inline_bytes = dev.properties.inline_array_bytes
        compiled = self._plans.get(key) if quick is not None else None
        if compiled is not None:
            values = compiled.bind(args)
            if values is not None:
                return compiled, values, True
            # a kind the quick key does not see differs (the check raises what is wrong), or a
            # capacity by value of an array type without a size in its quick facts: a new plan
            bound = bind_arguments(signature, args, kwargs, name, inline_bytes)
            if tuple(s.key() for s in bound.specs) == tuple(s.key() for s in compiled.parameters):
                return compiled, bound.values, True
        check_limits(name, dev, (1, 1, 1), dim_t)
        example = match_arguments(signature, args, dict(kwargs), name)
        bound = bind_arguments(signature, tuple(example), {}, name, inline_bytes)
        _check_device_arrays(name, dev, signature.names, bound.values)
        if checked is None:
            checked = self.checked if self.checked is not None else settings.checked_default()
        ir, executable = self._specialize(bound.specs, dim_t, dev, checked)
        options = {"races": races or bool(dev.options.get("races"))}
        binder = make_binder(signature, bound.specs, name, example,
                             lambda param, array: check_device_array(name, param, array, dev), inline_bytes)
        compiled = CompiledKernel(name, dev, bound.specs, dim_t, checked, self.fastmath, ir, executable, options,
                                  binder, _classes(example), signature)
        if quick is not None:
            self._plans[key] = compiled
        return compiled, bound.values, quick is not None

    def ir(self, *args, dim=(32, 1, 1), device: Device | str | None = None, checked: bool | None = None,
           **kwargs) -> str:
        """The IR of the specialization for these arguments, as text (``compile(...).ir``)."""
        return self.compile(*args, dim=dim, device=device, checked=checked, **kwargs).ir

    def source(self, *args, device: Device | str | None = None, dim=(32, 1, 1), form: str = "source",
               checked: bool | None = None, **kwargs) -> str:
        """The backend's generated code for these arguments (``compile(...).source(form)``)."""
        return self.compile(*args, dim=dim, device=device, checked=checked, **kwargs).source(form)

    def _device(self, device) -> Device:
        if device is None:
            return current_device()
        if device.__class__ is Device and device.properties is not None:
            return device
        if isinstance(device, str):
            return get_device(device)
        device.require()
        return device

    def _specialize(self, params, dim, dev: Device, checked: bool):
        spec = KernelSpec(params, dim, dev.properties.plane_dim, checked, self.fastmath,
                          dev.properties.checks_per_cube, dev.properties.guards_per_cube, settings.kernel_prints(),
                          checks_per_run=dev.properties.checks_per_run,
                          inline_array_bytes=dev.properties.inline_array_bytes,
                          checks_per_launch=dev.properties.checks_per_launch,
                          versions_barriers=dev.properties.versions_barriers)
        key = (dev.key(), spec.key())
        hit = self._cache.get(key)
        if hit is None:
            began = time.perf_counter()
            found = trace_index.restore(self, dev, spec)
            if found is not None:         # traced and compiled in an earlier process, and still so
                kernel, executable, reads, shared = found
                self._reads.merge_snapshot(reads)
                hit = self._cache[key] = (kernel, executable)
                if shared:                # restored before for another specialization: its CubeDim's
                    if kernel.shape_generic:  # shape-generic kernel, or the same one on an equal device
                        TOTALS["shared_shapes"] += 1
                else:
                    self._count_compile(executable, dev, params, kernel.shape_generic, began, restored=True)
                return hit
            function_source(self.fn)
            compiled = tracing = False

            def trace(for_spec: KernelSpec) -> Kernel:
                nonlocal tracing
                tracing = True
                return self._trace(for_spec)

            static = functools.cache(lambda: trace(spec))

            def build(kernel: Kernel):
                nonlocal compiled
                smem = kernel.shared_bytes
                if smem > dev.properties.shared_memory_per_cube:
                    raise ArgumentValueError(f"uses {smem} bytes of shared memory; device '{dev.name}' has "
                                             f"{dev.properties.shared_memory_per_cube} per cube", self.__name__)
                executable = dev.backend.compile(kernel, dev.properties)
                compiled = True
                return executable
            with collector_paused(), recording(self._reads):
                hit = self._shapes.find(spec, dev, static, trace, build)
                if hit is None:
                    hit = (static(), build(static()))
                elif not compiled:
                    TOTALS["shared_shapes"] += 1
            self._cache[key] = hit
            trace_index.store(self, dev, spec, self._reads, *hit)
            if tracing:         # one specialization traced (for its CubeDim, shape-generic, or both)
                self.trace_count += 1
                TOTALS["traces"] += 1
            if compiled:
                self._count_compile(hit[1], dev, params, hit[0].shape_generic, began)
        return hit

    def _trace(self, spec: KernelSpec) -> Kernel:
        kernel = trace_kernel(self.fn, spec, self.__name__)
        dump = settings.dump_ir_dir()
        if dump is not None:
            _dump_ir(dump, kernel)
        return kernel

    def _count_compile(self, executable, dev: Device, params, generic: bool, began: float,
                       restored: bool = False) -> None:
        # a backend marks an executable loaded from its disk cache (a "may" of the contract)
        kind = "disk_loads" if getattr(executable, "from_disk", False) else "compiles"
        TOTALS[kind] += 1
        if restored:
            TOTALS["restored"] += 1
        ms = (time.perf_counter() - began) * 1e3
        if PROFILES:
            record(self.__name__, **{kind: 1}, compile_ms=ms)
        logger.info("kernel '%s' on %s: %s in %.1f ms%s (%s)", self.__name__, dev.name,
                    "restored with its trace from the disk cache" if restored else
                    "loaded from the disk cache" if kind == "disk_loads" else "compiled", ms,
                    ", shape-generic" if generic else "", ", ".join(p.key()[0] + ":" + _kind_text(p) for p in params))

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.__name__}' is launched as {self.__name__}[cube_count, cube_dim](*args)")

    def __reduce__(self):
        """Pickle by reference (module-level kernels) or by value (source, names, options)."""
        return pickling.reduce(self, "kernel", self.fn, self.source_text,
                               {"checked": self.checked, "fastmath": self.fastmath})


def _kind_text(p) -> str:
    if p.kind == "comptime":
        return repr(p.value)
    return (f"{p.kind} {p.dtype}" + (f"x{p.width}" if p.width > 1 else "") + (f" {p.ndim}-d" if p.ndim > 1 else "")
            + (f" by value[{p.inline}]" if p.inline else ""))


def _dump_ir(folder, kernel: Kernel) -> None:
    """Write a specialization's IR as text and as a pickle (CUBEPY_DUMP_IR), named by its content."""
    import hashlib
    import pickle

    text = print_kernel(kernel)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{kernel.name}-p{kernel.plane_dim}-{digest}"
    stem.with_suffix(".ir").write_text(text)
    stem.with_suffix(".pkl").write_bytes(pickle.dumps(kernel))


class CubeFunction:
    """A device function (``@cb.func``): inlined into the kernels that call it.

    Example::

        @cb.func
        def square(v):
            return v * v
    """

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__, self.__qualname__, self.__module__ = fn.__name__, fn.__qualname__, fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.__cubepy_func__ = self
        self.source_text = capture_source(fn)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"@cb.func '{self.__name__}' can only be called from a kernel or another @cb.func")

    def __reduce__(self):
        return pickling.reduce(self, "func", self.fn, self.source_text, {})


for _cls, _name in ((Launcher, "__call__"), (KernelFunction, "launch"), (KernelFunction, "compile")):
    register_entry_point(_cls, _name)


def kernel(fn: Callable | None = None, *, checked: bool | None = None, fastmath: str | None = None):
    """Decorate a Python function as a cubepy kernel (``@cb.kernel`` or ``@cb.kernel(checked=False)``)."""
    if fn is None:
        return lambda f: KernelFunction(f, checked, fastmath)
    return KernelFunction(fn, checked, fastmath)


def func(fn: Callable) -> CubeFunction:
    """Decorate a helper that kernels (and other helpers) call; it is inlined at trace time."""
    return CubeFunction(fn)
