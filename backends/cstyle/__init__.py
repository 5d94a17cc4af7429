"""One renderer from the IR to C-family kernel source; CUDA, HIP and OpenCL C differ only by `Dialect` data.

    from cubepy.backends.cstyle import CUDA, render
    print(render(kernel_ir, CUDA).source)

Also here: the host side every C-style GPU backend shares (`host.py`): the device-side error
record that ``report_oob`` writes, and how it becomes an OutOfBoundsError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dialect import CUDA, HIP, OPENCL, OPENCL_NVIDIA, OPENCL_SUBGROUP_OPS, Dialect
from .host import empty_record, oob_error
from .rendered import ERROR_WORDS, MAX_DIMS, ArgSlot, OOBSite, Rendered

if TYPE_CHECKING:
    from cubepy.ir.nodes import Kernel


def render(kernel: Kernel, dialect: Dialect, name: str | None = None) -> Rendered:
    """The kernel's source in ``dialect`` (see `renderer.render`). The renderer is imported at the
    first call: a backend module stays cheap to import, as the backend contract asks."""
    from .renderer import render as render_source

    return render_source(kernel, dialect, name)


__all__ = ["CUDA", "ERROR_WORDS", "HIP", "MAX_DIMS", "OPENCL", "OPENCL_NVIDIA", "OPENCL_SUBGROUP_OPS", "ArgSlot",
           "Dialect", "OOBSite", "Rendered", "empty_record", "oob_error", "render"]
