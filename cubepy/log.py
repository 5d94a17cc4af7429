"""The ``cubepy`` logger: compiles (kernel, device, milliseconds, compiled or loaded from the disk
cache), autotune decisions and transfer warnings.

``CUBEPY_LOG_LEVEL=INFO`` (or DEBUG) prints them to stderr; otherwise the logger has no handler of
its own and a program configures it like any other (``logging.getLogger("cubepy")``).
"""

from __future__ import annotations

import logging
import sys

from . import settings

logger = logging.getLogger("cubepy")


def configure() -> None:
    """Apply CUBEPY_LOG_LEVEL (once, at import): a level and a stderr handler where it is set."""
    level = settings.log_level_setting()
    if level is None:
        return
    logger.setLevel(level)
    if not any(getattr(h, "_cubepy", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("cubepy %(levelname)s: %(message)s"))
        handler._cubepy = True
        logger.addHandler(handler)
