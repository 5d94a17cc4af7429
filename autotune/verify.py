"""The arguments a candidate runs on, and the check of its output against the default config's.

Every candidate starts from fresh copies of the arguments the kernel writes (so each computes
from the caller's values, and the caller's arrays see only the final launch). On a device with
its own memory, host (NumPy) arguments are copied there once, so that the time is the kernel's
and not the transfers'. After one launch the written arrays are read back and compared with the
default config's, element by element, with ``|got - want| <= atol + rtol * |want|`` (NaN equal to
NaN); a candidate that differs is reported and never chosen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import cubepy as cb
from cubepy.errors import ArgumentTypeError
from cubepy.lang.types import ArraySpec, LinesArg, RegionSpec
from cubepy.runtime.devices import Device


@dataclass(frozen=True)
class Tolerance:
    """How close a candidate's output must be to the default config's."""

    rtol: float = 1e-4
    atol: float = 1e-5

    def __post_init__(self):
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"autotune: tolerances must be >= 0, got rtol={self.rtol}, atol={self.atol}")


class Arguments:
    """The caller's arguments and what a candidate runs on: read-only arrays moved to the device
    once, written ones copied fresh for every candidate."""

    def __init__(self, kernel, args: tuple, dev: Device):
        sig = kernel.signature
        self.kernel_name, self.dev, self.args = kernel.__name__, dev, args
        self.written = [i for i, (name, ann) in enumerate(zip(sig.names, sig.annotations))
                        if i < len(args) and (isinstance(ann, RegionSpec) or isinstance(ann, ArraySpec)
                                              and ann.mutable)]
        self.names = sig.names
        moved = list(args)
        for i, value in enumerate(args):
            if i not in self.written and not dev.host_memory and isinstance(value, np.ndarray):
                moved[i] = cb.preload(value, device=dev)
        self.base = tuple(moved)

    def fresh(self) -> tuple:
        """The arguments with every written one replaced by a fresh copy of the caller's."""
        out = list(self.base)
        for i in self.written:
            out[i] = self._copy(self.args[i], self.names[i])
        return tuple(out)

    def outputs(self, launched: tuple) -> dict[str, np.ndarray]:
        """The written arrays of a launch's arguments, as NumPy arrays (waits for the device)."""
        self.dev.synchronize()
        return {self.names[i]: _host(launched[i]) for i in self.written}

    def _copy(self, value, name: str):
        if isinstance(value, LinesArg):
            return LinesArg(self._copy(value.array, name), value.width)
        if isinstance(value, np.ndarray) and not self.dev.host_memory:
            return cb.preload_mut(value, device=self.dev)
        for method in ("copy", "clone"):
            make = getattr(value, method, None)
            if callable(make):
                return make()
        raise ArgumentTypeError(f"autotune measures on a copy of '{name}', which the kernel writes, but a "
                                f"{type(value).__name__} has no copy() or clone()", self.kernel_name)


def mismatch(want: dict[str, np.ndarray], got: dict[str, np.ndarray], tol: Tolerance) -> str | None:
    """None if every written array matches; else what differs, in one line."""
    for name, expected in want.items():
        actual = got[name]
        if actual.shape != expected.shape:
            return f"'{name}' has shape {actual.shape}, not {expected.shape}"
        if expected.dtype.kind in "fc":
            bad = ~np.isclose(actual, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
        else:
            bad = actual != expected
        count = int(np.count_nonzero(bad))
        if count:
            first = np.unravel_index(int(np.argmax(bad)), bad.shape)
            index = first[0] if len(first) == 1 else tuple(int(i) for i in first)
            return (f"'{name}' differs in {count} of {expected.size} elements, first at index {index}: "
                    f"{actual[first].item()!r} instead of {expected[first].item()!r} "
                    f"(rtol={tol.rtol}, atol={tol.atol})")
    return None


def _host(value) -> np.ndarray:
    """A copy of an array of any kind on the host."""
    if isinstance(value, LinesArg):
        return _host(value.array)
    if isinstance(value, np.ndarray):
        return value.copy()
    for reader in (lambda v: v.to_host(), lambda v: v.get(), lambda v: v.detach().cpu().numpy()):
        try:
            return np.asarray(reader(value))
        except AttributeError:
            continue
    return np.array(value)
