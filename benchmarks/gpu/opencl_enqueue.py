"""What one OpenCL launch costs in pyopencl's calls, the pieces cubepy's OpenCL launch is made of.

    python benchmarks/gpu/opencl_enqueue.py [--rounds 21] [--calls 2000]

On the first OpenCL device (PoCL's CPU device in CI, NVIDIA's driver on the GPU machine), for a
six-argument kernel: ``set_args`` where pyopencl finds each argument's type itself and where the
scalar types were set once (``set_scalar_arg_dtypes``, what the backend does), the same with each
buffer made again from its handle (``Buffer.from_int_ptr``, what the direct warm path did until the
thirty-first session), and the enqueue of one 1024-unit range given as 1-D and as 3-D (the backend
passes the launch's 3-D ranges). Median over rounds of ``calls`` calls, the variants of a round
taking turns, the queue finished after each round.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

SOURCE = """__kernel void k(__global const float* x, int nx, __global float* y, int ny, float a, int ok) {
  int i = get_global_id(0); if (ok && i < ny && i < nx) y[i] = a * x[i] + y[i]; }"""


def main() -> None:
    import pyopencl as cl

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    program = cl.Program(ctx, SOURCE).build()
    untyped, typed = cl.Kernel(program, "k"), cl.Kernel(program, "k")
    typed.set_scalar_arg_dtypes([None, np.int32, None, np.int32, np.float32, np.int32])
    x = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    numpy_args = (x, np.int32(1024), y, np.int32(1024), np.float32(2.0), np.int32(1))
    plain_args = (x, 1024, y, 1024, 2.0, 1)
    untyped.set_args(*numpy_args)
    typed.set_args(*plain_args)
    from_handle, xh, yh = cl.Buffer.from_int_ptr, x.int_ptr, y.int_ptr
    variants = {
        "set_args, types found per call": lambda: untyped.set_args(*numpy_args),
        "set_args, scalar types set once": lambda: typed.set_args(*plain_args),
        "the same, buffers from handles": lambda: typed.set_args(from_handle(xh, retain=True), 1024,
                                                                 from_handle(yh, retain=True), 1024, 2.0, 1),
        "enqueue 1024 units as 1-D": lambda: cl.enqueue_nd_range_kernel(queue, typed, (1024,), (256,)),
        "enqueue 1024 units as 3-D": lambda: cl.enqueue_nd_range_kernel(queue, typed, (1024, 1, 1), (256, 1, 1)),
    }
    samples = {name: [] for name in variants}
    for round_ in range(args.rounds):
        names = list(variants)
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            call = variants[name]
            start = time.perf_counter()
            for _ in range(args.calls):
                call()
            samples[name].append((time.perf_counter() - start) / args.calls * 1e6)
            queue.finish()
    print(f"device: {queue.device.name.strip()} ({queue.device.platform.name.strip()}); median of "
          f"{args.rounds} rounds of {args.calls} calls")
    for name, values in samples.items():
        print(f"  {name:34s} {statistics.median(values):8.2f} us")


if __name__ == "__main__":
    main()
