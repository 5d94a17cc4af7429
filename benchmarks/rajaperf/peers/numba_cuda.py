"""The numba-cuda peer: each kernel loop as a ``@cuda.jit`` kernel, 256 threads per block, one
thread per iterate (FIR's coefficients in constant memory), on numba views of the run's CuPy arrays.
The tests run these kernels in numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``)."""

from __future__ import annotations

import math

import numpy as np

from . import Peer

BLOCK = 256
_KERNELS: dict | None = None
cuda = None          # numba.cuda, imported on first use: a module global, as numba's simulator needs


def _compile():
    jit = cuda.jit

    @jit
    def del_dot_vec_2d(real_zones, x, y, fx, fy, div, jp, half, ptiny):
        ii = cuda.grid(1)
        if ii < real_zones.size:
            i = real_zones[ii]
            x1, x2, x3, x4 = x[i + 1], x[i + 1 + jp], x[i + jp], x[i]
            y1, y2, y3, y4 = y[i + 1], y[i + 1 + jp], y[i + jp], y[i]
            fx1, fx2, fx3, fx4 = fx[i + 1], fx[i + 1 + jp], fx[i + jp], fx[i]
            fy1, fy2, fy3, fy4 = fy[i + 1], fy[i + 1 + jp], fy[i + jp], fy[i]
            xi, xj = half * (x1 + x2 - x3 - x4), half * (x2 + x3 - x4 - x1)
            yi, yj = half * (y1 + y2 - y3 - y4), half * (y2 + y3 - y4 - y1)
            fxi, fxj = half * (fx1 + fx2 - fx3 - fx4), half * (fx2 + fx3 - fx4 - fx1)
            fyi, fyj = half * (fy1 + fy2 - fy3 - fy4), half * (fy2 + fy3 - fy4 - fy1)
            rarea = 1.0 / (xi * yj - xj * yi + ptiny)
            div[i] = rarea * (fxi * yj - fxj * yi) + rarea * (fyj * xi - fyi * xj) + \
                (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4)

    @cuda.jit(device=True)
    def ssc_fix(s):
        return 0.3333333e-18 if s <= 0.1111111e-36 else math.sqrt(s)

    @jit
    def energy1(e_new, e_old, delvc, p_old, q_old, work):
        i = cuda.grid(1)
        if i < e_new.size:
            e_new[i] = e_old[i] - 0.5 * delvc[i] * (p_old[i] + q_old[i]) + 0.5 * work[i]

    @jit
    def energy2(q_new, delvc, comp_half_step, pbvc, e_new, bvc, p_half_step, ql_old, qq_old, rho0):
        i = cuda.grid(1)
        if i < q_new.size:
            if delvc[i] > 0.0:
                q_new[i] = 0.0
            else:
                vhalf = 1.0 / (1.0 + comp_half_step[i])
                q_new[i] = ssc_fix((pbvc[i] * e_new[i] + vhalf * vhalf * bvc[i] * p_half_step[i]) / rho0) * \
                    ql_old[i] + qq_old[i]

    @jit
    def energy3(e_new, delvc, p_old, q_old, p_half_step, q_new):
        i = cuda.grid(1)
        if i < e_new.size:
            e_new[i] = e_new[i] + 0.5 * delvc[i] * (3.0 * (p_old[i] + q_old[i]) - 4.0 * (p_half_step[i] + q_new[i]))

    @jit
    def energy4(e_new, work, e_cut, emin):
        i = cuda.grid(1)
        if i < e_new.size:
            e = e_new[i] + 0.5 * work[i]
            if abs(e) < e_cut:
                e = 0.0
            if e < emin:
                e = emin
            e_new[i] = e

    @jit
    def energy5(e_new, delvc, pbvc, vnewc, bvc, p_new, ql_old, qq_old, p_old, q_old, p_half_step, q_new, rho0,
                e_cut, emin):
        i = cuda.grid(1)
        if i < e_new.size:
            q_tilde = 0.0
            if delvc[i] <= 0.0:
                q_tilde = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0) * \
                    ql_old[i] + qq_old[i]
            e = e_new[i] - (7.0 * (p_old[i] + q_old[i]) - 8.0 * (p_half_step[i] + q_new[i])
                            + (p_new[i] + q_tilde)) * delvc[i] / 6.0
            if abs(e) < e_cut:
                e = 0.0
            if e < emin:
                e = emin
            e_new[i] = e

    @jit
    def energy6(q_new, delvc, pbvc, e_new, vnewc, bvc, p_new, ql_old, qq_old, rho0, q_cut):
        i = cuda.grid(1)
        if i < q_new.size:
            if delvc[i] <= 0.0:
                q = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0) * \
                    ql_old[i] + qq_old[i]
                if abs(q) < q_cut:
                    q = 0.0
                q_new[i] = q

    from ..apps.fir import COEFFICIENTS
    fir_taps = np.array(COEFFICIENTS)

    @jit
    def fir(out, inp):
        i = cuda.grid(1)
        if i < out.size:
            coeff = cuda.const.array_like(fir_taps)
            s = 0.0
            for j in range(coeff.size):
                s += coeff[j] * inp[i + j]
            out[i] = s

    @jit
    def ltimes(phi, ell, psi):
        m, g, z = cuda.grid(3)
        if m < phi.shape[2] and g < phi.shape[1] and z < phi.shape[0]:
            s = phi[z, g, m]
            for d in range(psi.shape[2]):
                s += ell[m, d] * psi[z, g, d]
            phi[z, g, m] = s

    @jit
    def pressure1(bvc, compression, cls):
        i = cuda.grid(1)
        if i < bvc.size:
            bvc[i] = cls * (compression[i] + 1.0)

    @jit
    def pressure2(p_new, bvc, e_old, vnewc, p_cut, eosvmax, pmin):
        i = cuda.grid(1)
        if i < p_new.size:
            p = bvc[i] * e_old[i]
            if abs(p) < p_cut:
                p = 0.0
            if vnewc[i] >= eosvmax:
                p = 0.0
            if p < pmin:
                p = pmin
            p_new[i] = p

    @jit
    def vol3d(x, y, z, vol, jp, kp, vnormq, ibegin, iend):
        i = ibegin + cuda.grid(1)
        if i < iend:
            x0, x1, x2, x3 = x[i], x[i + 1], x[i + jp], x[i + 1 + jp]
            x4, x5, x6, x7 = x[i + kp], x[i + 1 + kp], x[i + jp + kp], x[i + 1 + jp + kp]
            y0, y1, y2, y3 = y[i], y[i + 1], y[i + jp], y[i + 1 + jp]
            y4, y5, y6, y7 = y[i + kp], y[i + 1 + kp], y[i + jp + kp], y[i + 1 + jp + kp]
            z0, z1, z2, z3 = z[i], z[i + 1], z[i + jp], z[i + 1 + jp]
            z4, z5, z6, z7 = z[i + kp], z[i + 1 + kp], z[i + jp + kp], z[i + 1 + jp + kp]
            x71, x72, x74, x30, x50, x60 = x7 - x1, x7 - x2, x7 - x4, x3 - x0, x5 - x0, x6 - x0
            y71, y72, y74, y30, y50, y60 = y7 - y1, y7 - y2, y7 - y4, y3 - y0, y5 - y0, y6 - y0
            z71, z72, z74, z30, z50, z60 = z7 - z1, z7 - z2, z7 - z4, z3 - z0, z5 - z0, z6 - z0
            v = (x71 + x60) * (y72 * z30 - z72 * y30) + (y71 + y60) * (z72 * x30 - x72 * z30) + \
                (z71 + z60) * (x72 * y30 - y72 * x30)
            v += (x72 + x50) * (y74 * z60 - z74 * y60) + (y72 + y50) * (z74 * x60 - x74 * z60) + \
                (z72 + z50) * (x74 * y60 - y74 * x60)
            v += (x74 + x30) * (y71 * z50 - z71 * y50) + (y74 + y30) * (z71 * x50 - x71 * z50) + \
                (z74 + z30) * (x71 * y50 - y71 * x50)
            vol[i] = v * vnormq

    @jit
    def matvec_3d(b, x, real_zones, dbl, dbc, dbr, dcl, dcc, dcr, dfl, dfc, dfr, cbl, cbc, cbr, ccl, ccc, jp, kp):
        ii = cuda.grid(1)
        if ii < real_zones.size:
            i = real_zones[ii]
            s = dbl[i] * x[i - kp - jp - 1]
            s += dbc[i] * x[i - kp - jp]
            s += dbr[i] * x[i - kp - jp + 1]
            s += dcl[i] * x[i - kp - 1]
            s += dcc[i] * x[i - kp]
            s += dcr[i] * x[i - kp + 1]
            s += dfl[i] * x[i - kp + jp - 1]
            s += dfc[i] * x[i - kp + jp]
            s += dfr[i] * x[i - kp + jp + 1]
            s += cbl[i] * x[i - jp - 1]
            s += cbc[i] * x[i - jp]
            s += cbr[i] * x[i - jp + 1]
            s += ccl[i] * x[i - 1]
            s += ccc[i] * x[i]
            s += ccl[i + 1] * x[i + 1]
            s += cbr[i - 1 + jp] * x[i + jp - 1]
            s += cbc[i + jp] * x[i + jp]
            s += cbl[i + 1 + jp] * x[i + jp + 1]
            s += dfr[i - 1 - jp + kp] * x[i + kp - jp - 1]
            s += dfc[i - jp + kp] * x[i + kp - jp]
            s += dfl[i + 1 - jp + kp] * x[i + kp - jp + 1]
            s += dcr[i - 1 + kp] * x[i + kp - 1]
            s += dcc[i + kp] * x[i + kp]
            s += dcl[i + 1 + kp] * x[i + kp + 1]
            s += dbr[i - 1 + jp + kp] * x[i + kp + jp - 1]
            s += dbc[i + jp + kp] * x[i + kp + jp]
            s += dbl[i + 1 + jp + kp] * x[i + kp + jp + 1]
            b[i] = s

    return dict(del_dot_vec_2d=del_dot_vec_2d, energy=(energy1, energy2, energy3, energy4, energy5, energy6),
                fir=fir, ltimes=ltimes, matvec_3d=matvec_3d, pressure=(pressure1, pressure2), vol3d=vol3d)


