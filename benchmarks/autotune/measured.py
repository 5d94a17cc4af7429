"""Exhaustively measured tuning landscapes kept in ``tables/``, for replaying search strategies.

Each file holds `kernels.polyval`'s 1,200 configs timed by ``bench_autotune --parts real`` on one
device (the command, device and date are in the file), as a list in the order of the space's
configs on a device of 1024 units per cube.
"""

from __future__ import annotations

import json
from pathlib import Path

from cubepy.autotune import Config, Space

from .kernels import polyval_space
from .synthetic import GPU_LIKE

TABLES = Path(__file__).with_name("tables")


def names() -> list[str]:
    return sorted(p.stem for p in TABLES.glob("*.json"))


def load(name: str) -> tuple[Space, dict[Config, float]]:
    """The space and its measured milliseconds per config."""
    data = json.loads((TABLES / f"{name}.json").read_text())
    space = Space(GPU_LIKE, **polyval_space(GPU_LIKE), kernel_name="polyval")
    if len(data["times_ms"]) != len(space):
        raise ValueError(f"table {name}: {len(data['times_ms'])} times for a space of {len(space)} configs")
    return space, dict(zip(space.configs, data["times_ms"]))
