"""cubepy kernels as JAX functions: under ``jax.jit``, ``jax.vmap`` and, with ``jax.custom_vjp``,
``jax.grad``.

    import cubepy.jax

    scale = cubepy.jax.jax_kernel(scale_kernel, outputs=("out",), count=lambda x: cdiv(x[0], 256), dim=256)
    y = jax.jit(lambda x: scale(x, 2.0) + 1)(x)

`jax_kernel` turns a kernel into a function of its inputs (the parameters that are not
``outputs``; ``Comptime`` values given as plain Python values) that returns its results: the
``outputs`` (new arrays, zero-filled before the launch) and the ``in_out`` parameters (their input
values, updated), in parameter order. Two ways to run inside a traced program:

- ``method="ffi"`` (the default): an XLA custom call (``jax.ffi.ffi_call``) whose handler reads
  XLA's buffers in place and launches the compiled kernel on them: on the CPU on XLA's host
  buffers, on CUDA on its device buffers and its stream. No copy, no C compiler.
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
from .ir.types import DType
from .lang.types import Array, ArraySpec, ComptimeSpec, Mut, RegionSpec
from .runtime import xla_ffi
from .runtime.device_arrays import DeviceArray
from .runtime.devices import Device, current_device
from .runtime.devices import device as get_device
from .runtime.kernel import KernelFunction
from .runtime.topology import topology

__all__ = ["JaxKernel", "jax_kernel"]

_names = itertools.count()


def jax_kernel(kernel: KernelFunction, outputs: Sequence[str] = ("out",), *, count: Any, dim: Any,
               in_out: Sequence[str] = (), out_shapes: dict[str, Any] | None = None,
               device: Device | str | None = None, method: str = "ffi",
               vmap_method: str = "sequential") -> JaxKernel:
    """A JAX function launching ``kernel``; see the module docstring.

    ``count`` and ``dim``: ints or tuples, or callables of the shapes of the array inputs (in
    parameter order), e.g. ``count=lambda x: (x[0] + 255) // 256``. ``out_shapes`` maps an
    output name to a ``jax.ShapeDtypeStruct`` (or a callable of the input shapes giving one);
    by default an output has the first array input's shape and its annotated dtype (else the
    first input's). ``device`` is the cubepy device for ``method="callback"`` (default: the
    current device); the FFI path runs where XLA runs the program.
    """
    return JaxKernel(kernel, tuple(outputs), tuple(in_out), count, dim, dict(out_shapes or {}), device, method,
                     vmap_method)


class JaxKernel:
    """A kernel as a JAX function (made by `jax_kernel`): call it with the kernel's inputs."""

    def __init__(self, kernel, outputs, in_out, count, dim, out_shapes, device, method, vmap_method):
        if not isinstance(kernel, KernelFunction):
            raise ArgumentTypeError(f"jax_kernel takes a @cb.kernel, got {type(kernel).__name__}")
        if method not in ("ffi", "callback"):
            raise ArgumentTypeError(f"jax_kernel: method must be 'ffi' or 'callback', got {method!r}", kernel.__name__)
        sig = kernel.signature
        self.kernel, self.name = kernel, kernel.__name__
        self.names, self.annotations = sig.names, sig.annotations
        for n in (*outputs, *in_out):
            if n not in self.names or not self._writable(self.names.index(n)):
                raise ArgumentTypeError(f"jax_kernel: '{n}' is not a Mut array parameter of the kernel "
                                        f"(parameters: {', '.join(self.names)})", self.name)
        for n in out_shapes:
            if n not in outputs:
                raise ArgumentTypeError(f"jax_kernel: out_shapes names '{n}', which is not in outputs", self.name)
        self.outputs, self.in_out, self.out_shapes = outputs, in_out, out_shapes
        self.count, self.dim, self.device, self.method, self.vmap_method = count, dim, device, method, vmap_method
        self.inputs = tuple(n for n in self.names if n not in outputs)
        self.results = tuple(n for n in self.names if n in outputs or n in in_out)
        self._targets: dict[tuple, str] = {}
        self._handlers: list = []             # ctypes handlers XLA may call: kept alive with this object

    def __repr__(self) -> str:
        return f"<cubepy.jax kernel {self.name}({', '.join(self.inputs)}) -> ({', '.join(self.results)})>"

    # --- the traced call ----------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        values = self._bind(args, kwargs)
        operands, statics = [], {}
        for name, value in zip(self.inputs, values):
            ann = self.annotations[self.names.index(name)]
            if isinstance(ann, ComptimeSpec):
                statics[name] = value
            elif isinstance(ann, DType):
                operands.append(jnp.asarray(value, dtype=np.dtype(ann.numpy_name)))
            else:
                operands.append(jnp.asarray(value))
        arrays = [op for name, op in zip((n for n in self.inputs if n not in statics), operands)
                  if not isinstance(self.annotations[self.names.index(name)], DType)]
        shapes = tuple(tuple(a.shape) for a in arrays)
        results = [self._result_type(name, arrays, shapes, operands) for name in self.results]
        count, dim = _launch_size(self.count, shapes), _launch_size(self.dim, shapes)
        frozen = tuple(sorted(statics.items()))
        if self.method == "callback":
            out = jax.pure_callback(self._host_callback(count, dim, frozen), results, *operands,
                                    vmap_method=self.vmap_method)
        else:
            aliases = {self._operand_index(n, statics): self.results.index(n) for n in self.in_out}
            kinds = (tuple((np.dtype(o.dtype), o.ndim) for o in operands),
                     tuple((np.dtype(r.dtype), len(r.shape)) for r in results))
            target = self._target(count, dim, frozen, kinds)
            out = jax.ffi.ffi_call(target, results, vmap_method=self.vmap_method,
                                   input_output_aliases=aliases or None)(*operands)
        out = tuple(out)
        return out[0] if len(out) == 1 else out

    def _bind(self, args: tuple, kwargs: dict) -> list:
        if len(args) > len(self.inputs):
            raise ArgumentTypeError(f"takes {len(self.inputs)} inputs ({', '.join(self.inputs)}) but {len(args)} "
                                    "were given", self.name)
        values = list(args)
        for name in self.inputs[len(args):]:
            if name not in kwargs:
                raise ArgumentTypeError(f"missing input '{name}' (inputs: {', '.join(self.inputs)})", self.name)
            values.append(kwargs.pop(name))
        if kwargs:
            raise ArgumentTypeError(f"unexpected input(s) {', '.join(kwargs)}", self.name)
        for name, value in zip(self.inputs, values):
            comptime = isinstance(self.annotations[self.names.index(name)], ComptimeSpec)
            if comptime and isinstance(value, jax.core.Tracer):
                raise ArgumentTypeError(f"Comptime parameter '{name}' needs a Python value, not a traced JAX value "
                                        "(mark it static: jax.jit(..., static_argnums=...))", self.name)
        return values

    def _result_type(self, name: str, arrays: list, shapes: tuple, operands: list) -> jax.ShapeDtypeStruct:
        if name in self.in_out:
            source = operands[self._operand_index(name, {})]
            return jax.ShapeDtypeStruct(source.shape, source.dtype)
        given = self.out_shapes.get(name)
        if given is not None:
            given = given(*shapes) if callable(given) else given
            return given if isinstance(given, jax.ShapeDtypeStruct) else jax.ShapeDtypeStruct(*given)
        if not arrays:
            raise ArgumentTypeError(f"output '{name}' needs out_shapes=: the kernel has no array input to take its "
                                    "shape from", self.name)
        ann = self.annotations[self.names.index(name)]
        dtype = ann.dtype if isinstance(ann, (ArraySpec, RegionSpec)) else None
        return jax.ShapeDtypeStruct(arrays[0].shape, np.dtype(dtype.numpy_name) if dtype else arrays[0].dtype)

    def _operand_index(self, name: str, statics: dict) -> int:
        return [n for n in self.inputs if n not in statics].index(name)

    def _writable(self, index: int) -> bool:
        ann = self.annotations[index]
        return isinstance(ann, RegionSpec) or isinstance(ann, ArraySpec) and ann.mutable

    # --- launching on concrete buffers -----------------------------------------------------

    def _arguments(self, inputs: list, results: list, statics: tuple) -> list:
        """The kernel's arguments in parameter order, from operand and result arrays."""
        fixed, operands, outs = dict(statics), iter(inputs), dict(zip(self.results, results))
        args = []
        for name, ann in zip(self.names, self.annotations):
            if name in fixed:
                args.append(fixed[name])
            elif name in self.outputs:
                args.append(outs[name])
            else:
                value = next(operands)
                if name in self.in_out:
                    value = outs[name]             # the result buffer holds the input's values
                elif isinstance(ann, DType):
                    value = value.item() if hasattr(value, "item") else value
                args.append(value)
        return args

    def _host_callback(self, count, dim, statics: tuple) -> Callable:
        def callback(*inputs):
            results = []
            for name in self.results:
                if name in self.in_out:
                    results.append(np.array(inputs[self._operand_index(name, dict(statics))]))
                else:
                    results.append(None)
            dev = self._host_device()
            shapes = self._callback_result_types(inputs, statics)
            results = [r if r is not None else np.zeros(s.shape, s.dtype) for r, s in zip(results, shapes)]
            self.kernel[count, dim](*self._arguments(list(inputs), results, statics), device=dev)
            dev.synchronize()
            return tuple(results)
        return callback

    def _callback_result_types(self, inputs, statics) -> list:
        arrays = [np.asarray(v) for n, v in zip((n for n in self.inputs if n not in dict(statics)), inputs)
                  if not isinstance(self.annotations[self.names.index(n)], DType)]
        shapes = tuple(a.shape for a in arrays)
        return [self._result_type(n, arrays, shapes, list(inputs)) for n in self.results]

    def _host_device(self) -> Device:
        if self.device is None:
            return current_device()
        return get_device(self.device) if isinstance(self.device, str) else self.device

    def _target(self, count, dim, statics: tuple, kinds: tuple) -> str:
        """The XLA FFI target for this launch shape, these Comptime values and these operand and
        result kinds (registered once): on the CPU a native handler where the backend offers one."""
        key = (count, dim, statics, kinds)
        found = self._targets.get(key)
        if found is None:
            found = f"cubepy_{self.name}_{next(_names)}"
            for platform, with_stream in _platforms():
                handler = self._native_handler(count, dim, statics, kinds, platform)
                if handler is None:
                    handler = xla_ffi.make_handler(self._ffi_run(count, dim, statics, platform), with_stream)
                    capsule = jax.ffi.pycapsule(handler)
                else:
                    capsule = jax.ffi.pycapsule(ctypes.cast(handler.address, xla_ffi.HANDLER))
                self._handlers.append(handler)
                jax.ffi.register_ffi_target(found, capsule, platform=platform)
            self._targets[key] = found
        return found

    def _native_handler(self, count, dim, statics: tuple, kinds: tuple, platform: str):
        """The device's native handler for this target, or None (the Python handler then)."""
        on_cuda = platform == "CUDA"
        dev = get_device("cuda") if on_cuda else _host_ffi_device(self.device)
        make = getattr(dev.backend, "xla_ffi_handler", None)
        if make is None:
            return None
        operand_kinds, result_kinds = kinds
        fixed = dict(statics)
        if on_cuda:         # arrays of the right kinds at distinct fake addresses (nothing is read)
            examples = [DeviceArray(None, (k + 1) << 32, (1,) * ndim, dtype, True, "cuda")
                        for k, (dtype, ndim) in enumerate(operand_kinds)]
            results = [DeviceArray(None, (k + 1) << 40, (1,) * ndim, dtype, False, "cuda")
                       for k, (dtype, ndim) in enumerate(result_kinds)]
            args = examples
        else:
            examples = [np.zeros((1,) * ndim, dtype) for dtype, ndim in operand_kinds]
            results = [np.zeros((1,) * ndim, dtype) for dtype, ndim in result_kinds]
            args = [a[()] if isinstance(self.annotations[self.names.index(n)], DType) else a
                    for n, a in zip((n for n in self.inputs if n not in fixed), examples)]
        compiled = self.kernel.compile(*self._arguments(args, results, statics), dim=dim, device=dev)
        count_t = topology(count, "CubeCount", self.name)
        compiled.check_count(count_t)
        operand_names = [n for n in self.inputs if n not in fixed]
        sources = {}
        for position, name in enumerate(n for n in self.names if n not in fixed):
            sources[position] = ("ret", self.results.index(name)) if name in self.results else \
                ("arg", operand_names.index(name))
        zeroed = [(i, ndim, np.dtype(dtype).itemsize) for i, (name, (dtype, ndim)) in
                  enumerate(zip(self.results, result_kinds)) if name not in self.in_out]
        ranks = {position: (result_kinds[index][1] if kind == "ret" else operand_kinds[index][1])
                 for position, (kind, index) in sources.items()}
        return make(compiled.executable, compiled.ir_module, dev.properties, count_t, compiled.cube_dim, sources,
                    ranks, zeroed)

    def _ffi_run(self, count, dim, statics: tuple, platform: str) -> Callable:
        on_cuda = platform == "CUDA"
        launchers: dict = {}

        def run(args: list[xla_ffi.Buffer], rets: list[xla_ffi.Buffer], stream: int | None) -> None:
            inputs = [_view(b, on_cuda, True) for b in args]
            results = [_view(b, on_cuda, False) for b in rets]
            dev = get_device("cuda") if on_cuda else _host_ffi_device(self.device)
            for name, r in zip(self.results, results):
                if name not in self.in_out:
                    _zero(r, dev, stream)
            arguments = [a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a
                         for a in self._arguments(inputs, results, statics)]
            launch = launchers.get(id(dev))
            if launch is None:
                launch = launchers[id(dev)] = self.kernel[count, dim]
            if on_cuda:
                with dev.stream(stream):
                    launch(*arguments, device=dev)
            else:
                launch(*arguments, device=dev)
                dev.synchronize()
        return run


def _platforms() -> list[tuple[str, bool]]:
    """XLA platforms to register handlers on: the CPU, and CUDA where JAX has a GPU."""
    found = [("cpu", False)]
    try:
        if jax.devices("gpu"):
            found.append(("CUDA", True))
    except RuntimeError:
        pass
    return found


def _host_ffi_device(device) -> Device:
    if device is not None:
        dev = get_device(device) if isinstance(device, str) else device
        if dev.host_memory:
            return dev
    dev = current_device()
    return dev if dev.host_memory else get_device("cpu")


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


def _launch_size(value, shapes: tuple):
    return value(*shapes) if callable(value) else value


@cb.kernel(checked=False)
def _zero_fill(out: Mut[Array]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = 0
