"""cubepy kernels as JAX functions: under ``jax.jit``, ``jax.vmap`` and, with ``jax.custom_vjp``,
``jax.grad``.

    import cubepy.jax

    scale = cubepy.jax.jax_kernel(scale_kernel, outputs=("out",), count=lambda x: cdiv(x[0], 256), dim=256)
    y = jax.jit(lambda x: scale(x, 2.0) + 1)(x)

`jax_kernel` turns a kernel into a function of its inputs (the parameters that are not
``outputs``; ``Comptime`` values given as plain Python values) that returns its results: the
``outputs`` (new arrays, zero-filled before the launch) and the ``in_out`` parameters (their input
values, updated), in parameter order (`cubepy.runtime.kernel_io`). Two ways to run inside a
traced program:

- ``method="ffi"`` (the default): an XLA custom call (``jax.ffi.ffi_call``). Its handler is native
  code where the device's backend offers one (the CPU backend calls the kernel's entry on XLA's
  buffers; the CUDA backend calls ``cuLaunchKernel`` on XLA's stream), else a Python handler that
  views the buffers in place and launches the compiled kernel. No copies, no C compiler.
- ``method="callback"``: ``jax.pure_callback``, through host memory, on any cubepy device.

``vmap`` maps sequentially (one launch per element of the batch), which is right for every
kernel. Importing this module imports JAX; the rest of cubepy never does.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import cubepy as cb

from .errors import ArgumentTypeError
from .lang.types import Array, Mut
from .runtime import xla_ffi
from .runtime.device_arrays import DeviceArray
from .runtime.devices import Device, current_device, host_device, platform_device
from .runtime.devices import device as get_device
from .runtime.kernel_io import KernelIO, launch_size
from .runtime.topology import topology

__all__ = ["JaxKernel", "jax_kernel"]

_names = itertools.count()


def jax_kernel(kernel: Any, outputs: Sequence[str] = ("out",), *, count: Any, dim: Any,
               in_out: Sequence[str] = (), out_shapes: dict[str, Any] | None = None,
               device: Device | str | None = None, method: str = "ffi",
               vmap_method: str = "sequential") -> JaxKernel:
    """A JAX function launching ``kernel``; see the module docstring.

    ``count`` and ``dim``: ints or tuples, or callables of the shapes of the array inputs (in
    parameter order), e.g. ``count=lambda x: (x[0] + 255) // 256``. ``out_shapes`` maps an
    output name to a ``jax.ShapeDtypeStruct`` (or a callable of the input shapes giving one);
    by default an output has the first array input's shape and its annotated dtype (else the
    first input's). ``device`` is the cubepy device for ``method="callback"`` (default: the
    current device) and for the CPU's FFI handler; on a GPU the FFI path runs where XLA runs.
    """
    return JaxKernel(KernelIO(kernel, outputs, in_out, "jax_kernel", out_shapes), count, dim, device, method,
                     vmap_method)


class JaxKernel:
    """A kernel as a JAX function (made by `jax_kernel`): call it with the kernel's inputs."""

    def __init__(self, io: KernelIO, count, dim, device, method, vmap_method):
        if method not in ("ffi", "callback"):
            raise ArgumentTypeError(f"jax_kernel: method must be 'ffi' or 'callback', got {method!r}", io.name)
        self.io, self.kernel, self.name = io, io.kernel, io.name
        self.count, self.dim, self.device, self.method, self.vmap_method = count, dim, device, method, vmap_method
        self._targets: dict[tuple, str] = {}
        self._handlers: list = []             # handlers XLA may call: kept alive with this object

    def __repr__(self) -> str:
        return f"<cubepy.jax kernel {self.name}({', '.join(self.io.inputs)}) -> ({', '.join(self.io.results)})>"

    # --- the traced call ----------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        io = self.io
        values = io.bind(args, kwargs)
        statics, operands = {}, []
        for name, value in zip(io.inputs, values):
            if io.is_comptime(name):
                if isinstance(value, jax.core.Tracer):
                    raise ArgumentTypeError(f"Comptime parameter '{name}' needs a Python value, not a traced JAX "
                                            "value (mark it static: jax.jit(..., static_argnums=...))", self.name)
                statics[name] = value
            elif io.is_scalar(name):
                operands.append(jnp.asarray(value, dtype=np.dtype(io.annotation(name).numpy_name)))
            else:
                operands.append(jnp.asarray(value))
        by_name = dict(zip(io.operand_names(statics), operands))
        arrays = [v for n, v in by_name.items() if not io.is_scalar(n)]
        results = [_shape_dtype(io.result_shape(n, arrays, by_name)) for n in io.results]
        shapes = tuple(tuple(a.shape) for a in arrays)
        count, dim = launch_size(self.count, shapes), launch_size(self.dim, shapes)
        frozen = tuple(sorted(statics.items()))
        if self.method == "callback":
            out = jax.pure_callback(self._host_callback(count, dim, frozen), results, *operands,
                                    vmap_method=self.vmap_method)
        else:
            names = io.operand_names(statics)
            aliases = {names.index(n): io.results.index(n) for n in io.in_out}
            kinds = (tuple((np.dtype(o.dtype), o.ndim) for o in operands),
                     tuple((np.dtype(r.dtype), len(r.shape)) for r in results))
            out = jax.ffi.ffi_call(self._target(count, dim, frozen, kinds), results, vmap_method=self.vmap_method,
                                   input_output_aliases=aliases or None)(*operands)
        out = tuple(out)
        return out[0] if len(out) == 1 else out

    # --- pure_callback ----------------------------------------------------------------------

    def _host_callback(self, count, dim, statics: tuple) -> Callable:
        io, fixed = self.io, dict(statics)

        def callback(*inputs):
            inputs = [np.asarray(v) for v in inputs]      # the callback may get JAX arrays
            by_name = dict(zip(io.operand_names(fixed), inputs))
            arrays = [v for n, v in by_name.items() if not io.is_scalar(n)]
            results = []
            for name in io.results:
                if name in io.in_out:
                    results.append(np.array(by_name[name]))
                else:
                    shape, dtype = _as_pair(io.result_shape(name, arrays, by_name))
                    results.append(np.zeros(shape, dtype))
            dev = self._chosen_device() or current_device()
            self.kernel[count, dim](*io.arguments(inputs, results, fixed), device=dev)
            dev.synchronize()
            return tuple(results)
        return callback

    def _chosen_device(self) -> Device | None:
        if self.device is None:
            return None
        return get_device(self.device) if isinstance(self.device, str) else self.device

    # --- the XLA FFI --------------------------------------------------------------------------

    def _target(self, count, dim, statics: tuple, kinds: tuple) -> str:
        """The XLA FFI target for this launch shape, these Comptime values and these operand and
        result kinds (registered once): native where the device's backend offers a handler."""
        key = (count, dim, statics, kinds)
        found = self._targets.get(key)
        if found is None:
            found = f"cubepy_{self.name}_{next(_names)}"
            for platform, with_stream in _platforms():
                handler = self._native_handler(count, dim, statics, kinds, platform)
                if handler is None:
                    handler = xla_ffi.make_handler(self._python_handler(count, dim, statics, platform), with_stream)
                    capsule = jax.ffi.pycapsule(handler)
                else:
                    capsule = jax.ffi.pycapsule(ctypes.cast(handler.address, xla_ffi.HANDLER))
                self._handlers.append(handler)
                jax.ffi.register_ffi_target(found, capsule, platform=platform)
            self._targets[key] = found
        return found

    def _platform_device(self, platform: str) -> Device:
        if platform != "cpu":               # XLA's "CUDA": the backend whose memory that is
            return platform_device(platform.lower())
        chosen = self._chosen_device()
        if chosen is not None and chosen.host_memory:
            return chosen
        return host_device()

    def _native_handler(self, count, dim, statics: tuple, kinds: tuple, platform: str):
        """The device's native handler for this target, or None (the Python handler then)."""
        io, fixed = self.io, dict(statics)
        dev = self._platform_device(platform)
        operand_kinds, result_kinds = kinds
        if platform == "CUDA":   # arrays of the right kinds at distinct fake addresses (nothing is read)
            operands = [DeviceArray(None, (k + 1) << 32, (1,) * ndim, dtype, True, "cuda")
                        for k, (dtype, ndim) in enumerate(operand_kinds)]
            results = [DeviceArray(None, (k + 1) << 40, (1,) * ndim, dtype, False, "cuda")
                       for k, (dtype, ndim) in enumerate(result_kinds)]
        else:
            operands = [np.zeros((1,) * ndim, dtype) for dtype, ndim in operand_kinds]
            results = [np.zeros((1,) * ndim, dtype) for dtype, ndim in result_kinds]
        compiled = self.kernel.compile(*io.arguments(operands, results, fixed), dim=dim, device=dev)
        if compiled.prints:      # its lines are read back on the host after each launch
            return None
        count_t = topology(count, "CubeCount", self.name)
        compiled.check_count(count_t)
        names = io.operand_names(fixed)
        sources, ranks = {}, {}
        for position, name in enumerate(n for n in io.names if n not in fixed):
            kind, index = ("ret", io.results.index(name)) if name in io.results else ("arg", names.index(name))
            sources[position] = (kind, index)
            ranks[position] = (result_kinds if kind == "ret" else operand_kinds)[index][1]
        zeroed = [(i, ndim, np.dtype(dtype).itemsize) for i, (name, (dtype, ndim)) in
                  enumerate(zip(io.results, result_kinds)) if name not in io.in_out]
        return dev.backend.xla_ffi_handler(compiled.executable, compiled.ir_module, dev.properties, count_t,
                                           compiled.cube_dim, sources, ranks, zeroed)

    def _python_handler(self, count, dim, statics: tuple, platform: str) -> Callable:
        on_cuda, io, fixed = platform == "CUDA", self.io, dict(statics)
        launch = self.kernel[count, dim]

        def run(args: list[xla_ffi.Buffer], rets: list[xla_ffi.Buffer], stream: int | None) -> None:
            dev = self._platform_device(platform)
            results = [_view(b, on_cuda, False) for b in rets]
            for name, r in zip(io.results, results):
                if name not in io.in_out:
                    _zero(r, dev, stream)
            arguments = io.arguments([_view(b, on_cuda, True) for b in args], results, fixed)
            if on_cuda:
                with dev.stream(stream):
                    launch(*arguments, device=dev)
            else:
                launch(*arguments, device=dev)
            dev.synchronize()        # on CUDA, a checked kernel's errors belong to this call
        return run


