"""``python -m benchmarks.rajaperf [options]`` (or ``cubepy bench``): run the RAJAPerf apps suite."""

import sys

from .command import main

sys.exit(main())
