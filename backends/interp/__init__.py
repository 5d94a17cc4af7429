"""The reference interpreter: runs the IR with NumPy, all units of a launch in lockstep.

It is the specification every other backend is tested against: plane size is chosen at probe
time (any power of two up to 64), fresh shared/local memory and variables are poisoned, checked
kernels report the first out-of-bounds access, and ``races=True`` reports data races.
"""

from __future__ import annotations

from cubepy.errors import ArgumentValueError, CubeTypeError
from cubepy.ir.nodes import ATOMIC_OPS, OPCODES, Kernel, walk
from cubepy.runtime.backend import Backend
from cubepy.runtime.inline_arrays import MAX_INLINE_BYTES
from cubepy.runtime.properties import DeviceProperties

__all__ = ["BACKEND", "InterpBackend", "Launch"]


def __getattr__(name: str):
    if name == "Launch":           # the executor loads with the first launch, not with the module
        from .executor import Launch
        return Launch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class InterpBackend(Backend):
    name = "interp"
    finishes_launches = True
    preference = 90            # the reference semantics, slow: only when nothing else loads
    runtime_cube_dim = True    # reads every builtin at run time

    def probe(self, plane_dim=32, races=False, checks_per_cube=False, guards_per_cube=False,
              checks_per_run=False, inline_array_bytes=0, checks_per_launch=False, **_) -> DeviceProperties:
        """``checks_per_cube=True`` versions kernels as the GPUs do (`cubepy.ir.cube_checks`),
        ``checks_per_launch=True`` with it lets the host decide a whole launch first, as the
        GPU backends do (`cubepy.runtime.launch_checks`), ``guards_per_cube=True`` also as the CPU does,
        ``checks_per_run=True`` tests checked loads once per run as the GPUs do
        (`cubepy.ir.run_checks`), ``inline_array_bytes=2048`` specializes small read-only host
        arrays as CUDA passes them by value (`cubepy.runtime.inline_arrays`), so the interpreter
        checks those transformations too."""
        if isinstance(plane_dim, bool) or not isinstance(plane_dim, int) or not (
                1 <= plane_dim <= 64 and plane_dim & (plane_dim - 1) == 0):
            raise ArgumentValueError(
                f"the interpreter's plane_dim must be a power of two from 1 to 64, got {plane_dim!r}")
        return DeviceProperties(
            name="interpreter", backend=self.name, plane_dim=plane_dim,
            plane_size_min=plane_dim, plane_size_max=plane_dim, max_units_per_cube=1024,
            max_cube_dim=(1024, 1024, 64), max_cube_count=(2**31 - 1, 65535, 65535),
            shared_memory_per_cube=65536, vector_widths=(1, 2, 4, 8, 16),
            features=frozenset({"fp16", "fp64", "plane_ops", "atomics"}), checks_per_cube=bool(checks_per_cube),
            guards_per_cube=bool(checks_per_cube and guards_per_cube), checks_per_run=bool(checks_per_run),
            checks_per_launch=bool(checks_per_cube and checks_per_launch),
            inline_array_bytes=_inline_bytes(inline_array_bytes))

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Kernel:
        """Nothing to compile; refuse what the interpreter cannot run."""
        typed = [p.type for p in kernel.params] + [b.type for b in kernel.buffers]
        typed += [v.type for v in kernel.vars]
        for op in walk(kernel.body):
            if op.opcode not in OPCODES:
                raise ValueError(f"kernel {kernel.name}: unknown opcode {op.opcode!r}")
            if op.opcode == "atomic" and (op.attrs.get("op") not in ATOMIC_OPS or op.args[0].type.width > 1):
                raise CubeTypeError(f"atomic {op.attrs.get('op')!r} on {op.args[0].type} is not supported",
                                    kernel.name, op.loc)
            if op.result is not None:
                typed.append(op.result.type)
        for t in typed:
            if t.dtype.name == "bf16":
                raise CubeTypeError("bf16 is not supported by the interpreter (NumPy has no bfloat16)",
                                    kernel.name, kernel.loc)
        return kernel

    def launch(self, executable, kernel: Kernel, cube_count, cube_dim, args, properties, options) -> None:
        plane_dim = kernel.plane_dim or properties.plane_dim
        from .executor import Launch

        for param, value in zip(kernel.params, args):
            # what a GPU would truncate to its parameter's capacity (a bug of the runtime if so)
            if getattr(param, "inline", 0) and value.size > param.inline:
                raise AssertionError(f"kernel {kernel.name}: argument '{param.name}' has {value.size} elements, "
                                     f"more than the {param.inline} its parameter by value holds")

        Launch(kernel, cube_count, cube_dim, list(args), plane_dim, bool((options or {}).get("races"))).run()

    def synchronize(self, properties=None) -> None:
        """Nothing is queued: every launch finished, and raised, before it returned."""


BACKEND = InterpBackend()


def _inline_bytes(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INLINE_BYTES:
        raise ArgumentValueError(f"the interpreter's inline_array_bytes must be an int from 0 to {MAX_INLINE_BYTES}, "
                                 f"got {value!r}")
    return value
