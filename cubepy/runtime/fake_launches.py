"""Launches skipped while a framework runs code on fake tensors to learn output shapes.

``cubepy.torch.op`` derives an op's fake implementation by running its body under
`skip_launches`: the body allocates its outputs (which is all a fake implementation must do),
and its cubepy launches, which would need real data, do nothing. Only the thread (or task) that
entered the block skips; `SKIPPING` is non-empty meanwhile, so warm paths need one test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

SKIPPING: list[int] = []        # one entry per active skip_launches block, of any thread
_here: ContextVar[int] = ContextVar("cubepy_skip_launches", default=0)


@contextmanager
def skip_launches() -> Iterator[None]:
    """Launches (kernels, compiled kernels, tuned kernels) in this block return at once."""
    token = _here.set(_here.get() + 1)
    SKIPPING.append(1)
    try:
        yield
    finally:
        SKIPPING.pop()
        _here.reset(token)


def skipped() -> bool:
    """Whether a launch here is skipped (cheap when no block is active anywhere)."""
    return bool(SKIPPING) and _here.get() > 0
