"""What a device can do: the maxima a kernel's topology is checked against."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DeviceProperties:
    """A device's real limits, queried from its runtime (or chosen, for the interpreter).

    Example::

        >>> cb.device("interp", plane_dim=64).properties.plane_dim
        64
    """

    name: str
    backend: str
    plane_dim: int                      # the plane size kernels on this device get (PLANE_DIM)
    plane_size_min: int
    plane_size_max: int
    max_units_per_cube: int
    max_cube_dim: tuple[int, int, int]
    max_cube_count: tuple[int, int, int]
    shared_memory_per_cube: int         # bytes
    vector_widths: tuple[int, ...] = (1, 2, 4, 8, 16)
    compute_units: int = 1
    features: frozenset[str] = field(default_factory=frozenset)
    # bounds checks of affine indices tested once per cube (cubepy.ir.cube_checks): the CPU,
    # where the test is paid once per cube, and the GPUs (CUDA, HIP, OpenCL), where per-access
    # branches stop the compiler from merging loads (every unit evaluates the test there)
    checks_per_cube: bool = False
    # decide guards a whole cube passes (`if i < n`) once per cube too, in unchecked kernels as
    # well: where masked loads and stores cost (the CPU), not where a compare is free (GPUs)
    guards_per_cube: bool = False
    # checked loads whose indices come from memory tested once per unit before a run of code that
    # holds them (cubepy.ir.run_checks): CUDA, HIP, OpenCL and the CPU, for the same reasons as
    # checks_per_cube
    checks_per_run: bool = False
    # launch-parameter bytes a kernel may give to small read-only host arrays passed by value
    # (cubepy.runtime.inline_arrays): CUDA, where they are read from the constant bank; 0: none
    inline_array_bytes: int = 0
    # with checks_per_cube: the host tests a whole launch first (cubepy.ir.cube_checks.launch_test)
    # and passes the answer, so that no unit evaluates the cube's test where the launch passed:
    # CUDA, HIP and OpenCL, where every unit evaluates it
    checks_per_launch: bool = False
    # with checks_per_cube: a kernel whose body holds barriers (sync_cube, plane ops) is versioned
    # too; False where the backend must find every barrier outside conditionals (OpenCL: its
    # barrier lowering, cubepy.ir.hoist, turned the version's per-unit early returns into
    # barriers some units miss), which leaves such a kernel to the checks per run (whose versions
    # hold no barrier) and at its accesses
    versions_barriers: bool = True

    def __hash__(self) -> int:
        # Backends look their devices up by properties on every launch and event: hash what tells
        # devices apart (equal properties have equal names), not all fourteen fields
        return hash((self.name, self.backend))

    def supports(self, feature: str) -> bool:
        """Whether a feature flag (``"fp64"``, ``"fp16"``, ``"bf16"``, ``"plane_ops"``,
        ``"atomic_f32_add"``, ...) is present; unknown flags are False."""
        return feature in self.features

    def describe(self) -> str:
        return (f"{self.backend}:{self.name}  plane={self.plane_dim} "
                f"[{self.plane_size_min}..{self.plane_size_max}]  units/cube<={self.max_units_per_cube}  "
                f"cube_dim<={self.max_cube_dim}  cube_count<={self.max_cube_count}  "
                f"shared={self.shared_memory_per_cube // 1024} KiB  vectors={self.vector_widths}  "
                f"compute_units={self.compute_units}  features={','.join(sorted(self.features))}")
