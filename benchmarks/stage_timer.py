"""Timing the stages of a compile by wrapping the functions that run them (benchmarks only)."""

from __future__ import annotations

import time


def time_calls(stages: dict[str, float], owner, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper that adds the seconds of each call to ``stages[label]``."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            stages[label] = stages.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)
