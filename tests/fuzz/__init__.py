"""The differential fuzzer: random valid kernels, run on every device and compared with the
interpreter (and, for straight-line kernels, with an independent NumPy model).

    python -m tests.fuzz --devices cpu,opencl --minutes 5 --workers 2
    python -m tests.fuzz --devices cuda --minutes 6 --workers 12     # on a GPU machine
    python -m tests.fuzz --replay 1234 --devices cpu                 # one seed, shrunk and printed

``generate`` makes programs, ``run`` launches and compares, ``model`` is the NumPy model,
``shrink`` minimizes a failing program, ``campaign`` runs many in worker processes.
"""
