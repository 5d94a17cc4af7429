"""Where an autotuned launcher's call spends its host time beyond a plain launch, on the CPU device.

    python benchmarks/cpu/autotuned_call.py

Times (``timeit``, minimum of 7 rounds of 20,000 calls, microseconds) the whole autotuned call,
the plain ``saxpy[16, 256](...)`` launch it ends in, and parts of the difference: the argument
key, the user's grid function and ``kernel[count, dim]``.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

import numpy as np
from cubepy.autotune import autotune

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from tests.kernels import saxpy  # noqa: E402

CALLS, ROUNDS = 20_000, 7


def per_call_us(fn) -> float:
    return min(timeit.repeat(fn, number=CALLS, repeat=ROUNDS)) / CALLS * 1e6


def main() -> None:
    dev = cb.device("cpu")
    x, y = np.ones(4096, np.float32), np.ones(4096, np.float32)

    def grid(args, dim):
        return (len(args[0]) + dim[0] - 1) // dim[0]
    tuned = autotune(saxpy, grid, dims=[256], reps=2, rounds=1)
    tuned(x, y, 2.0, device=dev)
    args = (x, y, 2.0)
    rows = {
        "autotuned call: tuned(x, y, 2.0, device=dev)": lambda: tuned(x, y, 2.0, device=dev),
        "plain launch: saxpy[16, 256](x, y, 2.0, device=dev)": lambda: saxpy[16, 256](x, y, 2.0, device=dev),
        "argument key": lambda: tuned.key_of(args),
        "the grid function": lambda: grid(args, (256, 1, 1)),
        "saxpy[16, 256] (the launcher's look-up)": lambda: saxpy[16, 256],
    }
    print(f"device: {dev.properties.name}; us per call, minimum of {ROUNDS} rounds of {CALLS}")
    for label, fn in rows.items():
        print(f"  {label:62s} {per_call_us(fn):6.2f}")


if __name__ == "__main__":
    main()
