"""Autotuning (installed as ``cubepy.autotune``): a kernel's launch shape, and chosen Comptime values,
picked by measuring on the device, from a search space built from the device's real maxima, with
the measurements kept on disk.

    from cubepy.autotune import autotune

    tuned = autotune(saxpy, grid=lambda args, dim: (len(args[0]) + dim[0] - 1) // dim[0])
    tuned(x, y, 2.0)
"""

from .cache import TuningCache
from .space import Config, configs, default_dims
from .tuner import Tuned, autotune

__all__ = ["Config", "Tuned", "TuningCache", "autotune", "configs", "default_dims"]
