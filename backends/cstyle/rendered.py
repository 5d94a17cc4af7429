"""What rendering a kernel returns: the `Rendered` source and launch facts, its argument slots, its
``report_oob`` sites, and the layout of the device-side error record."""

from __future__ import annotations

from cubepy.errors import CubeTypeError
from cubepy.ir.nodes import Op, SourceLoc
from cubepy.record import Record

MAX_DIMS = 8
# [flag, site, unit x y z, cube x y z, index (low, high) x MAX_DIMS, extent x MAX_DIMS], int32 words;
# an index takes two words so that a checked 64-bit index is reported at its true value
INDEX_WORDS = 8
EXTENT_WORDS = INDEX_WORDS + 2 * MAX_DIMS
ERROR_WORDS = EXTENT_WORDS + MAX_DIMS


class ArgSlot(Record):
    """One kernel argument: ``kind`` is "buffer", "shape" (extent ``dim`` of param ``param``),
    "scalar" (passed as NumPy type ``numpy``), "inline" (the array's bytes by value, in a cell of
    ``nbytes``), "launch_ok" (the host's answer to the launch test, an int:
    `cubepy.runtime.launch_checks`) or "error" (the error record)."""

    kind: str
    param: int | None = None
    dim: int = 0
    numpy: str = ""
    nbytes: int = 0


class OOBSite(Record):
    """A ``report_oob`` of the kernel: which array, its rank, where in the user's source."""

    array: str
    ndim: int
    loc: SourceLoc | None
    unsigned: tuple[bool, ...] = ()    # per index: reported as an unsigned value (a u64 index)


def add_oob_site(op: Op, sites: list[OOBSite], kernel_name: str) -> tuple[int, int, list]:
    """Register the ``report_oob`` ``op`` as the next site: ``(its number, its rank, its indices)``."""
    n = len(op.args) // 2
    if n > MAX_DIMS:
        raise CubeTypeError(f"arrays of more than {MAX_DIMS} dimensions are not supported", kernel_name, op.loc)
    indices = op.args[:n]
    sites.append(OOBSite(op.attrs.get("array", "?"), n, op.loc, tuple(not a.type.dtype.is_signed for a in indices)))
    return len(sites) - 1, n, indices


class Rendered(Record, frozen=False):
    name: str
    source: str
    args: list[ArgSlot]
    sites: list[OOBSite]
    units: int | str                   # units per cube: a number, or a C expression (shape-generic)
    plane_dim: int
    dynamic_shared_bytes: int
    alignments: dict[int, int] = {}   # param index -> byte alignment needed
    subgroups: bool = False            # plane ops on the device's sub-group builtins (OpenCL)
    kernel_name: str = ""              # the kernel's own name, for messages (``name`` is its symbol)
    # axes ("y", "z") whose cube position and count the source reads through macros: a build with
    # -DCB_ONE_CUBE_Y=1 reads them as 0 and 1 (`Dialect.one_cube_builds`), so it runs launches of
    # one cube along y only; without the macro the source reads them at run time
    count_axes: tuple[str, ...] = ()
    # per count axis, whether the first build assumes one cube along it: the kernel reads the
    # axis only for linear positions (ABSOLUTE_POS, CUBE_POS, CUBE_COUNT), not by its name
    first_one_cube: tuple[bool, ...] = ()

    def __post_init__(self):
        self.kernel_name = self.kernel_name or self.name

    def one_cube(self, cube_count: tuple) -> tuple[bool, ...]:
        """Per count axis, whether a launch of ``cube_count`` cubes has one cube along it (on
        CUDA's full launch path: no more work than that)."""
        axes = self.count_axes
        if not axes:
            return ()
        if len(axes) == 2:                 # ("y", "z")
            return (cube_count[1] == 1, cube_count[2] == 1)
        return (cube_count[1 if axes[0] == "y" else 2] == 1,)

    def one_cube_options(self, one_cube: tuple[bool, ...]) -> tuple[str, ...]:
        """The compiler's definitions for a build for launches of shape ``one_cube``."""
        return tuple(f"-DCB_ONE_CUBE_{axis.upper()}=1" for axis, one in zip(self.count_axes, one_cube) if one)


__all__ = ["ERROR_WORDS", "EXTENT_WORDS", "INDEX_WORDS", "MAX_DIMS", "ArgSlot", "OOBSite", "Rendered"]
