"""MATVEC_3D_STENCIL: a 27-point stencil mat-vec over the real zones of a 3-D mesh, gathered via
real_zones. Only 14 coefficient arrays exist; the other 13 are shifted views of them, which makes
the matrix symmetric (RAJAPerf's aliasing, kept here: the ports take the 14 arrays and offsets)."""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f64, i32, i64

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..setup_data import DataInit, domain_3d

BASES = ("dbl", "dbc", "dbr", "dcl", "dcc", "dcr", "dfl", "dfc", "dfr", "cbl", "cbc", "cbr", "ccl", "ccc")


def coefficient_table(jp: int, kp: int) -> list[tuple[str, str, int, int]]:
    """Per stencil entry in the C sum's order (d-b-l first, u-f-r last): (name, base array, shift of
    the coefficient view into its base, offset of the x neighbour)."""
    alias = {"ccr": ("ccl", 1), "cfl": ("cbr", -1 + jp), "cfc": ("cbc", jp), "cfr": ("cbl", 1 + jp),
             "ubl": ("dfr", -1 - jp + kp), "ubc": ("dfc", -jp + kp), "ubr": ("dfl", 1 - jp + kp),
             "ucl": ("dcr", -1 + kp), "ucc": ("dcc", kp), "ucr": ("dcl", 1 + kp),
             "ufl": ("dbr", -1 + jp + kp), "ufc": ("dbc", jp + kp), "ufr": ("dbl", 1 + jp + kp)}
    table = []
    for kc, ko in (("d", -kp), ("c", 0), ("u", kp)):
        for jc, jo in (("b", -jp), ("c", 0), ("f", jp)):
            for ic, io in (("l", -1), ("c", 0), ("r", 1)):
                name = kc + jc + ic
                base, shift = alias.get(name, (name, 0))
                table.append((name, base, shift, ko + jo + io))
    return table


@cb.kernel
def matvec_3d(b: Mut[Array[f64]], x: Array[f64], real_zones: Array[i64],
              dbl: Array[f64], dbc: Array[f64], dbr: Array[f64], dcl: Array[f64], dcc: Array[f64],
              dcr: Array[f64], dfl: Array[f64], dfc: Array[f64], dfr: Array[f64], cbl: Array[f64],
              cbc: Array[f64], cbr: Array[f64], ccl: Array[f64], ccc: Array[f64], jp: i32, kp: i32):
    ii = cb.ABSOLUTE_POS
    if ii < len(real_zones):
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


@cb.kernel(checked=False, fastmath="algebraic")
def matvec_3d_tuned(b: Mut[Array[f64]], x: Array[f64], real_zones: Array[i64],
                    dbl: Array[f64], dbc: Array[f64], dbr: Array[f64], dcl: Array[f64], dcc: Array[f64],
                    dcr: Array[f64], dfl: Array[f64], dfc: Array[f64], dfr: Array[f64], cbl: Array[f64],
                    cbc: Array[f64], cbr: Array[f64], ccl: Array[f64], ccc: Array[f64], jp: Comptime[int],
                    kp: Comptime[int]):
    ii = cb.ABSOLUTE_POS
    if ii < len(real_zones):
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


class MatVec3DStencil(App):
    name = "MATVEC_3D_STENCIL"
    default_reps = 100
    outputs = ("b",)
    tuned_summary = "Comptime strides, fastmath, autotuned cube size"
    tuned_rtol = 1e-10

    def set_up(self, target_size: int) -> Problem:
        dom = domain_3d(target_size)
        length = dom.lpz + 1
        init = DataInit()
        arrays = {"b": init.const(length, 0.0), "x": init.data(length)}
        for name in BASES:
            arrays[name] = init.data(length)
        init.const(dom.n_real_zones, -1, np.int64)
        arrays["real_zones"] = dom.real_zones()
        n, nz = dom.n_real_zones, dom.n - 1

        def ext(s):
            return (nz + s[0]) * (nz + s[1]) * (nz + s[2])

        def gm(s):
            return ext((0, 0, 0)) + ext((0, 0, 0)) - (nz - s[0]) * (nz - s[1]) * (nz - s[2])
        shifts = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 1, 1), (1, 1, 1),
                  (1, 0, 1), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1), (1, 1, 1)]
        read = 8 * n + 8 * ext((2, 2, 2)) + 8 * sum(gm(s) for s in shifts)
        return Problem(self.name, target_size, n, n, arrays, {}, dict(jp=dom.jp, kp=dom.kp),
                       bytes_per_rep=read + 8 * n, flops_per_rep=53 * n)

    def reference(self, problem: Problem, a: dict) -> None:
        # Elementwise in the zone index: every i from the first to the last real zone with
        # contiguous slices, in the C sum's order; then the real zones' values.
        zones, jp, kp = a["real_zones"], problem.params["jp"], problem.params["kp"]
        lo, hi = int(zones[0]), int(zones[-1]) + 1
        x, s = a["x"], None
        for _, base, shift, offset in coefficient_table(jp, kp):
            term = a[base][lo + shift:hi + shift] * x[lo + offset:hi + offset]
            s = term if s is None else s + term
        a["b"][zones] = s[zones - lo]

    def _args(self, a: dict) -> tuple:
        return (a["b"], a["x"], a["real_zones"], *(a[name] for name in BASES))

    def plain(self, problem, a, device, checked):
        args = (*self._args(a), problem.params["jp"], problem.params["kp"])
        return Rep([Launch(matvec_3d, cubes(problem.size, 256), 256, args)], device, checked)

    def tuned(self, problem, a, device, checked):
        args = (*self._args(a), problem.params["jp"], problem.params["kp"])
        count, dim = tune_dim(matvec_3d_tuned, args, problem.size, device, checked)
        return Rep([Launch(matvec_3d_tuned, count, dim, args)], device, checked)
