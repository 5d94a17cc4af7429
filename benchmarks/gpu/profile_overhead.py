"""The Python a profiled CUDA launch adds, without a GPU: cubepy's profile bookkeeping per launch
against a stand-in for CuPy whose runtime calls do nothing.

    python benchmarks/gpu/profile_overhead.py [--launches 20000] [--rounds 7]

Per launch: the backend's interval (a pooled start event, recorded on the launch's stream), its
stop, `record_launch`, and the profile's reads every 64 launches (done query, elapsed time, the
handles back to the pool); median over rounds, us. What CUDA's own calls cost on top needs a GPU
(`benchmarks/gpu/profile_cost.py`).
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import SimpleNamespace

from cubepy.backends import cuda as cuda_backend

from cubepy.runtime import profiling


class StandInRuntime:
    """cupy.cuda.runtime's event calls, doing nothing."""

    class CUDARuntimeError(Exception):
        status = 0

    def __init__(self):
        self.created = 0

    def eventCreate(self) -> int:
        self.created += 1
        return self.created

    def eventRecord(self, handle: int, stream: int) -> None:
        pass

    def eventQuery(self, handle: int) -> int:
        return 0

    def eventElapsedTime(self, start: int, stop: int) -> float:
        return 0.1

    def eventDestroy(self, handle: int) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    stream = SimpleNamespace(ptr=5)
    stand_in = SimpleNamespace(cuda=SimpleNamespace(runtime=StandInRuntime(), get_current_stream=lambda: stream))
    cuda_backend._cupy = lambda: stand_in
    backend = cuda_backend.CudaBackend()
    backend._devices = {"gpu": 0}

    def launch() -> None:
        interval = backend.interval("gpu")
        interval.stop()
        profiling.record_launch("k", interval)

    samples = []
    with profiling.profile():
        for _ in range(args.rounds):
            began = time.perf_counter()
            for _ in range(args.launches):
                launch()
            samples.append((time.perf_counter() - began) / args.launches * 1e6)
    print(f"profile bookkeeping per launch (stand-in runtime): {statistics.median(samples):.2f} us")


if __name__ == "__main__":
    main()
