"""Every error cubepy raises for a user's mistake.

Each subclasses the matching built-in exception, so ``except TypeError`` still works, and each
message names the kernel, the thing at fault, its value, and the user's source line with a caret.
"""

from __future__ import annotations

import os
import sys

from .ir.nodes import SourceLoc

_PACKAGE_DIRS = tuple(os.path.dirname(os.path.abspath(p)) + os.sep for p in (__file__,))
_WRAPPER_DIRS: list[str] = []     # other libraries' wrappers around cubepy's entry points


def skip_frames_in(folder: str) -> None:
    """Let `caller_loc` look past frames of files in ``folder`` (a library wrapping cubepy calls,
    such as torch.compiler.disable), so that errors point at the user's line."""
    path = os.path.abspath(folder) + os.sep
    if path not in _WRAPPER_DIRS:
        _WRAPPER_DIRS.append(path)


class CubeError(Exception):
    """Base of all cubepy errors. ``kernel`` and ``loc`` say where, when known."""

    def __init__(self, message: str, kernel: str | None = None, loc: SourceLoc | None = None):
        self.message = message
        self.kernel = kernel
        self.loc = loc
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"in kernel '{self.kernel}': {self.message}" if self.kernel else self.message
        return f"{head}\n{self.loc.render()}" if self.loc else head

    def __str__(self) -> str:
        return self._render()


class CompileError(CubeError):
    """A kernel that cannot be compiled; raised while tracing or checking the IR."""


class ToolchainError(CompileError, RuntimeError):
    """A vendor compiler (NVRTC, hiprtc, an OpenCL driver) rejected the code cubepy generated."""


class CubeTypeError(CompileError, TypeError):
    """Wrong types in kernel code (or a write to a read-only array)."""


class CubeNameError(CompileError, NameError):
    """A name the kernel uses that is not defined."""


class CubeSyntaxError(CompileError, SyntaxError):
    """Python syntax cubepy does not support in kernels."""

    def __init__(self, message: str, kernel: str | None = None, loc: SourceLoc | None = None):
        CubeError.__init__(self, message, kernel, loc)
        self.msg = self._render()
        if loc is not None:
            self.filename, self.lineno = loc.filename, loc.line

    def __str__(self) -> str:
        return self._render()


class CubeValueError(CompileError, ValueError):
    """A value known at compile time that is out of its allowed range."""


class CubeIndexError(CompileError, IndexError):
    """An index known at compile time to be out of range (a Line element, a static shape)."""


class DivergenceError(CompileError, ValueError):
    """``sync_cube`` or a plane op under control flow that differs between the units involved."""


class LaunchError(CubeError):
    """A launch that cannot proceed."""


class ArgumentTypeError(LaunchError, TypeError):
    """A launch argument of the wrong kind, dtype or rank."""


class ArgumentValueError(LaunchError, ValueError):
    """A launch argument or shape with a bad value (aliasing, read-only, size limits)."""


class OutOfBoundsError(CubeError, IndexError):
    """A checked kernel indexed outside an array; no memory was touched by that access."""


def out_of_bounds(kernel: str, array: str, index, shape, unit, cube, loc: SourceLoc | None) -> OutOfBoundsError:
    """The error every backend raises for a checked access outside an array (one wording, so a
    backend's message can be compared with the interpreter's)."""
    return OutOfBoundsError(f"index {tuple(index)} is out of bounds for array '{array}' of shape {tuple(shape)} "
                            f"(unit {tuple(unit)} of cube {tuple(cube)})", kernel, loc)


class RaceError(CubeError, RuntimeError):
    """The interpreter's race report found two units touching one element without an atomic."""


class BackendUnavailableError(CubeError, RuntimeError):
    """A device whose vendor library or driver is missing or failed."""


def caller_loc() -> SourceLoc | None:
    """The innermost frame of the user's code (outside cubepy) on the current stack."""
    import linecache

    from . import backends as _backends_pkg  # noqa: F401  (its path is cubepy.backends)

    # cubepy.backends and cubepy.autotune live in their own folders (package-dir in pyproject)
    packages = [_backends_pkg] + [m for m in (sys.modules.get("cubepy.autotune"),) if m is not None]
    skip = (*_PACKAGE_DIRS, *(os.path.abspath(p) + os.sep for m in packages for p in m.__path__), *_WRAPPER_DIRS)
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(skip) and not frame.f_code.co_filename.startswith("<cubepy"):
            text = linecache.getline(filename, frame.f_lineno).rstrip("\n")
            indent = len(text) - len(text.lstrip())
            return SourceLoc(filename, frame.f_lineno, indent, len(text.rstrip()), text)
        frame = frame.f_back
    return None


def user_facing(err: CubeError) -> CubeError:
    """``err`` ready to be re-raised at a public entry point: without the frames of cubepy's
    internals (the traceback then starts at the entry point, under the user's frames) and
    without the internal exception it replaced, unless ``CUBEPY_TRACEBACK=full``."""
    from .settings import full_tracebacks

    if not full_tracebacks():
        err.__traceback__ = None
        err.__suppress_context__ = True
    return err
