"""``print(...)`` in kernels: what a print site is, and the record layout units write.

Kernels do not call a device printf. Each ``print`` becomes stores of its values into two hidden
global buffers the runtime adds to the launch, and the host formats the lines after the launch
with Python's own formatting, sorted by unit. Every device therefore prints the same text, in the
same order, with the same per-launch cap (docs/design.md, "print in kernels").

Buffers (hidden parameters after the kernel's own, in this order; ``floats`` only when a site
prints a float):

- ``counts``: i32[3]: words reserved, lines printed (every unit that reached a print counts,
  kept or not), the cap (lines kept per launch, set by the host).
- ``words``: i64[L]; ``floats``: f64[L], the same length. A line reserves ``HEADER + values``
  consecutive words with one atomic add; the header is ``site, cube_x, cube_y, cube_z, unit``
  in ``words``, and value ``j`` sits at word ``HEADER + j`` of ``words`` (integers and bools,
  widened to i64) or of ``floats`` (floats, widened to f64; both widenings are exact).

Only the first ``cap`` lines by arrival reserve words, so the buffers never overflow; which
lines those are when more are printed depends on the order units arrive, and the host says how
many were left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from .nodes import SourceLoc

HEADER = 5                       # site, cube_x, cube_y, cube_z, unit (linear in its cube)
CONVERSIONS = {"s": str, "r": repr, "a": ascii}     # an f-string's !s, !r, !a
NAMES = {"counts": "cubepy_print_counts", "words": "cubepy_print_words", "floats": "cubepy_print_floats"}


@dataclass(frozen=True)
class PrintValue:
    """One runtime value of a print: its dtype's name, Line width, and how Python formats it
    (``conversion`` as in an f-string: None, "s", "r" or "a"; ``spec`` after the colon)."""

    dtype: str
    width: int = 1
    conversion: str | None = None
    spec: str = ""
    is_float: bool = False


@dataclass(frozen=True)
class PrintSite:
    """One ``print`` call: text pieces and values in order (``str`` or `PrintValue`)."""

    pieces: tuple
    loc: SourceLoc | None = None

    @property
    def words(self) -> int:
        """Words one line of this site reserves."""
        return HEADER + sum(p.width for p in self.pieces if isinstance(p, PrintValue))
