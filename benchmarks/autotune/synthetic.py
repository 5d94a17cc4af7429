"""A deterministic synthetic cost model over a large tuning space, shaped like a GPU kernel's:
occupancy by units per cube, coalescing by the x extent, work per unit (elements x Line width)
with a sweet spot, unrolling that helps up to the loop's length, register spills when a unit
holds too much, fastmath that pays only in long loops, and +-3% hash noise so that many
configs are nearly tied. The optimum is known by enumeration; the model times nothing.
"""

from __future__ import annotations

import hashlib
import math

from cubepy.autotune import Config, Space, shapes

from cubepy.runtime.properties import DeviceProperties

GPU_LIKE = DeviceProperties(name="synthetic", backend="synthetic", plane_dim=32, plane_size_min=32,
                            plane_size_max=32, max_units_per_cube=1024, max_cube_dim=(1024, 1024, 64),
                            max_cube_count=(2**31 - 1, 65535, 65535), shared_memory_per_cube=48 * 1024)


def space(props: DeviceProperties = GPU_LIKE) -> Space:
    """Cube shapes (1-D to 3-D, 32 to 1024 units) x per_unit x unroll x Line width x fastmath."""
    return Space(props, dims=shapes(props, [32, 64, 128, 256, 512, 1024]),
                 comptime={"per_unit": [1, 2, 4, 8, 16], "unroll": [1, 2, 4, 8]},
                 lines={("x", "y"): [1, 2, 4, 8]}, fastmath=[None, "algebraic"],
                 kernel_name="synthetic")


def cost(config: Config, seed: int = 0) -> float:
    """Milliseconds the model says ``config`` takes (deterministic in ``config`` and ``seed``)."""
    x, y, z = config.dim
    units = x * y * z
    values = dict(config.comptime)
    per_unit, unroll = values["per_unit"], values["unroll"]
    width = dict(config.lines).get("x", 1)
    occupancy = 1 + 0.15 * (math.log2(units) - 8) ** 2
    coalescing = (32 / x) ** 0.6 if x < 32 else 1.0
    depth = 1 + 0.08 * z
    work = per_unit * width
    per_element = 1 + 0.12 * (math.log2(work) - 4) ** 2
    effective_unroll = min(unroll, per_unit)
    loop = 1 / (1 + 0.25 * math.log2(effective_unroll)) + (0.04 * unroll if unroll > per_unit else 0)
    registers = per_unit * unroll * width
    spill = 1 + 0.6 * max(0.0, math.log2(registers) - 6)
    fast = 0.9 if config.fastmath and per_unit * unroll >= 8 else 1.0
    digest = hashlib.sha256(f"{seed}:{config.label}".encode()).digest()
    noise = 1 + 0.03 * (int.from_bytes(digest[:4], "little") / 2**32 * 2 - 1)
    return 0.05 * occupancy * coalescing * depth * per_element * loop * spill * fast * noise
