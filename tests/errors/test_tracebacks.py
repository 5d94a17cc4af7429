"""Compile and launch errors show the user's frames and at most two of cubepy's (its entry
points); ``CUBEPY_TRACEBACK=full`` keeps every internal frame."""

from __future__ import annotations

import math
import os
import traceback

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32

CUBEPY = os.path.dirname(cb.__file__)
BACKENDS = os.path.dirname(cb.backends.__file__)


@cb.kernel
def uses_math(x: Array[f32], y: Mut[Array[f32]]):
    y[0] = math.sqrt(x[0])


@cb.kernel
def plain(x: Array[f32], y: Mut[Array[f32]]):
    y[0] = x[0]


def _cubepy_frames(err: BaseException) -> int:
    return sum(f.filename.startswith((CUBEPY, BACKENDS)) for f in traceback.extract_tb(err.__traceback__))


def _compile_error():
    uses_math[1, 1](np.ones(1, np.float32), np.ones(1, np.float32), device="interp")


LAUNCHES = {
    "compile error, k[...](...)": (_compile_error, cb.CubeTypeError),
    "compile error, k.launch": (lambda: uses_math.launch(1, 1, np.ones(1, np.float32), np.ones(1, np.float32),
                                                         device="interp"), cb.CubeTypeError),
    "compile error, k.compile": (lambda: uses_math.compile(np.ones(1, np.float32), np.ones(1, np.float32), dim=1,
                                                           device="interp"), cb.CubeTypeError),
    "launch error, wrong dtype": (lambda: plain[1, 1](np.ones(1), np.ones(1, np.float32), device="interp"),
                                  cb.ArgumentTypeError),
}


@pytest.mark.parametrize("case", LAUNCHES)
def test_an_error_shows_at_most_two_cubepy_frames(case, monkeypatch):
    monkeypatch.delenv("CUBEPY_TRACEBACK", raising=False)
    launch, kind = LAUNCHES[case]
    with pytest.raises(kind) as info:
        launch()
    assert 1 <= _cubepy_frames(info.value) <= 2, traceback.format_tb(info.value.__traceback__)
    assert "test_tracebacks.py" in str(info.value)          # the message still names the user's line


def test_cubepy_traceback_full_keeps_the_internal_frames(monkeypatch):
    monkeypatch.setenv("CUBEPY_TRACEBACK", "full")
    with pytest.raises(cb.CubeTypeError) as info:
        _compile_error()
    assert _cubepy_frames(info.value) > 4
