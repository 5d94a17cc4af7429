"""Whether the adapter's subgroups are cubepy's planes, found by running probe kernels; and the IR
rewrite that plane ops emulated through workgroup memory need.

Subgroups are planes for a cube shape when every subgroup is a run of ``plane_dim`` consecutive
units in the linear order. lavapipe's are, for cubes whose x extent is a multiple of its SIMD
width; a (7, 3) cube's rows start new subgroups, so there plane ops are emulated.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from cubepy.ir.nodes import PLANE_OPS, Kernel, Op, copied, walk

from .probe import run_once

_PROBE = """@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@compute @workgroup_size({dims})
fn probe(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) n: u32,
         @builtin(subgroup_invocation_id) l: u32) {{
  x[3u * i] = n;
  x[3u * i + 1u] = l;
  x[3u * i + 2u] = subgroupShuffle(i, 0u);
}}"""


def _run_probe(state, dims: tuple[int, int, int]) -> np.ndarray | None:
    """(size, lane, first unit of the subgroup) per unit of one cube, or None if it fails."""
    units = int(np.prod(dims))
    try:
        return run_once(state, _PROBE.format(dims=", ".join(map(str, dims))), [], 3 * units).reshape(units, 3)
    except Exception:       # an adapter that lists subgroups but cannot build or run them
        return None


def subgroup_size(state) -> int | None:
    """The subgroup size of a 256-unit cube, if its subgroups are runs of consecutive units of
    one power-of-two size up to 64; else None."""
    got = _run_probe(state, (256, 1, 1))
    if got is None:
        return None
    size = int(got[0, 0])
    if not (1 <= size <= 64 and size & (size - 1) == 0):
        return None
    return size if planes_match(got, size) else None


def planes_match(got: np.ndarray, size: int) -> bool:
    lin = np.arange(len(got), dtype=np.uint32)
    return bool(np.all(got[:, 0] == size) and np.array_equal(got[:, 1], lin % size)
                and np.array_equal(got[:, 2], lin - lin % size))


def subgroups_are_planes(state, dims: tuple[int, int, int], size: int) -> bool:
    return _cached(state, tuple(int(d) for d in dims), size)


@lru_cache(maxsize=256)
def _cached(state, dims: tuple[int, int, int], size: int) -> bool:
    got = _run_probe(state, dims)
    return got is not None and planes_match(got, size)


def uses_planes(kernel: Kernel) -> bool:
    return any(op.opcode in PLANE_OPS and op.opcode != "plane_elect" for op in walk(kernel.body))


def barriers_hoisted(kernel: Kernel) -> Kernel:
    """A copy of ``kernel`` whose barriers (``sync_cube`` and the plane ops, emulated between
    workgroup barriers) are out of conditionals (`cubepy.ir.hoist`), so every unit of the cube
    reaches each of them, as WGSL requires of ``workgroupBarrier``: the backend's own stages of the
    compile pipeline (`cubepy.ir.pipeline`), as on OpenCL."""
    from cubepy.ir.hoist import check_barriers, hoist_barriers
    from cubepy.ir.pipeline import Pipeline, Stage
    from cubepy.ir.verify import verify

    def is_barrier(op: Op) -> bool:
        return op.opcode == "sync_cube" or (op.opcode in PLANE_OPS and op.opcode != "plane_elect")
    if not any(is_barrier(op) for op in walk(kernel.body)):
        return kernel
    why = ("this WebGPU device's subgroups are not planes for this cube shape or plane size, so plane ops run "
           "through workgroup memory between workgroup barriers")
    stages = Pipeline([
        Stage("hoist_barriers", lambda k, o: hoist_barriers(k, is_barrier), "transform"),
        Stage("check_barriers", lambda k, o: check_barriers(
            k, lambda op: op.opcode != "sync_cube" and is_barrier(op), why), "check"),
        Stage("verify_hoisted", lambda k, o: verify(k), "check"),
    ])
    return stages.run(copied(kernel))


__all__ = ["barriers_hoisted", "planes_match", "subgroup_size", "subgroups_are_planes", "uses_planes"]