def _grid(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK


def plan(app: str, problem, a: dict, kernels: dict) -> list[tuple]:
    """(kernel, grid, block, args) per launch of one rep."""
    p, s, n = problem.params, problem.scalars, problem.size
    if app == "DEL_DOT_VEC_2D":
        return [(kernels["del_dot_vec_2d"], _grid(n), BLOCK,
                 (a["real_zones"], a["x"], a["y"], a["xdot"], a["ydot"], a["div"], p["jp"], s["half"], s["ptiny"]))]
    if app == "ENERGY":
        from ..apps.energy import loop_arguments
        return [(k, _grid(n), BLOCK, args) for k, args in zip(kernels["energy"], loop_arguments(a, s))]
    if app == "FIR":
        return [(kernels["fir"], _grid(n), BLOCK, (a["out"], a["in"]))]
    if app == "LTIMES":
        grid = (-(-p["num_m"] // 32), -(-p["num_g"] // 4), -(-p["num_z"] // 2))
        return [(kernels["ltimes"], grid, (32, 4, 2), (a["phi"], a["ell"], a["psi"]))]
    if app == "MATVEC_3D_STENCIL":
        from ..apps.matvec_3d_stencil import BASES
        return [(kernels["matvec_3d"], _grid(n), BLOCK,
                 (a["b"], a["x"], a["real_zones"], *(a[k] for k in BASES), p["jp"], p["kp"]))]
    if app == "PRESSURE":
        k1, k2 = kernels["pressure"]
        return [(k1, _grid(n), BLOCK, (a["bvc"], a["compression"], s["cls"])),
                (k2, _grid(n), BLOCK, (a["p_new"], a["bvc"], a["e_old"], a["vnewc"], s["p_cut"], s["eosvmax"],
                                       s["pmin"]))]
    if app == "VOL3D":
        return [(kernels["vol3d"], _grid(p["iend"] - p["ibegin"]), BLOCK,
                 (a["x"], a["y"], a["z"], a["vol"], p["jp"], p["kp"], s["vnormq"], p["ibegin"], p["iend"]))]
    raise NotImplementedError(app)


def kernels():
    global _KERNELS, cuda
    if _KERNELS is None:
        from numba import cuda as numba_cuda
        cuda = numba_cuda
        _KERNELS = _compile()
    return _KERNELS


def run_plan(calls) -> None:
    for k, grid, block, args in calls:
        k[grid, block](*args)


class NumbaCuda(Peer):
    name = "numba-cuda"
    platform = "cuda"

    def unavailable(self) -> str | None:
        try:
            from numba import cuda as numba_cuda
            if not numba_cuda.is_available():
                return "numba finds no CUDA device"
        except Exception as e:
            return f"numba-cuda is not installed or does not load: {e}"
        return None

    def bind(self, app: str, problem, a: dict):
        from numba import cuda as numba_cuda
        views = {k: numba_cuda.as_cuda_array(v, sync=False) if hasattr(v, "__cuda_array_interface__") else v
                 for k, v in a.items()}
        calls = plan(app, problem, views, kernels())
        return lambda: run_plan(calls)
