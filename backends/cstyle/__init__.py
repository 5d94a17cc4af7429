"""One renderer from the IR to C-family kernel source; CUDA, HIP and OpenCL C differ only by `Dialect` data.

    from cubepy.backends.cstyle import CUDA, render
    print(render(kernel_ir, CUDA).source)

Also here: the host side every C-style GPU backend shares (`host.py`): the device-side error
record that ``report_oob`` writes, and how it becomes an OutOfBoundsError.
"""

from .dialect import CUDA, HIP, OPENCL, OPENCL_SUBGROUP_OPS, Dialect
from .host import empty_record, oob_error
from .renderer import ERROR_WORDS, MAX_DIMS, ArgSlot, OOBSite, Rendered, render

__all__ = ["CUDA", "ERROR_WORDS", "HIP", "MAX_DIMS", "OPENCL", "OPENCL_SUBGROUP_OPS", "ArgSlot", "Dialect",
           "OOBSite", "Rendered", "empty_record", "oob_error", "render"]
