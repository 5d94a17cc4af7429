"""A kernel seen as a function from inputs to results, the shape framework adapters need.

``KernelIO(kernel, outputs=("out",), in_out=("y",))``: the kernel's *inputs* are its parameters
that are not ``outputs`` (arrays, scalars, ``Comptime`` values), in parameter order; its
*results* are the ``outputs`` (new arrays the adapter allocates) and the ``in_out`` parameters
(inputs whose updated values are returned), in parameter order. `cubepy.jax` and `cubepy.dask`
build on it, so both map arguments the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError
from ..ir.types import DType
from ..lang.types import ArraySpec, ComptimeSpec, RegionSpec


class KernelIO:
    """Inputs and results of ``kernel`` (see the module docstring); ``adapter`` names the caller
    in error messages (e.g. "jax_kernel")."""

    def __init__(self, kernel: Any, outputs: Sequence[str], in_out: Sequence[str], adapter: str,
                 out_shapes: dict | None = None):
        from .kernel import KernelFunction

        if not isinstance(kernel, KernelFunction):
            raise ArgumentTypeError(f"{adapter} takes a @cb.kernel, got {type(kernel).__name__}")
        sig = kernel.signature
        self.kernel, self.name, self.adapter = kernel, kernel.__name__, adapter
        self.names, self.annotations = sig.names, sig.annotations
        self.outputs, self.in_out = tuple(outputs), tuple(in_out)
        for n in (*self.outputs, *self.in_out):
            if n not in self.names or not self._writable(n):
                raise ArgumentTypeError(f"{adapter}: '{n}' is not a Mut array parameter of the kernel "
                                        f"(parameters: {', '.join(self.names)})", self.name)
        self.out_shapes = dict(out_shapes or {})
        for n in self.out_shapes:
            if n not in self.outputs:
                raise ArgumentTypeError(f"{adapter}: out_shapes names '{n}', which is not in outputs", self.name)
        self.inputs = tuple(n for n in self.names if n not in self.outputs)
        self.results = tuple(n for n in self.names if n in self.outputs or n in self.in_out)

    def annotation(self, name: str) -> Any:
        return self.annotations[self.names.index(name)]

    def is_comptime(self, name: str) -> bool:
        return isinstance(self.annotation(name), ComptimeSpec)

    def is_scalar(self, name: str) -> bool:
        return isinstance(self.annotation(name), DType)

    def _writable(self, name: str) -> bool:
        ann = self.annotation(name)
        return isinstance(ann, RegionSpec) or isinstance(ann, ArraySpec) and ann.mutable

    def bind(self, args: tuple, kwargs: dict) -> list:
        """The inputs in order, from positional and named arguments."""
        if len(args) > len(self.inputs):
            raise ArgumentTypeError(f"takes {len(self.inputs)} inputs ({', '.join(self.inputs)}) but {len(args)} "
                                    "were given", self.name)
        values, kwargs = list(args), dict(kwargs)
        for name in self.inputs[len(args):]:
            if name not in kwargs:
                raise ArgumentTypeError(f"missing input '{name}' (inputs: {', '.join(self.inputs)})", self.name)
            values.append(kwargs.pop(name))
        if kwargs:
            raise ArgumentTypeError(f"unexpected input(s) {', '.join(kwargs)}", self.name)
        return values

    def operand_names(self, statics: dict) -> list[str]:
        """The inputs that are passed as data (not as static Comptime values)."""
        return [n for n in self.inputs if n not in statics]

    def result_shape(self, name: str, arrays: list, operands: dict, shape_of: Callable = None) -> Any:
        """The shape and dtype of result ``name``: its input's for ``in_out``; ``out_shapes[name]``
        (a value, or a callable of the array inputs' shapes); else the first array input's
        shape with the result's annotated dtype (or that input's). Returns ``out_shapes``'
        value as given, else ``(shape, dtype)``."""
        if name in self.in_out:
            source = operands[name]
            return tuple(source.shape), np.dtype(source.dtype)
        given = self.out_shapes.get(name)
        if given is not None:
            return given(*(tuple(a.shape) for a in arrays)) if callable(given) else given
        if not arrays:
            raise ArgumentTypeError(f"output '{name}' needs out_shapes=: the kernel has no array input to take its "
                                    "shape from", self.name)
        dtype = self.annotation(name).dtype
        return tuple(arrays[0].shape), np.dtype(dtype.numpy_name) if dtype is not None else np.dtype(arrays[0].dtype)

    def arguments(self, operands: list, results: list, statics: dict) -> list:
        """The kernel's arguments in parameter order, from the operands (in `operand_names`
        order), the result arrays (in `results` order) and the static values. An ``in_out``
        parameter gets its result array, which the caller filled with the input's values."""
        operands, outs = iter(operands), dict(zip(self.results, results))
        args = []
        for name in self.names:
            if name in statics:
                args.append(statics[name])
            elif name in self.outputs:
                args.append(outs[name])
            else:
                value = next(operands)
                if name in self.in_out:
                    value = outs[name]
                elif self.is_scalar(name) and isinstance(value, np.ndarray) and value.ndim == 0:
                    value = value.item()
                args.append(value)
        return args


def launch_size(value: Any, shapes: tuple) -> Any:
    """``count`` or ``dim`` of an adapter: a value, or a callable of the array inputs' shapes."""
    return value(*shapes) if callable(value) else value
