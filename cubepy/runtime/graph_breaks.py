"""Under ``torch.compile``, a plain cubepy launch is one clean graph break.

A launch runs host code on real data (argument checks, compiles, the backend's enqueue), which
TorchDynamo cannot trace. cubepy's entry points (a launcher's call, ``kernel.launch``,
``kernel.compile``, a compiled kernel's launches, ...) are therefore wrapped in
``torch.compiler.disable`` as soon as TorchDynamo is loaded: Dynamo stops its graph there, the
launch runs eagerly, and the graph resumes after it. To keep a launch *inside* the graph, wrap it
in a ``cubepy.torch.op``.

cubepy never imports torch for this, and does not make a program that only imports torch load
Dynamo (0.8 s): `watch` wraps the entry points at once if ``torch._dynamo`` is loaded already,
else the moment it is (``torch.compile`` loads it), whatever the order of the user's imports.
The wrapper costs about 0.3 us per call.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import warnings
from typing import Any

from ..errors import skip_frames_in

REASON = ("a cubepy launch runs host code on real data, outside the graph; wrap it in a cubepy.torch.op "
          "to keep it in the graph")
DYNAMO = "torch._dynamo"

_entry_points: list[tuple[type, str]] = []
_installed = False


def register_entry_point(cls: type, name: str) -> None:
    """Make ``cls.name`` a graph break under torch.compile (now, if Dynamo is loaded, else later)."""
    _entry_points.append((cls, name))
    if _installed:
        _wrap(cls, name)


def watch() -> None:
    """Wrap the entry points now if TorchDynamo is loaded, else when it is first imported."""
    if DYNAMO in sys.modules:
        install()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(DYNAMO, install))


def install() -> None:
    """Wrap every registered entry point in ``torch.compiler.disable`` (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    skip_frames_in(os.path.dirname(sys.modules[DYNAMO].__file__))   # errors point past the wrapper
    for cls, name in _entry_points:
        _wrap(cls, name)


def _wrap(cls: type, name: str) -> None:
    method = cls.__dict__[name]
    if not getattr(method, "_torchdynamo_disable", False):
        setattr(cls, name, sys.modules["torch"].compiler.disable(method, reason=REASON))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``callback()`` right after module ``name`` has been imported (then leaves sys.meta_path)."""

    def __init__(self, name: str, callback):
        self.name, self.callback = name, callback

    def find_spec(self, fullname: str, path: Any, target: Any = None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module, callback = spec.loader.exec_module, self.callback

        def exec_then_call(module):
            exec_module(module)
            try:
                callback()
            except Exception as e:     # never break the user's import
                warnings.warn(f"cubepy could not mark its launches as torch.compile graph breaks: {e}",
                              RuntimeWarning, stacklevel=2)
        spec.loader.exec_module = exec_then_call
        return spec
