"""Peers: the same kernels written without cubepy, run in the same process on the same arrays.

CPU: numba ``@njit(parallel=True)`` and C with OpenMP. GPU: hand-written Base_CUDA-style CUDA
(CuPy ``RawModule``), numba-cuda and Triton. Each peer is a `Peer`; one whose library or compiler is
missing says why in ``unavailable()`` and is left out of the run.
"""

from __future__ import annotations

from collections.abc import Callable


class Peer:
    """A way to run the suite's kernels outside cubepy. ``bind`` returns a callable running one rep
    (all of the kernel's launches) on ``arrays``: NumPy arrays for CPU peers, CuPy arrays for GPU
    peers."""

    name = ""
    platform = "cpu"              # "cpu" or "cuda": the kind of device whose arrays it takes
    rtol = 1e-12                  # compilers may contract to FMA: not bit-identical to NumPy

    def unavailable(self) -> str | None:
        """Why this peer cannot run here, or None."""
        return None

    def bind(self, app: str, problem, arrays: dict) -> Callable[[], None]:
        raise NotImplementedError


def cpu_peers() -> list[Peer]:
    from .numba_cpu import NumbaParallel
    from .openmp import OpenMP
    return [NumbaParallel(), OpenMP()]


def gpu_peers() -> list[Peer]:
    from .base_cuda import BaseCuda, BaseCudaRestrict, BaseCudaStrict
    from .numba_cuda import NumbaCuda
    from .triton_peers import Triton
    return [BaseCuda(), BaseCudaStrict(), BaseCudaRestrict(), NumbaCuda(), Triton()]
