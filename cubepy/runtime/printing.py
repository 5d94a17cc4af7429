"""The host side of ``print(...)`` in kernels: the hidden buffers of a launch, and its lines.

The record layout is in `cubepy.ir.prints`. After a launch of a kernel that prints, the lines
are formatted with Python's formatting (a value prints as the same Python or NumPy scalar would)
and written to ``sys.stdout`` sorted by cube, then unit, then program order; a launch keeps at
most ``CUBEPY_PRINT_LIMIT`` lines and says how many it left out.
"""

from __future__ import annotations

import re
import sys

import numpy as np

from ..ir.nodes import Buffer, Kernel
from ..ir.prints import CONVERSIONS, HEADER, NAMES, PrintSite, PrintValue

_ROLES = {name: role for role, name in NAMES.items()}
_PRECISION = re.compile(r"(?:.?[<>=^])?[+\- ]?z?#?0?\d*[,_]?(\.\d+)?[a-zA-Z%]?")
_NARROW_FLOATS = {"f16": np.float16, "f32": np.float32}


def hidden_roles(kernel: Kernel) -> list[str]:
    """The roles ("counts", "words", "floats") of the kernel's hidden print parameters, in order."""
    return [_ROLES[p.name] for p in kernel.params if isinstance(p, Buffer) and p.name in _ROLES]


def allocate(kernel: Kernel, limit: int) -> list[np.ndarray]:
    """Fresh hidden buffers for one launch keeping at most ``limit`` lines."""
    most = max(site.words for site in kernel.prints)
    length = max(1, limit * most)
    out = []
    for role in hidden_roles(kernel):
        if role == "counts":
            out.append(np.array([0, 0, limit], np.int32))
        else:
            out.append(np.empty(length, np.int64 if role == "words" else np.float64))
    return out


def write_lines(kernel: Kernel, kernel_name: str, buffers: list[np.ndarray], stream=None) -> None:
    """Format the lines the launch recorded in ``buffers`` and write them (default sys.stdout)."""
    stream = stream if stream is not None else sys.stdout
    by_role = dict(zip(hidden_roles(kernel), buffers))
    counts, words = by_role["counts"], by_role["words"]
    floats = by_role.get("floats")
    sites = kernel.prints
    reserved, printed, cap = (int(v) for v in counts)
    reserved = min(max(reserved, 0), len(words))
    records = []
    at = 0
    while at < reserved:
        site_id = int(words[at])
        if not 0 <= site_id < len(sites) or at + sites[site_id].words > len(words):
            break        # not a record: nothing after it was written whole
        records.append((int(words[at + 3]), int(words[at + 2]), int(words[at + 1]), int(words[at + 4]), at))
        at += sites[site_id].words
    records.sort()
    text = [_line(sites[int(words[at])], words, floats, at) for *_, at in records]
    if printed < 0:                      # the line counter wrapped around
        printed = 2**31
    left_out = printed - len(records)
    if left_out > 0:
        text.append(f"[cubepy] kernel '{kernel_name}': {left_out} more printed line{'s' if left_out != 1 else ''} "
                    f"of this launch {'are' if left_out != 1 else 'is'} not shown (at most {cap} per launch; "
                    "set CUBEPY_PRINT_LIMIT to keep more)\n")
    if text:
        stream.write("".join(text))


def _line(site: PrintSite, words: np.ndarray, floats: np.ndarray | None, at: int) -> str:
    out = []
    k = at + HEADER
    for piece in site.pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        lanes = [_scalar(piece, words, floats, k + j) for j in range(piece.width)]
        k += piece.width
        if piece.width == 1:
            out.append(_text(lanes[0], piece.conversion, piece.spec))
        elif piece.conversion is None:        # the spec applies to each lane
            out.append("[" + ", ".join(_text(v, None, piece.spec) for v in lanes) + "]")
        else:                                 # the spec applies to the converted list, as in Python
            listed = "[" + ", ".join(_text(v, piece.conversion, "") for v in lanes) + "]"
            out.append(format(listed, piece.spec))
    return "".join(out)


def _scalar(piece: PrintValue, words: np.ndarray, floats: np.ndarray | None, k: int):
    if piece.is_float:
        narrow = _NARROW_FLOATS.get(piece.dtype)
        return narrow(floats[k]) if narrow is not None else float(floats[k])
    value = int(words[k])
    if piece.dtype == "bool_":
        return bool(value)
    if piece.dtype == "u64" and value < 0:
        value += 2**64
    return value


def _text(value, conversion: str | None, spec: str) -> str:
    """``value`` as Python formats it in an f-string: a narrow float prints with its own shortest
    digits (``0.1``, not the f64 expansion of the f32 value) unless the spec gives a precision."""
    if isinstance(value, np.floating):
        match = _PRECISION.fullmatch(spec)
        value = float(value) if match and match.group(1) else float(str(value))
    if conversion is not None:
        value = CONVERSIONS[conversion](value)
    return format(value, spec)
