"""The seven RAJAPerf "apps" kernels of the rustc offload paper as cubepy's benchmark suite.

Installed as ``cubepy.bench`` (pyproject maps this folder), so ``cubepy bench`` works from an
installed package; ``python -m benchmarks.rajaperf`` runs it from a checkout. Layout:

- ``glibc_rand``, ``setup_data``, ``checksum``: RAJAPerf's data set-up and checksum, reproduced;
- ``apps/``: one module per kernel (set-up, NumPy reference, plain and tuned cubepy ports);
- ``peers/``: the same kernels in numba, C/OpenMP, hand-written CUDA, numba-cuda and Triton;
- ``runner``, ``timing``, ``memory``: checks and interleaved timing of every contender;
- ``transfer``: the data-movement study on ENERGY's six kernels;
- ``suite``, ``command``, ``report``, ``progress``, ``machine``: the command line and its output.
"""
