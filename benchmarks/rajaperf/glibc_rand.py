"""glibc's ``rand()`` (``random_r`` with the default TYPE_3 state), reimplemented.

RAJAPerf draws its random data with ``srand(4793)`` and ``rand() / RAND_MAX``, so its checksums
depend on glibc's generator. TYPE_3 is an additive lagged Fibonacci generator over 31 words:

    r[0]      = seed
    r[i]      = 16807 * r[i-1] mod (2^31 - 1)          for i in 1..30 (Schrage's method, signed)
    r[i]      = r[i-31]                                for i in 31..33
    r[i]      = r[i-31] + r[i-3] mod 2^32              for i >= 34
    output k  = r[k + 344] >> 1                        (the first 310 results are discarded)

`GlibcRandom` steps it one value at a time, exactly as ``random_r`` does; `rand_values` makes
many values at once with NumPy (independent streams started by jumping the 31-word state) and
gives the same sequence.
"""

from __future__ import annotations

import numpy as np

RAND_MAX = 2147483647
_DEG, _SEP, _DISCARD = 31, 3, 310
_MASK = 0xFFFFFFFF


def _seed_table(seed: int) -> list[int]:
    """The 31 words ``srandom_r`` writes before discarding 310 results."""
    seed = seed or 1
    words = [seed & _MASK]
    word = seed if seed < 2**31 else seed - 2**32     # glibc keeps the state as int32_t
    for _ in range(1, _DEG):
        hi, lo = int(word / 127773), int(np.fmod(word, 127773))  # C division truncates toward zero
        word = 16807 * lo - 2836 * hi
        if word < 0:
            word += RAND_MAX
        words.append(word & _MASK)
    return words


class GlibcRandom:
    """``srand(seed)`` then ``rand()``, value by value, as glibc's ``random_r`` computes them."""

    def __init__(self, seed: int):
        self.state = _seed_table(seed)
        self.front, self.rear = _SEP, 0
        for _ in range(_DISCARD):
            self.rand()

    def rand(self) -> int:
        """The next value in [0, RAND_MAX]."""
        s = self.state
        s[self.front] = (s[self.front] + s[self.rear]) & _MASK
        result = s[self.front] >> 1
        self.front = (self.front + 1) % _DEG
        self.rear = (self.rear + 1) % _DEG
        return result


def _sequence_start(seed: int) -> np.ndarray:
    """r[0..30] of the recurrence in the module docstring."""
    return np.array(_seed_table(seed), dtype=np.uint64)


def _jump_matrix(steps: int) -> np.ndarray:
    """The 31x31 matrix (mod 2^32) that advances the window (r[n], ..., r[n+30]) by ``steps``."""
    step = np.zeros((_DEG, _DEG), dtype=np.uint64)
    for row in range(_DEG - 1):
        step[row, row + 1] = 1
    step[_DEG - 1, 0] = step[_DEG - 1, _DEG - _SEP] = 1       # r[n+31] = r[n] + r[n+28]
    result = np.eye(_DEG, dtype=np.uint64)
    while steps:
        if steps & 1:
            result = (result @ step) & _MASK
        step = (step @ step) & _MASK
        steps >>= 1
    return result


def _window_after(seed: int, start: int) -> np.ndarray:
    """(r[start], ..., r[start+30]) for start >= 34 - 31 = 3, where the additive rule holds."""
    head = [int(v) for v in _sequence_start(seed)]
    for i in range(_DEG, _DEG + _SEP):
        head.append(head[i - _DEG])
    window = np.array(head[_SEP:_SEP + _DEG], dtype=np.uint64)   # r[3..33]: r[34..] follow additively
    return (_jump_matrix(start - _SEP) @ window) & _MASK


def rand_values(count: int, seed: int = 4793) -> np.ndarray:
    """The first ``count`` results of ``rand()`` after ``srand(seed)``, as int64."""
    first = _DISCARD + 34                        # output k is r[k + 344]
    if count <= 4096:
        gen = GlibcRandom(seed)
        return np.array([gen.rand() for _ in range(count)], dtype=np.int64)
    streams = max(1, int(np.sqrt(count / 3)))
    length = -(-count // streams)
    jump = _jump_matrix(length)
    starts = np.empty((streams, _DEG), dtype=np.uint64)
    starts[0] = _window_after(seed, first - _DEG)       # r[first-31 .. first-1]
    for s in range(1, streams):
        starts[s] = (jump @ starts[s - 1]) & _MASK
    buf = np.empty((length + _DEG, streams), dtype=np.uint32)
    buf[:_DEG] = starts.T.astype(np.uint32)
    for t in range(_DEG, length + _DEG, _SEP):
        stop = min(t + _SEP, length + _DEG)
        buf[t:stop] = buf[t - _DEG:stop - _DEG] + buf[t - _SEP:stop - _SEP]
    values = (buf[_DEG:].T.reshape(-1)[:count] >> 1).astype(np.int64)
    return values
