"""cubepy kernels on Dask arrays: a kernel as a function of chunks, for ``dask.array.map_blocks``.

    import cubepy.dask

    y = cubepy.dask.map_blocks(scale, x, 2.0, outputs=("out",), count=lambda s: (s[0] + 255) // 256, dim=256)
    y.compute()          # with a distributed.Client, every worker runs the kernel on its chunks

`blockwise` returns a picklable function of a task's chunks that returns the kernel's results
(inputs and results as in `cubepy.runtime.kernel_io`: ``outputs`` are new arrays of the chunk's
array library, zero-filled; ``in_out`` parameters return updated copies). A chunk's library picks
the device: NumPy chunks run on the worker's host device (``cpu``), CuPy chunks in place on
``cuda``; ``device=`` overrides. What travels to a worker is the kernel (by reference, or its
source: `cubepy.runtime.pickling`), never compiled code: each worker compiles a kernel once per
process, or loads it from the disk cache that the workers of a machine share.
Importing this module imports Dask; the rest of cubepy never does.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import dask.array as da
import numpy as np
from dask.array.utils import meta_from_array

from .runtime.devices import Device, current_device, host_device
from .runtime.devices import device as get_device
from .runtime.kernel_io import KernelIO, launch_size

__all__ = ["Blockwise", "blockwise", "map_blocks"]


def blockwise(kernel: Any, outputs: Sequence[str] = ("out",), *, count: Any, dim: Any, in_out: Sequence[str] = (),
              out_shapes: dict | None = None, device: Device | str | None = None) -> Blockwise:
    """A function of chunks that launches ``kernel`` on them and returns its results.

    ``count``/``dim``: values, or callables of the array chunks' shapes (as for `cubepy.jax`).
    ``out_shapes`` maps an output to ``(shape, dtype)`` or a callable of the chunks' shapes.
    """
    return Blockwise(KernelIO(kernel, outputs, in_out, "cubepy.dask.blockwise", out_shapes), count, dim, device)


class Blockwise:
    """A kernel as a function of chunks (made by `blockwise`); pickles with its kernel."""

    def __init__(self, io: KernelIO, count: Any, dim: Any, device: Device | str | None):
        self.io, self.count, self.dim = io, count, dim
        self.device = device if device is None or isinstance(device, str) else device.name

    def __reduce__(self):
        io = self.io
        return (_rebuild, (io.kernel, io.outputs, self.count, self.dim, io.in_out, io.out_shapes, self.device))

    def __repr__(self) -> str:
        return f"<cubepy.dask blockwise {self.io.name}({', '.join(self.io.inputs)}) -> ({', '.join(self.io.results)})>"

    def __call__(self, *args, **kwargs):
        io = self.io
        values = io.bind(args, kwargs)
        statics = {n: v for n, v in zip(io.inputs, values) if io.is_comptime(n)}
        operands = [v for n, v in zip(io.inputs, values) if n not in statics]
        by_name = dict(zip(io.operand_names(statics), operands))
        arrays = [v for n, v in by_name.items() if not io.is_scalar(n)]
        xp = _namespace(arrays[0]) if arrays else np
        results = []
        for name in io.results:
            if name in io.in_out:
                results.append(xp.asarray(by_name[name]).copy())
            else:
                shape, dtype = io.result_shape(name, arrays, by_name)
                results.append(xp.zeros(shape, dtype=dtype))
        shapes = tuple(tuple(a.shape) for a in arrays)
        dev = self._device(arrays)
        io.kernel[launch_size(self.count, shapes), launch_size(self.dim, shapes)](
            *io.arguments(operands, results, statics), device=dev)
        dev.synchronize()        # errors (a checked kernel's out-of-bounds access) belong to this task
        return results[0] if len(results) == 1 else tuple(results)

    def _device(self, arrays: list) -> Device:
        if self.device is not None:
            return get_device(self.device)
        if arrays and isinstance(arrays[0], np.ndarray):
            return host_device()
        return current_device()


def map_blocks(kernel: Any, *args, outputs: Sequence[str] = ("out",), count: Any, dim: Any,
               in_out: Sequence[str] = (), dtype: Any = None, device: Device | str | None = None,
               **map_blocks_kwargs) -> da.Array:
    """``dask.array.map_blocks`` of `blockwise(kernel, ...)` over ``args`` (Dask arrays, scalars,
    Comptime values), for a kernel with one result. ``dtype``: the result's (default: the
    output's annotated dtype, else the first array's); other keywords go to ``map_blocks``."""
    fn = blockwise(kernel, outputs, count=count, dim=dim, in_out=in_out, device=device)
    if len(fn.io.results) != 1:
        raise TypeError(f"cubepy.dask.map_blocks: kernel '{fn.io.name}' has results {fn.io.results}; map_blocks "
                        "takes one (use blockwise with dask.array.blockwise for several)")
    first = next((a for a in args if isinstance(a, da.Array)), None)
    if dtype is None:
        name = fn.io.results[0]
        annotated = fn.io.annotation(name).dtype
        dtype = np.dtype(annotated.numpy_name) if annotated is not None else first.dtype
    if first is not None and "meta" not in map_blocks_kwargs:
        map_blocks_kwargs["meta"] = meta_from_array(first, first.ndim, dtype=dtype)
    return da.map_blocks(fn, *args, dtype=dtype, **map_blocks_kwargs)


def _rebuild(kernel, outputs, count, dim, in_out, out_shapes, device) -> Blockwise:
    return blockwise(kernel, outputs, count=count, dim=dim, in_out=in_out, out_shapes=out_shapes, device=device)


def _namespace(array: Any) -> Any:
    """The array library of a chunk (NumPy, CuPy, ...): the module that defines its type (CuPy 14's
    ``__array_namespace__`` is NumPy's array API namespace, which would allocate results on the
    host), else the array API's namespace, else NumPy."""
    if isinstance(array, np.ndarray):
        return np
    module = sys.modules.get(type(array).__module__.partition(".")[0])
    if module is not None and callable(getattr(module, "zeros", None)) and callable(getattr(module, "asarray", None)):
        return module
    get = getattr(array, "__array_namespace__", None)
    return get() if get is not None else np
