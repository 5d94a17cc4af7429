"""The C/OpenMP peer: ``openmp.c`` compiled at run time (gcc -O3 -march=native -fopenmp) in a temporary
folder and called through ctypes."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from . import Peer

SOURCE = Path(__file__).with_name("openmp.c")
FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")

P, L, D = ctypes.c_void_p, ctypes.c_long, ctypes.c_double
SIGNATURES = {
    "del_dot_vec_2d": [P] * 6 + [L, D, D, L],
    "energy": [P] * 15 + [D] * 4 + [L],
    "fir": [P, P, P, L, L],
    "ltimes": [P, P, P, L, L, L, L],
    "matvec_3d": [P] * 5 + [L],
    "pressure": [P] * 5 + [D] * 4 + [L],
    "vol3d": [P] * 4 + [L, L, D, L, L],
}


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


class OpenMP(Peer):
    name = "C OpenMP"
    platform = "cpu"

    def __init__(self):
        self._lib, self._why = None, None

    def unavailable(self) -> str | None:
        self._build()
        return self._why

    def _build(self):
        if self._lib is not None or self._why is not None:
            return
        gcc = shutil.which("gcc")
        if gcc is None:
            self._why = "gcc is not on PATH"
            return
        folder = Path(tempfile.mkdtemp(prefix="cubepy-rajaperf-"))
        target = folder / "openmp.so"
        done = subprocess.run([gcc, *FLAGS, "-o", str(target), str(SOURCE), "-lm"], capture_output=True, text=True)
        if done.returncode != 0:
            self._why = f"gcc failed: {done.stderr.strip()[-500:]}"
            return
        lib = ctypes.CDLL(str(target))
        for name, argtypes in SIGNATURES.items():
            getattr(lib, name).argtypes = argtypes
        self._lib = lib

    def bind(self, app: str, problem, a: dict):
        self._build()
        lib, p, s = self._lib, problem.params, problem.scalars
        if app == "DEL_DOT_VEC_2D":
            args = (ptr(a["real_zones"]), ptr(a["x"]), ptr(a["y"]), ptr(a["xdot"]), ptr(a["ydot"]), ptr(a["div"]),
                    p["jp"], s["half"], s["ptiny"], problem.size)
            return lambda: lib.del_dot_vec_2d(*args)
        if app == "ENERGY":
            from ..apps.energy import ARRAYS
            args = (*(ptr(a[k]) for k in ARRAYS), s["rho0"], s["e_cut"], s["emin"], s["q_cut"], problem.size)
            return lambda: lib.energy(*args)
        if app == "FIR":
            args = (ptr(a["out"]), ptr(a["in"]), ptr(a["coeff"]), len(a["coeff"]), problem.size)
            return lambda: lib.fir(*args)
        if app == "LTIMES":
            args = (ptr(a["phi"]), ptr(a["ell"]), ptr(a["psi"]), p["num_d"], p["num_g"], p["num_m"], p["num_z"])
            return lambda: lib.ltimes(*args)
        if app == "MATVEC_3D_STENCIL":
            from ..apps.matvec_3d_stencil import coefficient_table
            table = coefficient_table(p["jp"], p["kp"])
            coef = (ctypes.c_void_p * 27)(*(ptr(a[base]) + 8 * shift for _, base, shift, _ in table))
            offsets = (ctypes.c_long * 27)(*(offset for *_, offset in table))
            args = (ptr(a["b"]), ptr(a["x"]), ptr(a["real_zones"]), ctypes.addressof(coef), ctypes.addressof(offsets),
                    problem.size)
            keep = (coef, offsets)        # the pointer tables live as long as the callable

            def rep(keep=keep):
                lib.matvec_3d(*args)
            return rep
        if app == "PRESSURE":
            args = (ptr(a["bvc"]), ptr(a["p_new"]), ptr(a["compression"]), ptr(a["e_old"]), ptr(a["vnewc"]),
                    s["cls"], s["p_cut"], s["pmin"], s["eosvmax"], problem.size)
            return lambda: lib.pressure(*args)
        if app == "VOL3D":
            args = (ptr(a["x"]), ptr(a["y"]), ptr(a["z"]), ptr(a["vol"]), p["jp"], p["kp"],
                    problem.scalars["vnormq"], p["ibegin"], p["iend"])
            return lambda: lib.vol3d(*args)
        raise NotImplementedError(app)