def _shape_dtype(value) -> jax.ShapeDtypeStruct:
    return value if isinstance(value, jax.ShapeDtypeStruct) else jax.ShapeDtypeStruct(*_as_pair(value))


def _as_pair(value) -> tuple:
    if isinstance(value, jax.ShapeDtypeStruct):
        return tuple(value.shape), np.dtype(value.dtype)
    return tuple(value[0]), np.dtype(value[1])


def _platforms() -> list[tuple[str, bool]]:
    """XLA platforms to register handlers on: the CPU, and CUDA where JAX has a GPU."""
    found = [("cpu", False)]
    try:
        if jax.devices("gpu"):
            found.append(("CUDA", True))
    except RuntimeError:
        pass
    return found


class _HostBuffer:
    """XLA host memory as NumPy sees it (a view, no copy)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, ptr: int, shape: tuple, dtype: np.dtype, readonly: bool):
        self.__array_interface__ = {"data": (ptr, readonly), "shape": shape, "typestr": dtype.str, "version": 3}


def _view(b: xla_ffi.Buffer, on_cuda: bool, readonly: bool):
    if on_cuda:
        return DeviceArray(None, b.ptr, b.shape, b.dtype, readonly, "cuda")
    return np.asarray(_HostBuffer(b.ptr, b.shape, b.dtype, readonly))


def _zero(result, dev: Device, stream) -> None:
    """Fill a fresh output with zeros, so that elements the kernel does not write are defined."""
    if isinstance(result, np.ndarray):
        result.fill(0)
    elif result.nbytes:
        word = np.dtype(np.uint32 if result.nbytes % 4 == 0 else np.uint8)
        flat = DeviceArray(None, result.ptr, (result.nbytes // word.itemsize,), word, False, "cuda")
        with dev.stream(stream):
            _zero_fill[(flat.size + 255) // 256, 256](flat, device=dev)


@cb.kernel(checked=False)
def _zero_fill(out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = 0
