"""The Triton peer: each kernel loop as a Triton program over a block of 256 iterates (LTIMES: one
program per (z, g), a masked 32 x 64 tile over (m, d)), on torch views (DLPack, no copy) of the
run's CuPy arrays. Without a GPU the tests compile every kernel for sm_90 (``triton.compile``)."""

from . import Peer

BLOCK = 256


def kernels() -> dict:
    from .triton_kernels import KERNELS
    return KERNELS


def _grid(n: int) -> tuple[int]:
    return ((n + BLOCK - 1) // BLOCK,)


def plan(app: str, problem, a: dict, k: dict) -> list[tuple]:
    """(kernel, grid, args, constexprs) per launch of one rep."""
    p, s, n = problem.params, problem.scalars, problem.size
    block = {"BLOCK": BLOCK}
    if app == "DEL_DOT_VEC_2D":
        return [(k["del_dot_vec_2d"], _grid(n), (a["real_zones"], a["x"], a["y"], a["xdot"], a["ydot"], a["div"],
                                                 p["jp"], s["half"], s["ptiny"], n), block)]
    if app == "ENERGY":
        from ..apps.energy import loop_arguments
        return [(kern, _grid(n), (*args, n), block) for kern, args in zip(k["energy"], loop_arguments(a, s))]
    if app == "FIR":
        return [(k["fir"], _grid(n), (a["out"], a["in"], a["coeff"], n), {"TAPS": p["coefflen"], **block})]
    if app == "LTIMES":
        return [(k["ltimes"], (p["num_g"], p["num_z"]), (a["phi"], a["ell"], a["psi"], p["num_m"], p["num_g"]),
                 {"ND": p["num_d"], "MB": 32})]
    if app == "MATVEC_3D_STENCIL":
        from ..apps.matvec_3d_stencil import BASES
        return [(k["matvec_3d"], _grid(n), (a["b"], a["x"], a["real_zones"], *(a[b] for b in BASES), p["jp"], p["kp"],
                                            n), block)]
    if app == "PRESSURE":
        k1, k2 = k["pressure"]
        return [(k1, _grid(n), (a["bvc"], a["compression"], s["cls"], n), block),
                (k2, _grid(n), (a["p_new"], a["bvc"], a["e_old"], a["vnewc"], s["p_cut"], s["eosvmax"], s["pmin"], n),
                 block)]
    if app == "VOL3D":
        return [(k["vol3d"], _grid(p["iend"] - p["ibegin"]), (a["x"], a["y"], a["z"], a["vol"], p["jp"], p["kp"],
                                                               s["vnormq"], p["ibegin"], p["iend"]), block)]
    raise NotImplementedError(app)


class Triton(Peer):
    name = "Triton"
    platform = "cuda"

    def unavailable(self) -> str | None:
        try:
            import torch
            import triton  # noqa: F401
            if not torch.cuda.is_available():
                return "torch finds no CUDA device (Triton launches on torch tensors)"
        except Exception as e:
            return f"triton or torch is not installed or does not load: {e}"
        return None

    def bind(self, app: str, problem, a: dict):
        import torch
        tensors = {name: torch.from_dlpack(v) for name, v in a.items()}
        calls = plan(app, problem, tensors, kernels())

        def rep():
            for kern, grid, args, constexprs in calls:
                kern[grid](*args, **constexprs)
        return rep
