"""Host-side pieces every C-style GPU backend shares.

The error record: a checked kernel with ``report_oob`` sites gets one int32 array of
`ERROR_WORDS` words per compiled specialization (layout in `rendered`), zeroed once. The first
out-of-bounds access of a launch claims word 0 with a compare-and-swap and fills in the rest; the
backend reads the record only when it synchronizes anyway (or at ``synchronize()``), never with
an extra sync per launch, and raises the OutOfBoundsError the interpreter would have raised.
"""

from __future__ import annotations

import numpy as np

from cubepy.errors import OutOfBoundsError, out_of_bounds

from .rendered import ERROR_WORDS, EXTENT_WORDS, INDEX_WORDS, OOBSite


def oob_error(record: np.ndarray, sites: list[OOBSite], kernel_name: str) -> OutOfBoundsError | None:
    """The OutOfBoundsError a read-back error record describes, or None if its flag is clear."""
    record = np.asarray(record).reshape(-1)
    if len(record) < ERROR_WORDS or int(record[0]) == 0:
        return None
    site = sites[int(record[1])] if 0 <= int(record[1]) < len(sites) else OOBSite("?", 1, None)
    unit = tuple(int(v) for v in record[2:5])
    cube = tuple(int(v) for v in record[5:8])
    at = []
    for j in range(site.ndim):
        low, high = int(record[INDEX_WORDS + 2 * j]) % 2**32, int(record[INDEX_WORDS + 2 * j + 1])
        value = (high << 32) | low
        at.append(value % 2**64 if j < len(site.unsigned) and site.unsigned[j] else value)
    shape = tuple(int(v) for v in record[EXTENT_WORDS:EXTENT_WORDS + site.ndim])
    return out_of_bounds(kernel_name, site.array, at, shape, unit, cube, site.loc)


def empty_record() -> np.ndarray:
    return np.zeros(ERROR_WORDS, np.int32)
