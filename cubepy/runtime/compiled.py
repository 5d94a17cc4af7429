"""The public compiled-kernel handle: one specialization of a kernel, compiled for one device.

``kernel.compile(*example_args, dim=..., device=...)`` returns a `CompiledKernel`. It is also
what every launch runs through: ``kernel[count, dim](...)`` finds (or makes) the one for its
argument kinds and keeps its warm path. Tuners, benchmarks and framework adapters use this
object, never a kernel's caches.

    compiled = saxpy.compile(x, y, 2.0, dim=256)
    print(compiled.ir)                   # the typed IR of this specialization
    print(compiled.source())             # the backend's generated code ("optimized", "asm", ...)
    run = compiled[4096]                 # a launcher for 4096 cubes: the warm path
    run(x, y, 2.0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import settings
from ..errors import ArgumentTypeError, ArgumentValueError, LaunchError, caller_loc
from ..frontend.spec import ParamSpec
from ..ir.nodes import Kernel
from ..ir.printer import print_kernel
from ..ir.types import INDEX_MAX
from . import printing
from .args import bind_arguments, match_arguments
from .fake_launches import SKIPPING, skipped
from .graph_breaks import register_entry_point
from .profiling import ACTIVE as PROFILES
from .profiling import LaunchTally, record_launch
from .topology import check_limits, topology
from .warm_path import WarmPath, direct_warm_path, empty_warm_path, generic_warm_path

if TYPE_CHECKING:
    from .devices import Device


@dataclass(eq=False)
class CompiledKernel:
    """One specialization of a kernel for one device and one set of argument kinds.

    ``parameters`` describes the kinds it accepts (per parameter: kind, dtype, Line width, rank,
    mutability, Comptime value); ``cube_dim`` is fixed, the cube count is chosen per launch.
    ``compiled[count]`` is a launcher at that cube count (the warm path); ``compiled.launch(count,
    *args)`` launches once. Arguments of other kinds raise an error naming the parameter.
    """

    kernel_name: str
    device: Device
    parameters: tuple[ParamSpec, ...]
    cube_dim: tuple[int, int, int]
    checked: bool
    fastmath: str | None
    ir_module: Kernel                  # the IR object (``ir`` is its text)
    executable: Any                    # the backend's compiled object
    options: dict                      # launch options for the backend (races, ...)
    bind: Callable[[tuple], list | None]
    classes: tuple                     # per argument: (its class, the class of the array inside a cb.lines)
    signature: Any                     # the kernel's Signature, for the full check of other kinds
    count: tuple[int, int, int] | None = None
    order: tuple[int, ...] = ()
    warm_paths: dict = field(default_factory=dict)
    _tally: Any = None                 # the backend's LaunchTally; False: none (intervals)

    def __post_init__(self):
        self.order = tuple(i for i, spec in enumerate(self.parameters) if spec.kind != "comptime")

    # --- what it is -------------------------------------------------------------------------

    @property
    def ir(self) -> str:
        """The typed IR of this specialization, as text (one line per op, with the user's line)."""
        return print_kernel(self.ir_module)

    @property
    def forms(self) -> tuple[str, ...]:
        """The forms `source` accepts on this device (always "ir" and "source")."""
        return ("ir", *self.device.backend.source_forms)

    def source(self, form: str = "source") -> str:
        """The generated code: "source" (CUDA/OpenCL/HIP C or LLVM IR), "ir", or a backend's own
        forms (see `forms`: the CPU backend has "optimized" and "asm")."""
        if form not in self.forms:
            raise ArgumentValueError(f"device '{self.device.name}' has the source forms {self.forms}, not {form!r}",
                                     self.kernel_name)
        text = None if form == "ir" else self.device.backend.source(self.ir_module, self.executable,
                                                                    self.device.properties, form)
        return self.ir if text is None else text

    @property
    def shape_generic(self) -> bool:
        """Whether its executable reads the cube extents at run time, so that every CubeDim this
        kernel does not specialize on shares it (`cubepy.runtime.shapes`)."""
        return self.ir_module.shape_generic

    @property
    def prints(self) -> bool:
        """Whether the kernel calls ``print``: each launch then writes its lines when it ends
        (and synchronizes with the device to read them)."""
        return bool(self.ir_module.prints)

    def accepts(self, *args, **kwargs) -> bool:
        """Whether these arguments have the kinds this specialization was compiled for (and pass
        the launch checks)."""
        if kwargs:
            args = self._positional(args, kwargs)
        try:
            return self.bind(args) is not None
        except LaunchError:
            return False

    def __repr__(self) -> str:
        kinds = ", ".join(_describe_param(p) for p in self.parameters)
        generic = ", shape-generic" if self.shape_generic else ""
        return f"<CompiledKernel {self.kernel_name}({kinds}) dim={self.cube_dim}{generic} on {self.device.name}>"

    # --- launching --------------------------------------------------------------------------

    def __getitem__(self, count) -> CompiledLauncher:
        """A launcher at ``count`` cubes (an int, a tuple or cb.CubeCount)."""
        return CompiledLauncher(self, self._count(count))

    def launch(self, count, *args, stream: Any = None, **kwargs) -> None:
        """Launch once with ``count`` cubes; ``stream`` as for ``kernel.launch``."""
        try:
            self._launch(self._count(count), args, kwargs, stream)
        except LaunchError as e:
            if e.loc is None:
                e.loc = caller_loc()
            raise

    def __call__(self, *args, stream: Any = None, **kwargs) -> None:
        """Launch with the cube count given to ``kernel.compile(..., count=...)``."""
        if self.count is None:
            raise ArgumentTypeError("this compiled kernel has no cube count: pass count= to kernel.compile, "
                                    "or launch it as compiled[count](*args)", self.kernel_name)
        self.launch(self.count, *args, stream=stream, **kwargs)

    def warm_path(self, count: tuple, dim: tuple | None = None) -> WarmPath:
        """The warm path at this launch shape: generated once, direct where the backend allows.
        It returns False (launching nothing) when an argument's kind or value needs the full path."""
        key = (count, dim or self.cube_dim)
        found = self.warm_paths.get(key)
        if found is None:
            if 0 in count:            # nothing runs: the arguments are still checked
                found = empty_warm_path(self)
            elif self.ir_module.prints:     # the hidden print buffers go through `run`
                found = generic_warm_path(self, *key)
            else:
                found = direct_warm_path(self, *key) or generic_warm_path(self, *key)
            self.warm_paths[key] = found
        return found

    def run(self, count: tuple, dim: tuple, values: list, stream: Any = None) -> None:
        """Enqueue with bound values (as `bind` returns them); no checks. For the runtime's launchers."""
        options = self.options if stream is None else {**self.options, "stream": stream}
        args = [values[i] for i in self.order]
        if self.ir_module.prints:
            buffers = printing.allocate(self.ir_module, settings.print_limit())
            try:
                self.device.backend.launch(self.executable, self.ir_module, count, dim, args + buffers,
                                           self.device.properties, options)
            finally:          # a launch that reports an error still shows what it printed
                printing.write_lines(self.ir_module, self.kernel_name, buffers)
            return
        self.device.backend.launch(self.executable, self.ir_module, count, dim, args, self.device.properties,
                                   options)

    def run_warm(self, warm: WarmPath, args: tuple, stream: Any) -> bool:
        """A warm path on ``stream`` (made current where the backend can) and inside a
        ``cb.profile()`` (between two events); False, having launched nothing, where it cannot."""
        if stream is not None:
            backend = self.device.backend
            if not backend.takes_streams:
                return False
            scope = backend.direct_stream(stream, self.device.properties) if getattr(warm, "direct", False) else None
            with scope or backend.use_stream(stream, self.device.properties):
                return self.run_warm(warm, args, None)
        if not PROFILES:
            return warm(args)
        tally = self.tally()
        if tally is not None:
            tally.launched += 1               # before: a launch that then reports an error ran
            if warm(args):
                return True
            tally.launched -= 1
            return False
        interval = self.device.backend.interval(self.device.properties)
        if not warm(args):
            interval.discard()
            return False
        interval.stop()
        record_launch(self.kernel_name, interval)
        return True

    def tally(self) -> LaunchTally | None:
        """The backend's `LaunchTally` for this kernel's profiled launches, or None (intervals);
        asked once, while a profile is active."""
        found = self._tally
        if found is None:
            found = self._tally = self.device.backend.launch_tally(self.device.properties, self.executable,
                                                                   self.kernel_name) or False
        return found or None

    def run_profiled(self, count: tuple, values: list, stream: Any = None) -> None:
        """`run`, with events around it while a ``cb.profile()`` is active; a cube count with a
        zero extent runs (and copies) nothing."""
        if 0 in count:
            return
        if PROFILES:
            tally = self.tally()
            if tally is not None:
                tally.launched += 1
                self.run(count, self.cube_dim, values, stream)
                return
            interval = self.device.backend.interval(self.device.properties)
            try:
                self.run(count, self.cube_dim, values, stream)
            except BaseException:
                interval.discard()
                raise
            interval.stop()
            record_launch(self.kernel_name, interval)
        else:
            self.run(count, self.cube_dim, values, stream)

    def check_count(self, count: tuple) -> None:
        """Refuse a cube count above the device's maxima, or one whose units a kernel's bounds
        proofs cannot take (`ir.bounds`: positions must fit i32)."""
        most = self.device.properties.max_cube_count
        if count[0] > most[0] or count[1] > most[1] or count[2] > most[2]:
            check_limits(self.kernel_name, self.device, count, self.cube_dim)
        if self.ir_module.units_fit_index:
            units = count[0] * count[1] * count[2] * self.cube_dim[0] * self.cube_dim[1] * self.cube_dim[2]
            if units > INDEX_MAX:
                raise ArgumentValueError(
                    f"CubeCount{count} x CubeDim{self.cube_dim} is {units} units; this kernel indexes with positions "
                    f"(ABSOLUTE_POS, ...) that are i32, so a launch has at most {INDEX_MAX} units: use fewer cubes "
                    "and a grid-stride loop", self.kernel_name)

    def _count(self, count) -> tuple:
        count_t = topology(count, "CubeCount", self.kernel_name)
        self.check_count(count_t)
        return count_t

    def _launch(self, count: tuple, args: tuple, kwargs: dict, stream: Any) -> None:
        if SKIPPING and skipped():
            return
        if stream is not None and not self.device.backend.takes_streams:
            raise ArgumentValueError(f"stream={stream!r}: device '{self.device.name}' runs each launch to "
                                     "completion and takes no stream", self.kernel_name)
        if kwargs:
            args = self._positional(args, kwargs)
        values = self.bind(args)
        if values is None:
            self._refuse(args)
        self.run_profiled(count, values, stream)

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        return tuple(match_arguments(self.signature, args, dict(kwargs), self.kernel_name))

    def _refuse(self, args: tuple) -> None:
        """Raise why ``args`` do not fit: the full check's own error, else which kind differs."""
        bound = bind_arguments(self.signature, args, {}, self.kernel_name, self.device.properties.inline_array_bytes)
        for spec, want in zip(bound.specs, self.parameters):
            if spec.key() != want.key():
                raise ArgumentTypeError(
                    f"parameter '{want.name}' was compiled for {_describe_param(want)} but got "
                    f"{_describe_param(spec)}; compile again with these arguments (kernel.compile(...)) or launch "
                    f"through kernel[count, dim](...), which compiles what it needs", self.kernel_name)
        raise ArgumentTypeError("the arguments differ in kind from the compiled ones (array class or flags); "
                                "launch through kernel[count, dim](...)", self.kernel_name)


class CompiledLauncher:
    """``compiled[count]``: launches a `CompiledKernel` at one cube count, by its warm path."""

    __slots__ = ("compiled", "count", "warm")

    def __init__(self, compiled: CompiledKernel, count: tuple):
        self.compiled, self.count = compiled, count
        self.warm = compiled.warm_path(count)

    def __call__(self, *args, stream: Any = None, **kwargs) -> None:
        if not kwargs and not SKIPPING:
            try:
                if self.warm(args) if stream is None and not PROFILES else \
                        self.compiled.run_warm(self.warm, args, stream):
                    return
            except LaunchError as e:
                if e.loc is None:
                    e.loc = caller_loc()
                raise
        self.compiled.launch(self.count, *args, stream=stream, **kwargs)


for _cls, _name in ((CompiledKernel, "launch"), (CompiledKernel, "__call__"), (CompiledLauncher, "__call__")):
    register_entry_point(_cls, _name)


def _describe_param(p: ParamSpec) -> str:
    if p.kind == "comptime":
        return f"{p.name}={p.value!r}"
    if p.kind == "scalar":
        return f"{p.name}: {p.dtype}"
    if p.kind == "scalar_ref":
        return f"{p.name}: {p.dtype} in device memory"
    text = f"{p.dtype}[{p.ndim}-d]"
    if p.width > 1:
        text = f"Line[{p.dtype}, {p.width}][{p.ndim}-d]"
    mut = "Mut " if p.mutable and p.kind == "array" else ""
    kind = "Region " if p.kind == "region" else ""
    by_value = f" by value (at most {p.inline} elements)" if p.inline else ""
    return f"{p.name}: {mut}{kind}{text}{by_value}"
