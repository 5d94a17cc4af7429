"""Host costs that checked mode's launch test and the launch forms add, on this machine's CPU.

    python benchmarks/cpu/host_costs.py

- ``kernel[count, dim]`` alone, per launch form (``timeit``, minimum of 5 rounds of 200,000);
- the generated warm path of ENERGY's energy1 (six arrays) and energy5 (twelve), checked and
  unchecked, through the recording backend of tests/runtime/test_warm_path.py: the CUDA backend's
  packer and slots without a GPU, its launch a no-op (minimum of 5 rounds of 20,000), so the
  difference is what the launch test's key and lookup cost a warm launch;
- a compile of saxpy for the interpreter as CUDA specializes it, with and without checks per
  launch (two traces each, static and shape-generic; median of 30), the trace index off.
Prints microseconds, then milliseconds.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import timeit
from pathlib import Path

os.environ.setdefault("CUBEPY_TRACE_INDEX", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests, benchmarks

import numpy as np  # noqa: E402

import cubepy as cb  # noqa: E402
import tests.runtime.test_warm_path as recording  # noqa: E402
from benchmarks.rajaperf.apps.energy import energy1, energy5  # noqa: E402
from tests.kernels import saxpy  # noqa: E402


def lookups() -> None:
    forms = {"k[16, 256]": "k[16, 256]", "k[(16,), (256,)]": "k[(16,), (256,)]",
             "k[cb.CubeCount(16), cb.CubeDim(256)]": "k[cb.CubeCount(16), cb.CubeDim(256)]",
             "k[(4, 2, 2), (32, 4, 2)]": "k[(4, 2, 2), (32, 4, 2)]",
             "cb.CubeCount(16), cb.CubeDim(256) alone": "cb.CubeCount(16); cb.CubeDim(256)"}
    print("kernel[...] alone, us")
    for label, stmt in forms.items():
        t = min(timeit.repeat(stmt, globals={"k": saxpy, "cb": cb}, number=200_000, repeat=5)) / 200_000
        print(f"  {label:42s} {t * 1e6:6.3f}")


def warm_paths() -> None:
    recording.decode = lambda rendered, address: ()         # the launch itself: nothing
    backend = recording.RecordingBackend()
    backend.calls = _Discard()
    dev = recording.Device("recording", {}, backend.probe(checks_per_launch=True), backend)
    n = 1_000_000
    arrays = [recording.FakeArray(0x10000000 * (k + 1), (n,), np.float64) for k in range(12)]
    print("generated warm path, recording backend, us")
    for kernel, args in ((energy1, tuple(arrays[:6])), (energy5, (*arrays, 1.0, 1e-7, -1e15))):
        for checked in (False, True):
            launcher = kernel[(n + 255) // 256, 256]
            launcher(*args, device=dev, checked=checked)
            t = min(timeit.repeat(lambda: launcher(*args, device=dev, checked=checked),
                                  number=20_000, repeat=5)) / 20_000
            print(f"  {kernel.__name__:8s} {'checked' if checked else 'unchecked':10s} {t * 1e6:6.2f}")


def compiles() -> None:
    x = np.ones(4096, np.float32)
    print("compile of saxpy for the interpreter as CUDA specializes it (two traces), ms")
    for per_launch in (False, True):
        dev = cb.device("interp", plane_dim=32, checks_per_cube=True, checks_per_launch=per_launch,
                        checks_per_run=True, inline_array_bytes=2048)
        times = []
        for _ in range(30):
            fresh = cb.kernel(saxpy.__wrapped__)            # a new kernel object: nothing cached
            start = time.perf_counter()
            fresh.compile(x, x.copy(), 2.0, dim=256, device=dev)
            times.append(time.perf_counter() - start)
        print(f"  checks per launch {'on ' if per_launch else 'off'}  {statistics.median(times) * 1e3:6.2f}")


class _Discard(list):
    def append(self, item) -> None:
        pass


if __name__ == "__main__":
    lookups()
    warm_paths()
    compiles()
