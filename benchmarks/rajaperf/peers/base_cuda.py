"""The hand-written CUDA peer (``base_cuda.cu``, Base_CUDA style), run through CuPy's ``RawModule``.

`launches` describes each kernel's launches (function, grid, block, arguments) once; the same
description runs on the GPU through CuPy and, in the tests, on the CPU through `Emulator`, which
compiles the same ``.cu`` file as C++ with a few lines standing in for CUDA's builtins.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import Peer

SOURCE = Path(__file__).with_name("base_cuda.cu")
BLOCK = 256
LTIMES_BLOCK = (32, 4, 2)


@dataclass(frozen=True)
class Ptr:
    """A pointer into ``array`` shifted by ``offset`` elements (RAJAPerf's corner and stencil
    pointers, such as ``x - kp - jp - 1``)."""

    array: object
    offset: int = 0


@dataclass(frozen=True)
class Launch:
    function: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple


def _grid(n: int) -> tuple[int, int, int]:
    return ((n + BLOCK - 1) // BLOCK, 1, 1)


Int, Real = np.int64, np.float64      # Index_type and Real_type scalars, passed by value


def launches(app: str, problem, a: dict) -> list[Launch]:
    """The launches of one rep of ``app``, with RAJAPerf's Base_CUDA arguments."""
    p, s, n = problem.params, problem.scalars, problem.size
    block = (BLOCK, 1, 1)
    if app == "DEL_DOT_VEC_2D":
        jp = p["jp"]
        corners = (1, 1 + jp, jp, 0)                    # NDSET2D: v1, v2, v3, v4
        args = [Ptr(a["div"])]
        for name in ("x", "y", "xdot", "ydot"):
            args += [Ptr(a[name], o) for o in corners]
        args += [Ptr(a["real_zones"]), Real(s["half"]), Real(s["ptiny"]), Int(n)]
        return [Launch("deldotvec2d", _grid(n), block, tuple(args))]
    if app == "ENERGY":
        e = a
        return [Launch(f, _grid(n), block, args) for f, args in (
            ("energycalc1", (Ptr(e["e_new"]), Ptr(e["e_old"]), Ptr(e["delvc"]), Ptr(e["p_old"]), Ptr(e["q_old"]),
                             Ptr(e["work"]), Int(n))),
            ("energycalc2", (Ptr(e["delvc"]), Ptr(e["q_new"]), Ptr(e["compHalfStep"]), Ptr(e["pHalfStep"]),
                             Ptr(e["e_new"]), Ptr(e["bvc"]), Ptr(e["pbvc"]), Ptr(e["ql_old"]), Ptr(e["qq_old"]),
                             Real(s["rho0"]), Int(n))),
            ("energycalc3", (Ptr(e["e_new"]), Ptr(e["delvc"]), Ptr(e["p_old"]), Ptr(e["q_old"]), Ptr(e["pHalfStep"]),
                             Ptr(e["q_new"]), Int(n))),
            ("energycalc4", (Ptr(e["e_new"]), Ptr(e["work"]), Real(s["e_cut"]), Real(s["emin"]), Int(n))),
            ("energycalc5", (Ptr(e["delvc"]), Ptr(e["pbvc"]), Ptr(e["e_new"]), Ptr(e["vnewc"]), Ptr(e["bvc"]),
                             Ptr(e["p_new"]), Ptr(e["ql_old"]), Ptr(e["qq_old"]), Ptr(e["p_old"]), Ptr(e["q_old"]),
                             Ptr(e["pHalfStep"]), Ptr(e["q_new"]), Real(s["rho0"]), Real(s["e_cut"]),
                             Real(s["emin"]), Int(n))),
            ("energycalc6", (Ptr(e["delvc"]), Ptr(e["q_new"]), Ptr(e["pbvc"]), Ptr(e["e_new"]), Ptr(e["vnewc"]),
                             Ptr(e["bvc"]), Ptr(e["p_new"]), Ptr(e["ql_old"]), Ptr(e["qq_old"]), Real(s["rho0"]),
                             Real(s["q_cut"]), Int(n))),
        )]
    if app == "FIR":
        return [Launch("fir", _grid(n), block, (Ptr(a["out"]), Ptr(a["in"]), Int(p["coefflen"]), Int(n)))]
    if app == "LTIMES":
        bx, by, bz = LTIMES_BLOCK
        grid = (-(-p["num_m"] // bx), -(-p["num_g"] // by), -(-p["num_z"] // bz))
        return [Launch("ltimes", grid, LTIMES_BLOCK, (Ptr(a["phi"]), Ptr(a["ell"]), Ptr(a["psi"]), Int(p["num_d"]),
                                                      Int(p["num_m"]), Int(p["num_g"]), Int(p["num_z"])))]
    if app == "MATVEC_3D_STENCIL":
        from ..apps.matvec_3d_stencil import coefficient_table
        table = coefficient_table(p["jp"], p["kp"])
        coefs = [Ptr(a[base], shift) for _, base, shift, _ in table]
        xs = [Ptr(a["x"], offset) for *_, offset in table]
        args = (Ptr(a["b"]), *coefs, *xs, Ptr(a["real_zones"]), Int(0), Int(n))
        return [Launch("matvec_3d", _grid(n), block, args)]
    if app == "PRESSURE":
        return [Launch("pressurecalc1", _grid(n), block, (Ptr(a["bvc"]), Ptr(a["compression"]), Real(s["cls"]),
                                                          Int(n))),
                Launch("pressurecalc2", _grid(n), block, (Ptr(a["p_new"]), Ptr(a["bvc"]), Ptr(a["e_old"]),
                                                          Ptr(a["vnewc"]), Real(s["p_cut"]), Real(s["eosvmax"]),
                                                          Real(s["pmin"]), Int(n)))]
    if app == "VOL3D":
        jp, kp = p["jp"], p["kp"]
        offsets = (0, 1, jp, 1 + jp, kp, 1 + kp, jp + kp, 1 + jp + kp)     # NDPTRSET
        args = [Ptr(a["vol"])]
        for name in ("x", "y", "z"):
            args += [Ptr(a[name], o) for o in offsets]
        args += [Real(s["vnormq"]), Int(p["ibegin"]), Int(p["iend"])]
        return [Launch("vol3d", _grid(p["iend"] - p["ibegin"]), block, tuple(args))]
    raise NotImplementedError(app)


def coefficients(problem, a: dict):
    """FIR's coefficients on the host, for the ``__constant__`` array (None for the other
    kernels); on GPUs the run's arrays are CuPy arrays, which NumPy must not convert implicitly."""
    if "coeff" not in a:
        return None
    coeff = a["coeff"]
    return np.ascontiguousarray(coeff.get() if hasattr(coeff, "get") else coeff, dtype=np.float64)


class BaseCuda(Peer):
    name = "CUDA (Base_CUDA)"
    platform = "cuda"
    options: tuple[str, ...] = ()       # NVRTC's defaults, as RAJAPerf's build: FMA contraction on

    def __init__(self):
        self._module = None

    def unavailable(self) -> str | None:
        try:
            import cupy
            cupy.cuda.runtime.getDeviceCount()
        except Exception as e:      # no CuPy, no driver or no GPU
            return f"CuPy with a CUDA device is needed: {e}"
        return None

    def source(self) -> str:
        return SOURCE.read_text()

    def module(self):
        if self._module is None:
            import cupy
            self._module = cupy.RawModule(code=self.source(), options=self.options)
        return self._module

    def bind(self, app: str, problem, a: dict):
        mod = self.module()
        plan = launches(app, problem, a)
        constant = coefficients(problem, a) if app == "FIR" else None
        if constant is not None:
            symbol = mod.get_global("fir_coeff")
            symbol.copy_from_host(constant.ctypes.data, constant.nbytes)
        calls = []
        for launch in plan:
            args = tuple(np.uint64(arg.array.data.ptr + arg.offset * arg.array.itemsize) if isinstance(arg, Ptr)
                         else arg for arg in launch.args)
            calls.append((mod.get_function(launch.function), launch.grid, launch.block, args))

        def rep():
            for fn, grid, block, args in calls:
                fn(grid, block, args)
        return rep


class BaseCudaStrict(BaseCuda):
    """Base_CUDA built as cubepy builds a kernel without ``fastmath``: no FMA contraction. It
    separates what contraction gives the hand-written CUDA from the rest of a difference in time."""

    name = "CUDA (Base_CUDA, --fmad=false)"
    options = ("--fmad=false",)


class BaseCudaRestrict(BaseCuda):
    """Base_CUDA with cubepy's kind of parameters: every pointer ``__restrict__``, the ones it reads
    pointers to const, so that NVVM may load them through the read-only path (``ld.global.nc``).
    It separates what the pointers' qualifiers do from the rest of a difference in time."""

    name = "CUDA (Base_CUDA, __restrict__)"

    def source(self) -> str:
        return restricted(SOURCE.read_text())


def restricted(source: str) -> str:
    """``base_cuda.cu`` with its pointer parameters ``__restrict__`` and read ones to const."""
    head, typedefs_end, body = source.partition("#define BLOCK")
    body = (body.replace("const Real_ptr ", "const double* __restrict__ ")
            .replace("Real_ptr ", "double* __restrict__ ")
            .replace("Index_ptr ", "const Index_type* __restrict__ "))
    return head + typedefs_end + body


EMULATION = r"""
#include <cmath>
struct cb_dim3 { unsigned x, y, z; };
static cb_dim3 blockIdx, threadIdx, blockDim;
extern "C" void cb_set_thread(unsigned bx, unsigned by, unsigned bz, unsigned tx, unsigned ty, unsigned tz,
                              unsigned dx, unsigned dy, unsigned dz) {
    blockIdx = {bx, by, bz}; threadIdx = {tx, ty, tz}; blockDim = {dx, dy, dz};
}
#define __global__
#define __device__
#define __constant__
#define __launch_bounds__(n)
using std::sqrt; using std::fabs;
"""


class Emulator:
    """Runs `launches` on the CPU: ``base_cuda.cu`` compiled as C++ (g++) with CUDA's builtins
    emulated, one call per thread, for checking the source and the launch arguments without a GPU."""

    def __init__(self, folder: Path, compiler: str = "g++"):
        import subprocess
        header = folder / "emulation.h"
        header.write_text(EMULATION)
        library = folder / "base_cuda_emulated.so"
        subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-x", "c++", "-include", str(header), "-o", str(library),
                        str(SOURCE)], check=True, capture_output=True, text=True)
        self.lib = ctypes.CDLL(str(library))

    def run(self, app: str, problem, a: dict) -> None:
        constant = coefficients(problem, a) if app == "FIR" else None
        if constant is not None:
            (ctypes.c_double * len(constant)).in_dll(self.lib, "fir_coeff")[:] = constant.tolist()
        for launch in launches(app, problem, a):
            fn = getattr(self.lib, launch.function)
            args = [ctypes.c_void_p(arg.array.ctypes.data + arg.offset * arg.array.itemsize) if isinstance(arg, Ptr)
                    else ctypes.c_double(arg) if isinstance(arg, np.floating) else ctypes.c_longlong(int(arg))
                    for arg in launch.args]
            (gx, gy, gz), (bx, by, bz) = launch.grid, launch.block
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        for tz in range(bz):
                            for ty in range(by):
                                for tx in range(bx):
                                    self.lib.cb_set_thread(x, y, z, tx, ty, tz, bx, by, bz)
                                    fn(*args)
