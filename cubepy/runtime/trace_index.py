"""Specializations a later process reuses without tracing them: the index of traces on disk.

A fresh process with a warm disk cache used to trace each kernel again and generate its code
again, only to find the key of compiled code it already had: about 7 ms of a 25 ms warm start
on CUDA, and most of the CPU backend's first launch. This index keeps, per specialization, what
the trace gave (the IR after the compile pipeline), what it read outside the kernel's source
(`cubepy.frontend.dependencies`), and the backend's `snapshot` of the executable. A later
process that finds the entry checks that every read still resolves to an equal value and lets
the backend `restore` the executable from its disk cache; anything else (no entry, a changed
global, a helper edited, another toolchain, an entry that does not load) is a miss, and the
kernel is traced and compiled as before, which writes the entry again.

An entry's key covers everything else a trace depends on: cubepy's own code (its version, and
the size and modification time of each module of cubepy and of the backend's package), the
Python and NumPy versions, the
kernel's module, name, file, first line and source text, the device and the specialization,
and ``CUBEPY_SHAPE_GENERIC``. Kernels whose traces read a value without a fingerprint (a
configuration object, a module of the user's) are not indexed; ``CUBEPY_TRACE_INDEX=0`` turns
the index off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import settings
from ..frontend.dependencies import Dependencies
from ..ir.nodes import Kernel
from ..log import logger
from .backend import Backend
from .disk_cache import DiskCache

CACHE = DiskCache("traces", ".pkl")
FORMAT = "1"


# executables restored in this process, by device and snapshot: the CubeDims that share one
# shape-generic kernel each have an entry, and restore that kernel once between them
_RESTORED: dict[tuple, tuple[Kernel, Any]] = {}


def restore(kernel_fn: Any, dev: Any, spec: Any) -> tuple[Kernel, Any, dict, bool] | None:
    """``(kernel IR, executable, reads, shared)`` of an indexed specialization that still holds, or
    None; ``shared``: the executable was restored for another specialization of this process."""
    key = _key(kernel_fn, dev, spec)
    if key is None:
        return None
    payload = CACHE.read(key)
    if payload is None:
        return None
    try:
        reads, kernel, snapshot = pickle.loads(payload)
        if not Dependencies.hold(reads, kernel_fn.fn):
            return None
        same = (dev.properties, hashlib.sha256(snapshot).digest(), kernel.cube_dim)
        found = _RESTORED.get(same)
        if found is not None:
            return found[0], found[1], reads, True
        executable = dev.backend.restore(kernel, dev.properties, snapshot)
    except Exception as e:             # an entry of another cubepy, or one that does not load
        logger.debug("trace index entry of '%s' not used (%s: %s)", kernel_fn.__name__, type(e).__name__, e)
        return None
    if executable is None:
        return None
    _RESTORED[same] = (kernel, executable)
    return kernel, executable, reads, False


def store(kernel_fn: Any, dev: Any, spec: Any, reads: Dependencies, kernel: Kernel, executable: Any) -> None:
    """Index a specialization just traced and compiled (where its reads and backend allow)."""
    if not reads.reusable:
        return
    key = _key(kernel_fn, dev, spec)
    if key is None:
        return
    try:
        snapshot = dev.backend.snapshot(executable, dev.properties)
        if snapshot is None:
            return
        payload = pickle.dumps((reads.snapshot(), kernel, snapshot), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:             # an IR the pickler cannot take: this one stays unindexed
        logger.debug("trace of '%s' not indexed (%s: %s)", kernel_fn.__name__, type(e).__name__, e)
        return
    CACHE.write(key, payload)


def _restores(backend: Any) -> bool:
    return type(backend).snapshot is not Backend.snapshot


def _key(kernel_fn: Any, dev: Any, spec: Any) -> str | None:
    text = kernel_fn.source_text
    # CUBEPY_DUMP_IR writes the IR of each trace: with it set, every specialization is traced
    if text is None or not _restores(dev.backend) or not settings.trace_index() or settings.dump_ir_dir():
        return None
    device, specialization = canonical(dev.key()), canonical(spec.key())
    if device is None or specialization is None:
        return None
    # Python (its AST and pickles) and NumPy (constant folding) count as cubepy's code does
    parts = (FORMAT, sys.version, np.__version__, code_identity(type(dev.backend).__module__), kernel_fn.__module__,
             kernel_fn.__qualname__, text.filename, str(text.first_line), text.text, device, specialization,
             str(settings.shape_generic()))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def canonical(value: Any) -> str | None:
    """Text that is equal in two processes where ``value`` is (sets sorted, dataclasses by field),
    or None where it may not be (a repr holding an address)."""
    if isinstance(value, (tuple, list)):
        items = [canonical(v) for v in value]
        return None if None in items else "(" + ",".join(items) + ")"
    if isinstance(value, (set, frozenset)):
        items = [canonical(v) for v in value]
        return None if None in items else "{" + ",".join(sorted(items)) + "}"
    if isinstance(value, dict):
        items = [(canonical(k), canonical(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in items):
            return None
        return "{" + ",".join(sorted(f"{k}:{v}" for k, v in items)) + "}"
    if is_dataclass(value) and not isinstance(value, type):
        inner = canonical(tuple(getattr(value, f.name) for f in fields(value)))
        return None if inner is None else type(value).__qualname__ + inner
    text = repr(value)
    return None if " at 0x" in text else f"{type(value).__name__}:{text}"


@functools.cache
def code_identity(backend_module: str) -> str:
    """cubepy's version and the size and modification time of every module of cubepy, its
    backends and the package of ``backend_module`` (made once per process and backend)."""
    from .. import __version__

    folders = set()
    for name in ("cubepy", "cubepy.backends", backend_module.partition(".")[0]):
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if where:
            folders.add(Path(where).parent)
    stamps = []
    for folder in sorted(folders):
        stamps.extend(_module_stamps(str(folder)))
    return hashlib.sha256("\0".join([__version__, *sorted(stamps)]).encode()).hexdigest()


def _module_stamps(folder: str) -> list[str]:
    """``path size mtime`` of every ``.py`` file under ``folder`` (os.scandir: a third of the
    time of Path.rglob and a stat each)."""
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                found.extend(_module_stamps(entry.path))
        elif entry.name.endswith(".py"):
            try:
                st = entry.stat()
            except OSError:
                continue
            found.append(f"{entry.path} {st.st_size} {st.st_mtime_ns}")
    return found


__all__ = ["CACHE", "canonical", "code_identity", "restore", "store"]
