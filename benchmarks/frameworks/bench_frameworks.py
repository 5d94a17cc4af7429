"""Framework adapters: what a cubepy launch costs from PyTorch and JAX, next to the framework's own op.

    python benchmarks/frameworks/bench_frameworks.py [--device cpu|cuda] [--out results.json]

Rows (host time per call, median of interleaved rounds):
- torch: a warm launch on tensors vs the same launch on NumPy arrays (CPU) or CuPy arrays (CUDA);
  a cubepy.torch.op call; a torch.compile'd function around the op (one graph node) and around a
  plain launch (one graph break), next to the same function in plain torch;
- JAX, per call under jax.jit at several sizes: jax_kernel through the FFI and through
  pure_callback, next to the jnp op of the same size (x * factor).
"""


import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: tests.kernels
from tests.kernels import scale  # noqa: E402

ROUNDS, CALLS = 15, 200


def per_call_us(fns, sync=lambda: None):
    """Median over interleaved rounds of CALLS calls each, in microseconds per call."""
    samples = {name: [] for name in fns}
    for fn in fns.values():
        for _ in range(20):
            fn()
    sync()
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(CALLS):
                fn()
            sync()
            samples[name].append((time.perf_counter() - start) / CALLS * 1e6)
    return {name: statistics.median(s) for name, s in samples.items()}


def torch_rows(where):
    import torch

    import cubepy.torch

    dev = cb.device(where)
    n = 4096
    cubes = (n + 255) // 256

    @cubepy.torch.op("cubepy_bench::scale", mutates_args=())
    def scale_op(x: torch.Tensor, factor: float) -> torch.Tensor:
        out = torch.empty_like(x)
        scale[cubes, 256](x, out, factor)
        return out

    def plain_launch(x):
        out = torch.empty_like(x)
        scale[cubes, 256](x, out, 2.0)
        return out + 1

    x = torch.ones(n, device=where)
    out = torch.empty_like(x)
    launcher = scale[cubes, 256]
    if where == "cpu":
        xs, outs = np.ones(n, np.float32), np.empty(n, np.float32)
        peer = ("NumPy arrays", lambda: launcher(xs, outs, 2.0, device=dev))
        sync = lambda: None  # noqa: E731
    else:
        import cupy as cp
        xs, outs = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
        peer = ("CuPy arrays", lambda: launcher(xs, outs, 2.0, device=dev))
        sync = torch.cuda.synchronize
    with cb.use_device(dev):
        op_compiled = torch.compile(lambda v: scale_op(v, 2.0) + 1, fullgraph=True)
        break_compiled = torch.compile(plain_launch)
        plain_torch = torch.compile(lambda v: v * 2.0 + 1)
        times = per_call_us({
            "launch on tensors": lambda: launcher(x, out, 2.0, device=dev),
            f"launch on {peer[0]}": peer[1],
            "cubepy.torch.op, eager": lambda: scale_op(x, 2.0),
            "torch.compile(op + 1)": lambda: op_compiled(x),
            "torch.compile(launch + 1), a graph break": lambda: break_compiled(x),
            "torch.compile(x * 2 + 1), plain torch": lambda: plain_torch(x),
        }, sync)
    base = times[f"launch on {peer[0]}"]
    return [{"group": f"torch ({where}, {n} f32)", "row": k, "us": v, "ratio": v / base if "launch on" in k else None}
            for k, v in times.items()]


def jax_rows():
    import jax
    import jax.numpy as jnp

    import cubepy.jax

    rows = []
    for n in (1 << 10, 1 << 16, 1 << 20):
        x = jnp.ones(n, jnp.float32)
        fns = {}
        for method in ("ffi", "callback"):
            f = cubepy.jax.jax_kernel(scale, outputs=("out",), count=lambda s: (s[0] + 255) // 256, dim=256,
                                      method=method)
            g = jax.jit(lambda v, f=f: f(v, 2.0))
            g(x).block_until_ready()
            fns[f"jax_kernel, {method}"] = lambda g=g: g(x)
        peer = jax.jit(lambda v: v * 2.0)
        fns["jnp: x * 2"] = lambda: peer(x)
        last = {}

        def sync():
            for v in last.values():
                v.block_until_ready()
        wrapped = {k: (lambda k=k, fn=fn: last.__setitem__(k, fn())) for k, fn in fns.items()}
        times = per_call_us(wrapped, sync)
        for k, v in times.items():
            rows.append({"group": f"jax.jit ({jax.devices()[0].platform}, {n} f32)", "row": k, "us": v,
                         "ratio": v / times["jnp: x * 2"]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = []
    try:
        rows += torch_rows(args.device)
    except ImportError as e:
        print(f"torch rows skipped: {e}")
    try:
        rows += jax_rows()
    except ImportError as e:
        print(f"JAX rows skipped: {e}")
    print(f"machine: {platform.processor() or platform.machine()}, device {cb.device(args.device).properties.name}")
    group = None
    for r in rows:
        if r["group"] != group:
            group = r["group"]
            print(f"\n{group}")
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else ""
        print(f"  {r['row']:45s} {r['us']:10.1f} us  {ratio}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
