"""Race report: per element, which unit wrote it and which (up to two) units read it.

Two different units writing one element, or one writing what another reads, with nothing to
order them, is a race. Global memory is tracked over the whole launch; shared memory per cube
between barriers (the executor calls ``reset`` at each ``sync_cube``). Atomics are not tracked.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Conflict(NamedTuple):
    addr: int
    first_unit: int
    first_op: int
    first_did: str       # "wrote" or "read"
    second_unit: int
    second_did: str      # by the op being executed


class Tracker:
    def __init__(self, size: int, unwritten_reads: bool = False):
        """``unwritten_reads``: a read of an element no unit has written is a conflict too
        (shared memory, which starts undefined: NaN on the interpreter, 0 or garbage elsewhere)."""
        self.unwritten_reads = unwritten_reads
        self.written = np.zeros(size, bool)
        self.writer = np.full(size, -1, np.int64)
        self.writer_op = np.full(size, -1, np.int64)
        self.readers = np.full((2, size), -1, np.int64)      # two distinct readers suffice
        self.reader_ops = np.full((2, size), -1, np.int64)

    def reset(self, copies: np.ndarray, per_copy: int) -> None:
        """Forget the accesses to the copies (cubes) marked in ``copies``."""
        for arr in (self.writer, self.writer_op, *self.readers, *self.reader_ops):
            arr.reshape(-1, per_copy)[copies] = -1

    def _against(self, owners, ops, addr, units, did, now) -> Conflict | None:
        bad = (owners >= 0) & (owners != units)
        if not bad.any():
            return None
        i = int(np.argmax(bad))
        return Conflict(int(addr[i]), int(owners[i]), int(ops[addr[i]]), did, int(units[i]), now)

    def _shared_elements(self, addr: np.ndarray) -> np.ndarray | None:
        """Per entry, how many entries before it hit the same element (None: all distinct)."""
        if len(addr) < 2 or np.bincount(addr, minlength=len(self.writer)).max() < 2:
            return None
        order = np.argsort(addr, kind="stable")
        a = addr[order]
        start = np.ones(len(a), bool)
        start[1:] = a[1:] != a[:-1]
        rank = np.empty(len(a), np.int64)
        rank[order] = np.arange(len(a)) - np.flatnonzero(start)[np.cumsum(start) - 1]
        return rank

    def write(self, addr: np.ndarray, units: np.ndarray, op: int) -> Conflict | None:
        rank = self._shared_elements(addr)
        if rank is not None:                                  # two units of this step, one element
            second = int(np.argmax(rank == 1))
            first = int(np.flatnonzero(addr == addr[second])[0])
            return Conflict(int(addr[second]), int(units[first]), op, "wrote", int(units[second]), "wrote")
        found = self._against(self.writer[addr], self.writer_op, addr, units, "wrote", "wrote")
        for r in (0, 1):
            readers = self.readers[r][addr]
            found = found or self._against(readers, self.reader_ops[r], addr, units, "read", "wrote")
        if found is None:
            self.writer[addr] = units
            self.writer_op[addr] = op
            self.written[addr] = True
        return found

    def read(self, addr: np.ndarray, units: np.ndarray, op: int) -> Conflict | None:
        if self.unwritten_reads:
            never = ~self.written[addr]
            if never.any():
                i = int(np.argmax(never))
                return Conflict(int(addr[i]), -1, -1, "never wrote", int(units[i]), "read")
        found = self._against(self.writer[addr], self.writer_op, addr, units, "wrote", "read")
        if found is not None:
            return found
        rank = self._shared_elements(addr)
        if rank is None:
            rank = np.zeros(len(addr), np.int64)
        for r in (0, 1):  # the first two readers of each element in this step are enough
            aa, uu = addr[rank == r], units[rank == r]
            r0 = self.readers[0][aa]
            put0 = r0 < 0
            put1 = ~put0 & (r0 != uu) & (self.readers[1][aa] < 0)
            for slot, put in ((0, put0), (1, put1)):
                self.readers[slot][aa[put]] = uu[put]
                self.reader_ops[slot][aa[put]] = op
        return None
