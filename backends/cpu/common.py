"""Constants, errors and the layout record shared by the CPU code generator's modules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cubepy.errors import CompileError

MAX_OOB_DIMS = 8
ERR_WORDS = 4 + 2 * MAX_OOB_DIMS          # flag, site, unit, cube, indices[8], extents[8]
RET = 1                                    # status of a unit that returned


def _code(depth: int, kind: int) -> int:
    """Status of a unit suspended by the cube-level construct at ``depth``:
    kind 0 break, 1 continue, 2 skipped (else side of a masked if), 3 done (then side)."""
    return 2 + 4 * depth + kind



class CpuCompileError(CompileError, NotImplementedError):
    """Something the CPU backend does not implement."""


@dataclass
class Layout:
    """What the host side needs to know about a compiled kernel."""

    entry: str
    ws_size: int
    slots: list = field(default_factory=list)       # argument slot kinds, in order
    oob_sites: list = field(default_factory=list)   # (array name, loc, ndim, unsigned per index)


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:48] or "kernel"

