"""Compiling a kernel without pauses of Python's cyclic garbage collector.

Tracing and lowering allocate many objects (AST walks, IR ops, values); every few hundred
allocations start a collection, and now and then a full one that walks the whole heap: the
collector took a quarter to a third of the specialization of a fuzz kernel
(``python benchmarks/cpu/trace_time.py``: 67 against 99 ms, 73 against 95 with two million objects
held). Objects freed by reference counting are freed as before; reference cycles made meanwhile
wait for the first collection after the compile. The collector's switch is the process's: a
thread that disables it while another compiles finds it enabled again when that compile ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; a collector the caller had disabled stays so."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
