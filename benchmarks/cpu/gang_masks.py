"""A gang's loads in a grid-stride loop on the CPU: masked loads everywhere against plain vector
loads where every lane is active, in AVX-512 and in AVX2 code.

    python benchmarks/cpu/gang_masks.py [--reps 15]

The kernel is the benchmarks' grid-stride sum (`tests.kernels.reduce_sum`, 128 cubes of 256
units), whose loop runs as a gang with its loads masked by the lanes still looping. Both builds
come from the same source, compiled with `jit.masks_memory` answering True (every access masked)
and False (plain vectors where the mask is full); the backend's own choice is the first in
AVX-512 code and the second in AVX2 code (`backends/cpu/DESIGN.md`, "Gangs"). Over 2^25 f32
(DRAM) and 2^18 (cache); each result checked against NumPy; medians of interleaved rounds.
"""

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root
# the two builds share a source: a trace restored from the disk cache would give both one build
os.environ["CUBEPY_TRACE_INDEX"] = "0"

import numpy as np  # noqa: E402

import cubepy as cb  # noqa: E402
from benchmarks.cpu.bench_cpu import interleaved  # noqa: E402
from cubepy import Array, Mut, f32, i32  # noqa: E402

CUBES, DIM = 128, 256


def grid_stride_sum():
    """A new kernel object (its own compiled builds) of `tests.kernels.reduce_sum`."""
    @cb.kernel(checked=False)
    def reduce_sum(x: Array[f32], out: Mut[Array[f32]], stride: i32):
        sm = cb.SharedMemory(f32, 256)
        t = cb.UNIT_POS_X
        acc = f32(0.0)
        for j in range(cb.ABSOLUTE_POS, len(x), stride):
            acc += x[j]
        sm[t] = acc
        cb.sync_cube()
        if t == 0:
            s = f32(0.0)
            for k in range(256):
                s += sm[k]
            out[cb.CUBE_POS_X] = s
    return reduce_sum


def build(kernel, masked: bool, args, dev) -> None:
    """Compile ``kernel`` for ``args`` with every gang access masked (True) or plain where full."""
    from cubepy.backends.cpu import jit

    chosen = jit.masks_memory
    jit.masks_memory = lambda isa=None: masked
    try:
        kernel[CUBES, DIM](*args, device=dev)
    finally:
        jit.masks_memory = chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    opts = parser.parse_args()
    from cubepy.backends.cpu import jit
    from cubepy.bench.machine import cpu_model, simd_width_bits

    print(f"cpu: {cpu_model()} ({simd_width_bits()}-bit SIMD, {os.cpu_count()} cores)")
    rng = np.random.default_rng(0)
    isas = ["native", "avx2"] if jit.host_has("avx512f") else ["avx2"]
    for isa in isas:
        dev = cb.device("cpu", isa=isa)
        for log_n in (25, 18):
            x = rng.random(1 << log_n, dtype=np.float32)
            part = np.zeros(CUBES, np.float32)
            args = (x, part, CUBES * DIM)
            masked, plain = grid_stride_sum(), grid_stride_sum()
            build(masked, True, args, dev)
            build(plain, False, args, dev)
            assert "ga_full" in plain.source(*args, device=dev, dim=DIM, form="source")
            assert "ga_full" not in masked.source(*args, device=dev, dim=DIM, form="source")
            for k in (masked, plain):
                part.fill(np.nan)
                k[CUBES, DIM](*args, device=dev)
                assert abs(part.sum(dtype=np.float64) - x.sum(dtype=np.float64)) < 1e-3 * x.size
            t = interleaved({"masked": lambda: masked[CUBES, DIM](*args, device=dev),
                             "plain": lambda: plain[CUBES, DIM](*args, device=dev)}, opts.reps)
            print(f"{dev.properties.name}: 2^{log_n} f32: masked {t['masked'] * 1e3:7.3f} ms, plain where full "
                  f"{t['plain'] * 1e3:7.3f} ms, masked / plain {1 / t[('plain', 'ratio')]:.2f}", flush=True)


if __name__ == "__main__":
    main()
