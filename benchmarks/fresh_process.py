"""The environment of the fresh Python processes that the start-up benchmarks time.

A user's Python caches compiled bytecode (``__pycache__``), so a fresh process's imports read
compiled modules. Where ``PYTHONDONTWRITEBYTECODE`` is set (some containers and CI images set it),
every process compiles every module it imports from source again: on the development machine
that made cubepy's first launch with a warm disk cache 31 ms on the CPU backend instead of 8 to
10, the time going to compiling the code generator's modules. So the children here cache
bytecode in a private folder (``PYTHONPYCACHEPREFIX``) whatever the parent's setting, and the
benchmark runs one untimed child first to fill it; ``bytecode=False`` times the uncached case.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile


def child_env(cache_dir: str, bytecode: bool = True, base: dict | None = None) -> dict:
    """The environment of a timed child: cubepy's disk cache in ``cache_dir``, bytecode cached
    (or not) in a folder shared by every child of this parent."""
    env = dict(os.environ if base is None else base, CUBEPY_CACHE_DIR=cache_dir)
    # a prefix in both cases: without one, bytecode in the source tree's __pycache__ would be read
    env["PYTHONPYCACHEPREFIX"] = _pycache_prefix(bytecode)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def warm_up(script: str, *args: str, bytecode: bool = True) -> None:
    """Run ``script`` once, untimed, with a throwaway disk cache: it fills the bytecode folder."""
    if not bytecode:
        return
    with tempfile.TemporaryDirectory() as cache:
        subprocess.run([sys.executable, script, *args], env=child_env(cache), check=True, capture_output=True,
                       timeout=600)


def describe(bytecode: bool) -> str:
    return ("bytecode cached (a private PYTHONPYCACHEPREFIX, filled by an untimed run)" if bytecode
            else "no bytecode cache (PYTHONDONTWRITEBYTECODE=1: every import compiles from source)")


_PREFIXES: dict[bool, str] = {}


def _pycache_prefix(bytecode: bool) -> str:
    """One folder per parent process and mode (the uncached mode's stays empty)."""
    if bytecode not in _PREFIXES:
        _PREFIXES[bytecode] = tempfile.mkdtemp(prefix="cubepy-bench-pycache-")
    return _PREFIXES[bytecode]
