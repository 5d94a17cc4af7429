"""RAJAPerf's checksum (2025+ generation): ``sum_j mult(j, off_j) * |a_j|`` in long double,

    mult(j, off) = frac((j + off) / pi) + 0.5,   off = 1.0 if a_j >= 0 else 0.5

A kernel's checksum is the sum of its output arrays' checksums (each indexed from 0). RAJAPerf
adds the terms with a Kahan sum in ``long double``; here NumPy's pairwise sum in ``longdouble``
(80-bit on x86-64) adds the same long double products, which agrees with the Kahan sum to about
1e-18 relative: far below the 1e-10 tolerance RAJAPerf's own test between variants uses.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-10        # RAJAPerf's relative tolerance between a variant's checksum and the reference's


_TABLES: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _multiplier_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``mult(j, 1.0)`` and ``mult(j, 0.5)`` for j < n (kept for the last length asked for)."""
    found = _TABLES.get(n)
    if found is None:
        j = np.arange(n, dtype=np.float64)
        tables = []
        for off in (1.0, 0.5):
            q = (j + off) / np.pi
            tables.append((q - np.floor(q)) + 0.5)
        _TABLES.clear()
        found = _TABLES[n] = (tables[0], tables[1])
    return found


def multipliers(values: np.ndarray) -> np.ndarray:
    """``mult(j, off_j)`` per element, in double as the C++ computes it."""
    positive, negative = _multiplier_tables(values.size)
    return np.where(values >= 0, positive, negative)


def checksum(values) -> np.longdouble:
    """The checksum of one array (any NumPy-convertible array; it is read as float64)."""
    a = np.ascontiguousarray(np.asarray(values, dtype=np.float64).reshape(-1))
    terms = multipliers(a).astype(np.longdouble) * np.abs(a).astype(np.longdouble)
    return np.sum(terms, dtype=np.longdouble)


def kernel_checksum(arrays) -> np.longdouble:
    """The sum of the checksums of a kernel's output arrays, in order."""
    total = np.longdouble(0)
    for a in arrays:
        total += checksum(a)
    return total


def agrees(value, reference, tolerance: float = TOLERANCE) -> bool:
    """RAJAPerf's pass test: ``|value - reference| <= tolerance * |reference|``."""
    value, reference = np.longdouble(value), np.longdouble(reference)
    return bool(abs(value - reference) <= np.longdouble(tolerance) * abs(reference))


def show(value) -> str:
    """A checksum as RAJAPerf's long double, to 20 significant digits."""
    return np.format_float_positional(np.longdouble(value), precision=20, unique=False, fractional=False,
                                      trim="-")
