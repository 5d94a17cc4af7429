"""Autotuning (installed as ``cubepy.autotune``): a kernel's launch shape, Comptime values, Line
widths and fastmath mode, picked by measuring on the device, from a search space built from the
device's real maxima; measurements kept on disk, choices shippable in a file.

    from cubepy.autotune import autotune

    tuned = autotune(saxpy, grid=lambda args, dim: (len(args[0]) + dim[0] - 1) // dim[0])
    tuned(x, y, 2.0)

Modules: `space` (the candidates), `search` (strategies and budgets), `measure` (timing),
`verify` (arguments and output checks), `pool` (parallel compiles), `cache` (SQLite),
`shipped` (config files), `progress` (what a tuning prints), `tuner` (`autotune`, `Tuned`),
`command` (``cubepy tune``).
"""

from .cache import TuningCache
from .measure import Measure, Timing
from .search import STRATEGIES, Budget, Evaluations, Exhausted
from .shipped import ConfigFile, export_configs, load_configs, unload_configs
from .space import Config, Space, configs, default_dims, shapes
from .tuner import Chosen, Result, Tuned, autotune

__all__ = ["STRATEGIES", "Budget", "Chosen", "Config", "ConfigFile", "Evaluations", "Exhausted", "Measure", "Result",
           "Space", "Timing", "Tuned", "TuningCache", "autotune", "configs", "default_dims", "export_configs",
           "load_configs", "shapes", "unload_configs"]
