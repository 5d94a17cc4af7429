"""The suite with CUDA's ``nowrap`` index arithmetic rendered signed or wrapping.

    python benchmarks/gpu/nowrap_rendering.py {signed,wrapping} [the options of python -m benchmarks.rajaperf]

A checked kernel's fast side marks the index ops its test shows never overflow ``nowrap``; a C
dialect with ``signed_nowrap`` renders them as signed C arithmetic, which the compiler may fold
into addresses, and one without computes them wrapping, in an unsigned type, as the unchecked
kernel does (`cubepy.backends.cstyle.dialect`; CUDA wraps since the twenty-seventh session).
This runs the suite with CUDA's dialect set either way: run it twice, each with its own
``CUBEPY_CACHE_DIR`` (the disk cache keeps rendered code), and compare the ratios to Base_CUDA.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root

from cubepy.backends.cstyle.dialect import CUDA  # noqa: E402

if __name__ == "__main__":
    mode, *options = sys.argv[1:] or ["--help"]
    if mode not in ("signed", "wrapping"):
        raise SystemExit(__doc__)
    object.__setattr__(CUDA, "signed_nowrap", mode == "signed")     # the dialect is a frozen record
    from benchmarks.rajaperf.command import main

    sys.exit(main(options))
