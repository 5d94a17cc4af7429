"""`@cb.kernel` and `@cb.func`: specialization, caching and launch."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import settings
from ..errors import ArgumentTypeError, ArgumentValueError, LaunchError, caller_loc
from ..frontend.source import function_source
from ..frontend.spec import KernelSpec
from ..frontend.trace import trace_kernel
from ..ir.nodes import Kernel
from ..ir.printer import print_kernel
from ..lang.types import LinesArg
from .args import Signature, bind_arguments, make_binder, quick_key, read_signature
from .device_arrays import DeviceArray
from .devices import Device, current_device
from .devices import device as get_device
from .profiling import ACTIVE as PROFILES
from .profiling import record, record_launch
from .topology import check_limits, topology
from .warm_path import WarmPath, direct_warm_path, generic_warm_path


@dataclass(frozen=True)
class _LaunchPlan:
    """What a warm launch reuses: the compiled specialization for one set of argument kinds.
    The device is held so that its id in the plan key cannot be reused by another device."""

    device: Device
    specs: tuple
    ir: Kernel
    executable: Any
    order: tuple[int, ...]
    options: dict
    bind: Callable[[tuple], list]
    classes: tuple            # per argument: (its class, the class of the array inside a cb.lines)
    warm_paths: dict = field(default_factory=dict)

    def run(self, count: tuple, dim: tuple, values: list, stream: Any = None) -> None:
        options = self.options if stream is None else {**self.options, "stream": stream}
        self.device.backend.launch(self.executable, self.ir, count, dim, [values[i] for i in self.order],
                                   self.device.properties, options)

    def warm_path(self, count: tuple, dim: tuple) -> WarmPath:
        """The warm path at this launch shape: generated once, direct where the backend allows."""
        found = self.warm_paths.get((count, dim))
        if found is None:
            found = direct_warm_path(self, count, dim) or generic_warm_path(self, count, dim)
            self.warm_paths[(count, dim)] = found
        return found


def _classes(args) -> tuple:
    return tuple((a.__class__, a.array.__class__ if a.__class__ is LinesArg else a.__class__) for a in args)


def _check_device_arrays(kernel_name: str, dev: Device, names, values) -> None:
    accepted = getattr(dev.backend, "device_array_platforms", frozenset())
    for name, value in zip(names, values):
        if isinstance(value, DeviceArray) and value.platform not in accepted:
            raise ArgumentTypeError(f"parameter '{name}' is an array in {value.platform} device memory, which "
                                    f"device '{dev.name}' cannot read; launch on a {value.platform} device or "
                                    "pass a host (NumPy) array", kernel_name)


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
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.__cubepy_kernel__ = self
        self.checked = checked
        self.fastmath = fastmath
        self._signature: Signature | None = None
        self._cache: dict[tuple, tuple[Kernel, Any]] = {}
        self._plans: dict[tuple, _LaunchPlan] = {}
        self._launchers: dict = {}
        self.trace_count = 0

    @property
    def signature(self) -> Signature:
        if self._signature is None:
            self._signature = read_signature(self.fn, self.__name__)
        return self._signature

    def __getitem__(self, config) -> Callable[..., None]:
        # Reuse the launcher for plain int configurations (the common kernel[count, dim] call);
        # classes are checked first so that True never finds the launcher made for 1.
        plain = config.__class__ is tuple and len(config) == 2 and config[0].__class__ is int \
            and config[1].__class__ is int
        if plain and config in self._launchers:
            return self._launchers[config]
        if not (isinstance(config, tuple) and len(config) == 2):
            raise ArgumentTypeError("launch as kernel[cube_count, cube_dim](*args)", self.__name__)
        count, dim = config
        last = None   # (warm path, device argument, checked, races, plan) of the previous launch

        def launch(*args, device=None, checked=None, races=False, stream=None, **kwargs):
            # The warm path: same device, modes and argument kinds as the previous launch of this
            # launcher, on the current stream; it returns False if any kind differs. The topology
            # was checked when the plan was made.
            nonlocal last
            if last is not None and stream is None and not kwargs and not PROFILES:
                warm, device_arg, was_checked, had_races, plan = last
                if device is device_arg and checked is was_checked and races is had_races and (
                        device is not None or current_device() is plan.device):
                    try:
                        if warm(args):
                            return
                    except LaunchError as e:
                        if e.loc is None:
                            e.loc = caller_loc()
                        raise
            try:
                plan, count_t, dim_t = self._launch(count, dim, args, kwargs, device, checked, races, stream)
            except LaunchError as e:
                if e.loc is None:
                    e.loc = caller_loc()
                raise
            last = None if kwargs or plan is None else (plan.warm_path(count_t, dim_t), device, checked, races, plan)
            launch.warm_path = last and last[0]   # what the next launch will try first (for tests)
        if plain and len(self._launchers) < 256:
            self._launchers[config] = launch
        return launch

    def launch(self, count, dim, *args, device: Device | str | None = None, checked: bool | None = None,
               races: bool = False, stream: Any = None, **kwargs) -> None:
        """Launch on ``device`` (default: the current device) with ``count`` cubes of ``dim`` units.

        ``races=True`` (interpreter) reports data races between units; ``checked`` overrides the
        kernel's bounds-checking mode for this launch. ``stream`` enqueues on that stream instead
        of the current one: on ``cuda`` a ``cupy.cuda.Stream``, a ``torch.cuda.Stream`` or a raw
        handle (int); on ``opencl`` a ``pyopencl.CommandQueue`` of the device's context. Launches
        on the current stream (``with cupy.cuda.Stream(): ...``) take the faster warm path.
        """
        try:
            self._launch(count, dim, args, kwargs, device, checked, races, stream)
        except LaunchError as e:
            if e.loc is None:   # point at the user's launch line
                e.loc = caller_loc()
            raise

    def _launch(self, count, dim, args, kwargs, device, checked, races, stream=None) -> tuple:
        """Launch through the plan for these argument kinds (made on first use); return
        ``(plan, count, dim)`` for the launcher's warm path (no plan if none was kept)."""
        dev = self._device(device)
        name = self.__name__
        if stream is not None and not getattr(dev.backend, "takes_streams", False):
            raise ArgumentValueError(f"stream={stream!r}: device '{dev.name}' runs each launch to completion "
                                     "and takes no stream", name)
        count_t = topology(count, "CubeCount", name)
        dim_t = topology(dim, "CubeDim", name)
        signature = self.signature
        quick = None if kwargs else quick_key(signature.comptime, args)
        plan_key = (id(dev), dim_t, checked, races, quick)
        plan = self._plans.get(plan_key) if quick is not None else None
        if plan is None:
            check_limits(name, dev, count_t, dim_t)
            bound = bind_arguments(signature, args, kwargs, name)
            _check_device_arrays(name, dev, signature.names, bound.values)
            ir, executable = self._specialize(bound.specs, dim_t, dev, checked)
            order = tuple(i for i, spec in enumerate(bound.specs) if spec.kind != "comptime")
            options = {"races": races or bool(dev.options.get("races"))}
            plan = _LaunchPlan(dev, bound.specs, ir, executable, order, options,
                               make_binder(signature, bound.specs, name, list(args)), _classes(args))
            if quick is not None:
                self._plans[plan_key] = plan
            values = bound.values
        else:
            most = dev.properties.max_cube_count
            if count_t[0] > most[0] or count_t[1] > most[1] or count_t[2] > most[2]:
                check_limits(name, dev, count_t, dim_t)
            values = plan.bind(args)
            if values is None:   # a kind the quick key does not see differs: check everything
                values = bind_arguments(signature, args, kwargs, name).values
        if PROFILES:
            start = dev.event()
            start.record()
            plan.run(count_t, dim_t, values, stream)
            stop = dev.event()
            stop.record()
            record_launch(name, start, stop)
        else:
            plan.run(count_t, dim_t, values, stream)
        return (plan if quick is not None else None), count_t, dim_t

    def ir(self, *args, dim=(32, 1, 1), device: Device | str | None = None, checked: bool | None = None,
           **kwargs) -> str:
        """The IR of the specialization for these arguments, as text."""
        dev = self._device(device)
        bound = bind_arguments(self.signature, args, kwargs, self.__name__)
        kernel, _ = self._specialize(bound.specs, topology(dim, "CubeDim", self.__name__), dev, checked)
        return print_kernel(kernel)

    def source(self, *args, device: Device | str | None = None, dim=(32, 1, 1), form: str = "source",
               checked: bool | None = None, **kwargs) -> str:
        """The backend's generated code for these arguments (``form`` e.g. "source", "optimized")."""
        dev = self._device(device)
        bound = bind_arguments(self.signature, args, kwargs, self.__name__)
        kernel, executable = self._specialize(bound.specs, topology(dim, "CubeDim", self.__name__), dev, checked)
        render = getattr(dev.backend, "source", None)
        if render is None:
            return print_kernel(kernel)
        return render(kernel, executable, dev.properties, form)

    def _device(self, device) -> Device:
        if device is None:
            return current_device()
        if device.__class__ is Device and device.properties is not None:
            return device
        if isinstance(device, str):
            return get_device(device)
        device.require()
        return device

    def _specialize(self, params, dim, dev: Device, checked):
        if checked is None:
            checked = self.checked if self.checked is not None else settings.checked_default()
        spec = KernelSpec(params, dim, dev.properties.plane_dim, checked, self.fastmath)
        key = (dev.key(), spec.key())
        hit = self._cache.get(key)
        if hit is None:
            began = time.perf_counter()
            function_source(self.fn)
            kernel = trace_kernel(self.fn, spec, self.__name__)
            self.trace_count += 1
            dump = settings.dump_ir_dir()
            if dump is not None:
                _dump_ir(dump, kernel)
            smem = kernel.shared_bytes
            if smem > dev.properties.shared_memory_per_cube:
                raise ArgumentValueError(f"uses {smem} bytes of shared memory; device '{dev.name}' has "
                                         f"{dev.properties.shared_memory_per_cube} per cube", self.__name__)
            hit = (kernel, dev.backend.compile(kernel, dev.properties))
            self._cache[key] = hit
            if PROFILES:
                record(self.__name__, compiles=1, compile_ms=(time.perf_counter() - began) * 1e3)
        return hit

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.__name__}' is launched as {self.__name__}[cube_count, cube_dim](*args)")


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
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.__cubepy_func__ = self

    def __call__(self, *args, **kwargs):
        raise TypeError(f"@cb.func '{self.__name__}' can only be called from a kernel or another @cb.func")


def kernel(fn: Callable | None = None, *, checked: bool | None = None, fastmath: str | None = None):
    """Decorate a Python function as a cubepy kernel (``@cb.kernel`` or ``@cb.kernel(checked=False)``)."""
    if fn is None:
        return lambda f: KernelFunction(f, checked, fastmath)
    return KernelFunction(fn, checked, fastmath)


def func(fn: Callable) -> CubeFunction:
    """Decorate a helper that kernels (and other helpers) call; it is inlined at trace time."""
    return CubeFunction(fn)
