"""The seven RAJAPerf "apps" kernels of the rustc offload paper, each in its own module."""

from __future__ import annotations

from ..app import App
from .del_dot_vec_2d import DelDotVec2D
from .energy import Energy
from .fir import Fir
from .ltimes import Ltimes
from .matvec_3d_stencil import MatVec3DStencil
from .pressure import Pressure
from .vol3d import Vol3D

APPS: dict[str, App] = {app.name: app for app in (DelDotVec2D(), Energy(), Fir(), Ltimes(), MatVec3DStencil(),
                                                    Pressure(), Vol3D())}

__all__ = ["APPS"]
