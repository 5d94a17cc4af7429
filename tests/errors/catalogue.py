"""The harness of the bad-input catalogue: a `Bad` case is a kernel, its arguments, the error it
must raise and what the message must say. `check` launches it on a device with every array
argument a view into a larger buffer of canaries, then asserts the exception class, that the
message names the kernel and the thing at fault, and that no memory outside the arrays changed
(nor, for errors raised before the kernel runs, inside them)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import cubepy as cb

CANARY = 8


@dataclass
class Bad:
    name: str
    kernel: object                   # a @cb.kernel, or a callable(device) that raises
    args: object                     # () -> list of arguments (arrays are guarded by `check`)
    error: type
    says: tuple                      # fragments the message must contain (the thing, the value, the fix)
    dim: object = 32
    count: object = 1
    devices: tuple = ("interp", "cpu", "opencl")
    runs: bool = False               # the kernel runs (checked-mode reports): arrays may change inside
    options: dict = field(default_factory=dict)
    caret: bool = True               # compile errors show the user's line with a caret
    kernel_name: str = ""            # when ``kernel`` is a callable: the kernel the message must name


class Guarded:
    """Arrays handed to a kernel as views into buffers with canaries on both sides."""

    def __init__(self):
        self.buffers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def __call__(self, a: np.ndarray) -> np.ndarray:
        a = np.asarray(a)
        flat = a.reshape(-1)
        fill = _canary(a.dtype)
        backing = np.empty(flat.size + 2 * CANARY, a.dtype)
        backing[:] = fill
        backing[CANARY:CANARY + flat.size] = flat
        view = backing[CANARY:CANARY + flat.size].reshape(a.shape)
        self.buffers.append((backing, view, view.copy()))
        return view

    def check(self, inside_too: bool) -> None:
        for backing, view, before in self.buffers:
            ref = np.full(CANARY, _canary(backing.dtype), backing.dtype).view(np.uint8)
            for side in (backing[:CANARY], backing[-CANARY:]):
                assert np.array_equal(np.ascontiguousarray(side).view(np.uint8), ref), \
                    "memory outside an array changed"
            if inside_too:
                np.testing.assert_array_equal(view, before, err_msg="an array changed although nothing ran")


def _canary(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return dtype.type(-12345.5)
    if dtype.kind == "b":
        return True
    return dtype.type(0x5B)


def _guard_all(value, guard: Guarded):
    if isinstance(value, np.ndarray):
        if not value.flags.c_contiguous and value.base is not None and value.base.flags.c_contiguous:
            # a strided view: guard its whole buffer, view it the same way
            start = value.__array_interface__["data"][0] - value.base.__array_interface__["data"][0]
            whole = guard(value.base).reshape(-1)
            return np.lib.stride_tricks.as_strided(whole[start // value.itemsize:], value.shape, value.strides)
        view = guard(value)
        view.flags.writeable = value.flags.writeable
        return view
    if hasattr(value, "array") and hasattr(value, "width"):      # cb.lines(...)
        return cb.lines(guard(value.array), value.width)
    return value


def available(name: str) -> bool:
    return any(d.backend_name == name and d.available for d in cb.devices())


def check(case: Bad, device: str) -> str:
    if not available(device):
        pytest.skip(f"no {device} device")
    guard = Guarded()
    kernel = case.kernel
    with pytest.raises(Exception) as info:
        if isinstance(kernel, cb.KernelFunction):
            args = [_guard_all(a, guard) for a in case.args()]
            dev = cb.device(device, **case.options.get("device", {}))
            kernel.launch(case.count, case.dim, *args, device=dev, **case.options.get("launch", {}))
            dev.synchronize()
        else:
            kernel(device, guard)
    err = info.value
    text = str(err)
    assert type(err) is case.error, f"{type(err).__name__} raised, {case.error.__name__} expected: {text}"
    name = case.kernel_name or getattr(kernel, "__name__", case.name)
    assert f"kernel '{name}'" in text, text
    for fragment in case.says:
        assert fragment in text, f"{fragment!r} is not in the message:\n{text}"
    if case.caret and isinstance(err, cb.CompileError):
        assert "\n  File " in text and "^" in text, f"no source line with a caret:\n{text}"
    guard.check(inside_too=not case.runs)
    return text
