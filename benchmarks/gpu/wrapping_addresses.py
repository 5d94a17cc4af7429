"""The suite with the C-style renderer's ``nowrap`` index arithmetic rendered as wrapping.

    python benchmarks/gpu/wrapping_addresses.py [the options of python -m benchmarks.rajaperf]

A checked kernel's fast side marks the index ops its test shows never overflow ``nowrap``, and the
C-style renderer (CUDA, HIP, OpenCL) keeps them signed, so the compiler may fold them into
addresses (`cubepy.backends.cstyle.arith`); the unchecked kernel computes them wrapping, in an
unsigned type. This runs the suite with ``nowrap`` ignored by the renderer, so a checked port's
proven build is rendered as its unchecked kernel is: run it beside the suite's own command (each
with its own ``CUBEPY_CACHE_DIR``: the disk cache keeps rendered code) and compare the ratios to
Base_CUDA. Only an experiment: the library is not changed by it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root

from cubepy.backends.cstyle.arith import Arithmetic  # noqa: E402

_operator = Arithmetic._operator


def _wrapping(self, code, dtype, a, b, nowrap):
    return _operator(self, code, dtype, a, b, False)


if __name__ == "__main__":
    Arithmetic._operator = _wrapping
    from benchmarks.rajaperf.command import main

    sys.exit(main(sys.argv[1:]))
