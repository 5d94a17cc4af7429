"""cubepy kernels as PyTorch custom ops: one decorator, the fake implementation derived.

    import torch
    import cubepy as cb
    import cubepy.torch

    @cubepy.torch.op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
        out = torch.empty_like(x)
        scale_kernel[cubes(x.numel()), 256](x, out, factor)     # any cubepy launches
        return out

    torch.compile(model, fullgraph=True)      # scale is one node of the graph

`op` returns a ``torch.library.CustomOpDef``, so ``.register_autograd(...)`` and
``.register_fake(...)`` work as in torch. Its fake implementation (what ``torch.compile`` traces
with) is the body itself, run on fake tensors with its cubepy launches skipped: it allocates the
outputs, so their shapes and dtypes come out right without a line written for them. A body that
needs real data on the host (``.item()``, ``.tolist()``, ...) gets a clear error asking for a
hand-written fake, which replaces the derived one as in torch.

The body runs on the cubepy device of its tensors: CUDA tensors on ``cuda:<index>``, on torch's
current stream; CPU tensors on the default device if that is a host device (``cpu``, ``interp``),
else on ``cpu``. Plain launches on tensors outside an op work too; under ``torch.compile`` each is
a graph break (see `cubepy.runtime.graph_breaks`).

Importing this module imports torch; the rest of cubepy never does.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch

from .errors import CubeError
from .runtime.devices import Device, current_device, host_device, platform_device, use_device
from .runtime.fake_launches import skip_launches

__all__ = ["FakeImplementationError", "device_of", "op"]

class FakeImplementationError(CubeError, RuntimeError):
    """An op's body cannot run on fake tensors, so its fake implementation must be written by hand."""


def op(name: str, fn: Callable | None = None, /, *, mutates_args: Iterable[str] | str,
       device_types: str | Iterable[str] | None = None, schema: str | None = None):
    """Make ``fn``, a function that allocates torch outputs and launches cubepy kernels, a PyTorch
    custom op named ``"namespace::name"``; use as ``@op(name, mutates_args=...)``.

    Returns the ``torch.library.CustomOpDef`` (callable like ``fn``; ``.register_autograd``,
    ``.register_fake``, ``.register_kernel`` as in torch), with a fake implementation derived from
    the body. ``mutates_args`` must name exactly the arguments the body writes, as in
    ``torch.library.custom_op``.
    """
    def build(body: Callable) -> Any:
        @functools.wraps(body)
        def implementation(*args, **kwargs):
            first = next(_tensors(args, kwargs), None)
            if first is None or not first.is_cuda and current_device().host_memory:
                return body(*args, **kwargs)        # CPU tensors on a host device: nothing to set up
            with _launch_scope(first):
                return body(*args, **kwargs)

        if schema is None:
            inferred = torch.library.infer_schema(body, mutates_args=mutates_args)
        else:
            inferred = schema
        custom = torch.library.custom_op(name, implementation, mutates_args=mutates_args,
                                         device_types=device_types, schema=inferred)
        custom.register_fake(_derived_fake(name, body))
        return custom
    return build if fn is None else build(fn)


def device_of(tensor: torch.Tensor) -> Device:
    """The cubepy device that runs kernels on ``tensor`` in an op: its CUDA device, or for a CPU
    tensor the default device if that is a host device, else ``cpu``."""
    if tensor.is_cuda:
        index = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()
        return platform_device("cuda", index)
    if tensor.device.type != "cpu":
        raise CubeError(f"a tensor on device '{tensor.device}' has no cubepy device; move it with .cpu() or .cuda()")
    return host_device()


def _tensors(args: tuple, kwargs: dict) -> Iterator[torch.Tensor]:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, torch.Tensor))


@contextmanager
def _launch_scope(first: torch.Tensor) -> Iterator[None]:
    """Launches in the body go to the device of its first tensor (on CUDA: torch's current stream)."""
    dev = device_of(first)
    with ExitStack() as stack:
        stack.enter_context(use_device(dev))
        if first.is_cuda:
            stack.enter_context(dev.stream(torch.cuda.current_stream(first.device).cuda_stream))
        yield


def _derived_fake(name: str, body: Callable) -> Callable:
    """The fake implementation: ``body`` on fake tensors, its cubepy launches skipped."""
    @functools.wraps(body)
    def fake(*args, **kwargs):
        with skip_launches():
            try:
                return body(*args, **kwargs)
            except Exception as e:
                raise FakeImplementationError(
                    f"op '{name}': its body cannot run on fake tensors, which torch.compile traces with "
                    f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}{_where(body, e)}); "
                    f"host work on the data (.item(), .tolist(), .numpy(), Python branches on values) needs "
                    f"a fake implementation written by hand: @{body.__name__}.register_fake") from e
    return fake


def _where(body: Callable, error: BaseException) -> str:
    """`` at file:line`` of the innermost frame of the body's file in the error's traceback."""
    filename = getattr(getattr(body, "__code__", None), "co_filename", None)
    found = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
    return f" at {found[-1].filename}:{found[-1].lineno}: {found[-1].line}" if found else ""
