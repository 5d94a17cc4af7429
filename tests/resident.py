"""The "resident" CUDA test device: the conformance suite with its arrays in GPU memory.

Under the ``cuda-resident`` device parameter, ``kernel.launch(count, dim, *args)`` moves every
NumPy array argument to a CuPy array and launches through ``kernel[count, dim]`` twice: once on
scratch copies (a cold launch, which makes the plan and its warm path), then on the real copies
through the warm path, which must be the generated direct one. Results are copied back into the
NumPy arrays, so a test reads them as usual; recorded errors (out of bounds) surface at the
synchronization that follows, as they would for NumPy arguments.
"""

from __future__ import annotations

import numpy as np

from cubepy.lang.types import LinesArg
from cubepy.runtime.kernel import KernelFunction


def _to_device(cp, value):
    if value.__class__ is LinesArg:
        return LinesArg(_to_device(cp, value.array), value.width)
    if isinstance(value, np.ndarray) and value.ndim:
        return cp.asarray(value)
    return value


def _host_arrays(value):
    return value.array if value.__class__ is LinesArg else value


def resident_launch(self: KernelFunction, count, dim, *args, device=None, checked=None, races=False, **kwargs):
    import cupy as cp

    if kwargs:      # arguments by name never take the warm path
        return _plain_launch(self, count, dim, *args, device=device, checked=checked, races=races, **kwargs)
    launcher = self[count, dim]
    with cp.cuda.Device(device.index or 0):         # the arrays live on the launch's GPU
        scratch = [_to_device(cp, a) for a in args]
        launcher(*scratch, device=device, checked=checked, races=races)
        moved = [_to_device(cp, a) for a in args]
        warm = launcher.warm_path
        assert warm is not None and hasattr(warm, "source"), f"kernel {self.__name__}: no direct warm path"
        assert warm(tuple(moved)), f"kernel {self.__name__}: the direct warm path refused the same kinds"
        try:
            device.synchronize()
        finally:
            for host, d in zip(args, moved):
                host, d = _host_arrays(host), _host_arrays(d)
                if isinstance(host, np.ndarray) and host.ndim and host.flags.writeable and d is not host:
                    d.get(out=host)


_plain_launch = KernelFunction.launch
