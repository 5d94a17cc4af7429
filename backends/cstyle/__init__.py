"""One renderer from the IR to C-family kernel source; CUDA, HIP and OpenCL C differ only by `Dialect` data.

    from cubepy.backends.cstyle import CUDA, render
    print(render(kernel_ir, CUDA).source)

Also here: the host side every C-style GPU backend shares (`host.py`): the device-side error
record that ``report_oob`` writes, and how it becomes an OutOfBoundsError.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cubepy.ir.nodes import Kernel

    from .dialect import Dialect
    from .rendered import Rendered

# What this package offers, by the module that defines it: each is imported at its first use, so a
# backend that imports one of them (the CUDA backend at its probe: the flags) loads no renderer,
# no dialect table and no dataclass it does not need (`cubepy.runtime.backend`: backend modules are
# cheap to import).
_WHERE = {
    **dict.fromkeys(("CUDA", "HIP", "OPENCL", "OPENCL_NVIDIA", "OPENCL_SUBGROUP_OPS", "Dialect"), "dialect"),
    **dict.fromkeys(("empty_record", "oob_error"), "host"),
    **dict.fromkeys(("ERROR_WORDS", "MAX_DIMS", "ArgSlot", "OOBSite", "Rendered"), "rendered"),
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def render(kernel: Kernel, dialect: Dialect, name: str | None = None) -> Rendered:
    """The kernel's source in ``dialect`` (see `renderer.render`). The renderer is imported at the
    first call: a backend module stays cheap to import, as the backend contract asks."""
    from .renderer import render as render_source

    return render_source(kernel, dialect, name)


__all__ = ["CUDA", "ERROR_WORDS", "HIP", "MAX_DIMS", "OPENCL", "OPENCL_NVIDIA", "OPENCL_SUBGROUP_OPS", "ArgSlot",
           "Dialect", "OOBSite", "Rendered", "empty_record", "oob_error", "render"]
