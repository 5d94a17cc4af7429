"""The backend registry: every backend is an entry point of the ``cubepy.backends`` group.

A package adds a backend by declaring, in its ``pyproject.toml``::

    [project.entry-points."cubepy.backends"]
    mybackend = "mypackage.mybackend"          # a module whose BACKEND is a cubepy Backend

cubepy's own backends are registered the same way. `register_backend` adds one at run time (a
backend under development, a test double). A backend module is imported only when it is first
asked for; importing it must not import its vendor library (that happens in ``probe``).
"""

from __future__ import annotations

import importlib
import os
import sys
from functools import cache

from ..errors import ArgumentValueError, BackendUnavailableError
from .backend import Backend, contract_violations

GROUP = "cubepy.backends"

_added: dict[str, str | Backend] = {}       # register_backend's, which take precedence
_loaded: dict[str, Backend] = {}


@cache
def _entry_points() -> dict[str, str]:
    """Entry point name -> target ("module" or "module:attr") of the group, from the metadata
    folders on sys.path, the first of a name winning as importlib.metadata's does. Read directly:
    importing importlib.metadata costs a process 30 ms or more, at its first device choice."""
    found: dict[str, str] = {}
    for folder in sys.path:
        try:
            entries = sorted(e.path for e in os.scandir(folder or ".") if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:          # a zip archive or a missing folder: importlib.metadata below
            continue
        for meta in entries:
            try:
                with open(os.path.join(meta, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            if f"[{GROUP}]" in text:
                for name, target in _section(text, GROUP):
                    found.setdefault(name, target)
    if not found:                # no folder held cubepy's own: ask importlib.metadata
        from importlib.metadata import entry_points
        found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    return found


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = target`` lines of section ``[group]`` of an entry_points.txt."""
    out, inside = [], False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{group}]"
        elif inside and "=" in line and not line.startswith(("#", ";")):
            name, _, target = line.partition("=")
            out.append((name.strip(), target.split("[")[0].strip()))
    return out


def register_backend(name: str, backend: str | Backend) -> None:
    """Register ``backend`` (an instance, or the name of a module exposing ``BACKEND``) as ``name``,
    replacing an entry point of that name. Devices of ``name`` probed before keep the old one."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ArgumentValueError(f"a backend name must be an identifier, got {name!r}")
    _added[name] = backend
    _loaded.pop(name, None)
    backend_names.cache_clear()


def _targets() -> dict[str, str | Backend]:
    return {**_entry_points(), **_added}


def load_backend(name: str) -> Backend:
    """The backend registered as ``name``; BackendUnavailableError (one line) if its module cannot
    be imported or breaks the contract, ArgumentValueError if no backend has that name."""
    found = _loaded.get(name)
    if found is not None:
        return found
    targets = _targets()
    if name not in targets:
        raise ArgumentValueError(f"unknown device '{name}'; choose one of {', '.join(backend_names())}")
    target = targets[name]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        try:
            backend = getattr(importlib.import_module(module), attr or "BACKEND")
        except (ImportError, AttributeError) as e:
            raise BackendUnavailableError(f"backend '{name}' cannot be imported ({e})") from None
    else:
        backend = target
    problems = contract_violations(backend, name)
    if problems:
        raise BackendUnavailableError(f"backend '{name}' ({target}) breaks the backend contract: "
                                      + "; ".join(problems))
    _loaded[name] = backend
    return backend


@cache
def backend_names() -> tuple[str, ...]:
    """Every registered backend's name, in preference order (`Backend.preference`, then name);
    one whose module cannot be imported goes last, where `cb.devices()` shows why."""
    def rank(name: str) -> tuple:
        try:
            return (load_backend(name).preference, name)
        except BackendUnavailableError:
            return (float("inf"), name)
    return tuple(sorted(_targets(), key=rank))


def backend_for_platform(platform: str) -> str | None:
    """The first backend (in preference order) whose device memory ``platform`` names (a DLPack or
    framework device type, e.g. "cuda"); None if none does."""
    for name in backend_names():
        try:
            if load_backend(name).accepts_platform(platform):
                return name
        except BackendUnavailableError:
            continue
    return None
