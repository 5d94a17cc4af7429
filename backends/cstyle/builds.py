"""One rendered source, compiled once per kind of launch: what every C-style GPU backend's executable is.

The renderer leaves two facts of a launch to the compiler's definitions, so that the code a launch
runs is the code a hand-written kernel for it would be:

- the host's answer to the kernel's launch test (``CB_LAUNCH_OK``, `cubepy.ir.cube_checks`):
  ``-DCB_LAUNCH_OK=1`` builds what runs where the host proved the launch in bounds, the kernel
  without its checks' code (the registers and load scheduling of the unchecked kernel);
  ``-DCB_LAUNCH_OK=0`` the checks per cube and per access. A kernel without a launch test has one
  answer, None;
- the launch's *shape* (`Rendered.one_cube`): per count axis the kernel reads (y, z), whether the
  launch has one cube along it (``-DCB_ONE_CUBE_Y=1``: position 0 and count 1 at compile time).

`Builds` keys the builds by ``(answer, shape)`` and makes each on first need; the backend supplies
how one build is made (NVRTC, the OpenCL compiler, hiprtc) and what a launch calls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .rendered import Rendered

# (answer, shape) -> (the function a launch calls, what keeps it alive, whether it came from disk)
BuildFn = Callable[[int | None, tuple], tuple[Any, Any, bool]]


def build_options(rendered: Rendered, answer: int | None, shape: tuple) -> tuple[str, ...]:
    """The compiler's definitions for the build of ``rendered`` for launches whose launch test
    answered ``answer`` (None: the kernel has none) and whose cube count has ``shape``."""
    return (*(() if answer is None else (f"-DCB_LAUNCH_OK={answer}",)), *rendered.one_cube_options(shape))


class Builds:
    """A kernel's builds per kind of launch. The build of the proven answer (or the only one) at the
    shape `Rendered.first_one_cube` is made at construction (the compile); every other at the first
    launch that needs it, once across threads."""

    __slots__ = ("rendered", "from_disk", "_proven_answer", "_unproven_answer", "_functions", "_build",
                 "_lock", "modules")

    def __init__(self, rendered: Rendered, build: BuildFn):
        self.rendered = rendered
        self._build, self._lock, self.modules = build, threading.Lock(), []
        self._functions: dict[tuple, Any] = {}          # (answer, shape) -> its build's function
        with_test = any(slot.kind == "launch_ok" for slot in rendered.args)
        self._proven_answer, self._unproven_answer = (1, 0) if with_test else (None, None)
        function, self.from_disk = self._built(self._proven_answer, rendered.first_one_cube)
        self._functions[(self._proven_answer, rendered.first_one_cube)] = function

    def shape(self, cube_count: tuple) -> tuple:
        """The shape of a launch of ``cube_count`` cubes, as the builds are keyed."""
        return self.rendered.one_cube(cube_count)

    def proven(self, shape: tuple) -> Any:
        """The function for launches of ``shape`` the host proved in bounds, or None where the
        kernel has no launch test."""
        if self._proven_answer is None:
            return None
        found = self._functions.get((1, shape))
        return found if found is not None else self._function(1, shape)

    def function(self, shape: tuple) -> Any:
        """The function for launches of ``shape`` not proven in bounds."""
        key = (self._unproven_answer, shape)
        found = self._functions.get(key)
        return found if found is not None else self._function(*key)

    def for_launch(self, cube_count: tuple, proven: bool) -> Any:
        """The function a launch of ``cube_count`` cubes calls, given the host's answer."""
        shape = self.rendered.one_cube(cube_count)
        found = self.proven(shape) if proven else None
        return found if found is not None else self.function(shape)

    @property
    def any_function(self) -> Any:
        """A function built already (for attributes every build shares: the same launch bounds)."""
        return next(iter(self._functions.values()))

    @property
    def built(self) -> tuple[tuple, ...]:
        """The ``(answer, shape)`` keys built so far, in the order they were built."""
        return tuple(self._functions)

    def _function(self, answer: int | None, shape: tuple) -> Any:
        """The build for ``(answer, shape)``, made now if no thread has made it."""
        with self._lock:
            found = self._functions.get((answer, shape))
            if found is None:
                found = self._functions[(answer, shape)] = self._built(answer, shape)[0]
        return found

    def _built(self, answer: int | None, shape: tuple) -> tuple:
        function, module, from_disk = self._build(answer, shape)
        self.modules.append(module)           # kept alive with its functions
        return function, from_disk


__all__ = ["BuildFn", "Builds", "build_options"]
