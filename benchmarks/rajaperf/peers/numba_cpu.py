"""The numba peer: each kernel as ``@njit(parallel=True)`` with one ``prange`` loop per kernel loop."""

from __future__ import annotations

import math

from . import Peer

_KERNELS: dict | None = None


def _compile():
    import numba
    njit, prange = numba.njit(parallel=True, cache=False), numba.prange

    @njit
    def del_dot_vec_2d(real_zones, x, y, fx, fy, div, jp, half, ptiny):
        for ii in prange(real_zones.size):
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

    def ssc_fix(s):
        return 0.3333333e-18 if s <= 0.1111111e-36 else math.sqrt(s)
    ssc_fix = numba.njit(inline="always")(ssc_fix)

    @njit
    def energy(e_new, e_old, delvc, p_new, p_old, q_new, q_old, work, comp_half_step, p_half_step, bvc, pbvc,
               ql_old, qq_old, vnewc, rho0, e_cut, emin, q_cut):
        n = e_new.size
        for i in prange(n):
            e_new[i] = e_old[i] - 0.5 * delvc[i] * (p_old[i] + q_old[i]) + 0.5 * work[i]
        for i in prange(n):
            if delvc[i] > 0.0:
                q_new[i] = 0.0
            else:
                vhalf = 1.0 / (1.0 + comp_half_step[i])
                q_new[i] = ssc_fix((pbvc[i] * e_new[i] + vhalf * vhalf * bvc[i] * p_half_step[i]) / rho0) * \
                    ql_old[i] + qq_old[i]
        for i in prange(n):
            e_new[i] = e_new[i] + 0.5 * delvc[i] * (3.0 * (p_old[i] + q_old[i]) - 4.0 * (p_half_step[i] + q_new[i]))
        for i in prange(n):
            e = e_new[i] + 0.5 * work[i]
            if abs(e) < e_cut:
                e = 0.0
            if e < emin:
                e = emin
            e_new[i] = e
        for i in prange(n):
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
        for i in prange(n):
            if delvc[i] <= 0.0:
                q = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0) * \
                    ql_old[i] + qq_old[i]
                if abs(q) < q_cut:
                    q = 0.0
                q_new[i] = q

    @njit
    def fir(out, inp, coeff):
        for i in prange(out.size):
            s = 0.0
            for j in range(coeff.size):
                s += coeff[j] * inp[i + j]
            out[i] = s

    @njit
    def ltimes(phi, ell, psi):
        nz, ng, nm = phi.shape
        nd = psi.shape[2]
        for z in prange(nz):
            for g in range(ng):
                for m in range(nm):
                    s = phi[z, g, m]
                    for d in range(nd):
                        s += ell[m, d] * psi[z, g, d]
                    phi[z, g, m] = s

    @njit
    def matvec_3d(b, x, real_zones, dbl, dbc, dbr, dcl, dcc, dcr, dfl, dfc, dfr, cbl, cbc, cbr, ccl, ccc, jp, kp):
        for ii in prange(real_zones.size):
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

    @njit
    def pressure(bvc, p_new, compression, e_old, vnewc, cls, p_cut, pmin, eosvmax):
        n = p_new.size
        for i in prange(n):
            bvc[i] = cls * (compression[i] + 1.0)
        for i in prange(n):
            p = bvc[i] * e_old[i]
            if abs(p) < p_cut:
                p = 0.0
            if vnewc[i] >= eosvmax:
                p = 0.0
            if p < pmin:
                p = pmin
            p_new[i] = p

    @njit
    def vol3d(x, y, z, vol, jp, kp, vnormq, ibegin, iend):
        for i in prange(ibegin, iend):
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

    return dict(DEL_DOT_VEC_2D=del_dot_vec_2d, ENERGY=energy, FIR=fir, LTIMES=ltimes,
                MATVEC_3D_STENCIL=matvec_3d, PRESSURE=pressure, VOL3D=vol3d)


class NumbaParallel(Peer):
    name = "numba parallel"
    platform = "cpu"

    def unavailable(self) -> str | None:
        try:
            import numba  # noqa: F401
        except ImportError as e:
            return f"numba is not installed ({e}); pip install numba"
        return None

    def bind(self, app: str, problem, a: dict):
        global _KERNELS
        if _KERNELS is None:
            _KERNELS = _compile()
        k, p, s = _KERNELS[app], problem.params, problem.scalars
        if app == "DEL_DOT_VEC_2D":
            args = (a["real_zones"], a["x"], a["y"], a["xdot"], a["ydot"], a["div"], p["jp"], s["half"], s["ptiny"])
        elif app == "ENERGY":
            from ..apps.energy import ARRAYS
            args = (*(a[name] for name in ARRAYS), s["rho0"], s["e_cut"], s["emin"], s["q_cut"])
        elif app == "FIR":
            args = (a["out"], a["in"], a["coeff"])
        elif app == "LTIMES":
            args = (a["phi"], a["ell"], a["psi"])
        elif app == "MATVEC_3D_STENCIL":
            from ..apps.matvec_3d_stencil import BASES
            args = (a["b"], a["x"], a["real_zones"], *(a[name] for name in BASES), p["jp"], p["kp"])
        elif app == "PRESSURE":
            args = (a["bvc"], a["p_new"], a["compression"], a["e_old"], a["vnewc"], s["cls"], s["p_cut"], s["pmin"],
                    s["eosvmax"])
        elif app == "VOL3D":
            args = (a["x"], a["y"], a["z"], a["vol"], p["jp"], p["kp"], s["vnormq"], p["ibegin"], p["iend"])
        else:
            raise NotImplementedError(app)
        return lambda: k(*args)
