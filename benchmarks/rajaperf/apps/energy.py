"""ENERGY: six dependent element-wise loops of LULESH's energy update (branches, clamps, sqrt).

With RAJAPerf's data every ``delvc`` is positive, so the sqrt branches never run and ``e_new``
ends at ``emin`` everywhere; the tests also run the kernels on random data that takes them.
"""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f64

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..setup_data import DataInit

SSC_LOW, SSC_FLOOR = 0.1111111e-36, 0.3333333e-18
ARRAYS = ("e_new", "e_old", "delvc", "p_new", "p_old", "q_new", "q_old", "work", "compHalfStep", "pHalfStep",
          "bvc", "pbvc", "ql_old", "qq_old", "vnewc")


@cb.func
def ssc_fix(s):
    r = f64(SSC_FLOOR)
    if s > SSC_LOW:
        r = cb.sqrt(s)
    return r


# --- the plain port: one kernel per loop, branches as in the C code -------------------------------

@cb.kernel
def energy1(e_new: Mut[Array[f64]], e_old: Array[f64], delvc: Array[f64], p_old: Array[f64], q_old: Array[f64],
            work: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        e_new[i] = e_old[i] - 0.5 * delvc[i] * (p_old[i] + q_old[i]) + 0.5 * work[i]


@cb.kernel
def energy2(q_new: Mut[Array[f64]], delvc: Array[f64], comp_half_step: Array[f64], pbvc: Array[f64],
            e_new: Array[f64], bvc: Array[f64], p_half_step: Array[f64], ql_old: Array[f64], qq_old: Array[f64],
            rho0: f64):
    i = cb.ABSOLUTE_POS
    if i < len(q_new):
        if delvc[i] > 0.0:
            q_new[i] = 0.0
        else:
            vhalf = 1.0 / (1.0 + comp_half_step[i])
            ssc = ssc_fix((pbvc[i] * e_new[i] + vhalf * vhalf * bvc[i] * p_half_step[i]) / rho0)
            q_new[i] = ssc * ql_old[i] + qq_old[i]


@cb.kernel
def energy3(e_new: Mut[Array[f64]], delvc: Array[f64], p_old: Array[f64], q_old: Array[f64],
            p_half_step: Array[f64], q_new: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        e_new[i] = e_new[i] + 0.5 * delvc[i] * (3.0 * (p_old[i] + q_old[i]) - 4.0 * (p_half_step[i] + q_new[i]))


@cb.kernel
def energy4(e_new: Mut[Array[f64]], work: Array[f64], e_cut: f64, emin: f64):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        e = e_new[i] + 0.5 * work[i]
        if cb.abs(e) < e_cut:
            e = 0.0
        if e < emin:
            e = emin
        e_new[i] = e


@cb.kernel
def energy5(e_new: Mut[Array[f64]], delvc: Array[f64], pbvc: Array[f64], vnewc: Array[f64], bvc: Array[f64],
            p_new: Array[f64], ql_old: Array[f64], qq_old: Array[f64], p_old: Array[f64], q_old: Array[f64],
            p_half_step: Array[f64], q_new: Array[f64], rho0: f64, e_cut: f64, emin: f64):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        q_tilde = f64(0.0)
        if delvc[i] <= 0.0:
            ssc = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0)
            q_tilde = ssc * ql_old[i] + qq_old[i]
        e = e_new[i] - (7.0 * (p_old[i] + q_old[i]) - 8.0 * (p_half_step[i] + q_new[i])
                        + (p_new[i] + q_tilde)) * delvc[i] / 6.0
        if cb.abs(e) < e_cut:
            e = 0.0
        if e < emin:
            e = emin
        e_new[i] = e


@cb.kernel
def energy6(q_new: Mut[Array[f64]], delvc: Array[f64], pbvc: Array[f64], e_new: Array[f64], vnewc: Array[f64],
            bvc: Array[f64], p_new: Array[f64], ql_old: Array[f64], qq_old: Array[f64], rho0: f64, q_cut: f64):
    i = cb.ABSOLUTE_POS
    if i < len(q_new):
        if delvc[i] <= 0.0:
            ssc = ssc_fix((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0)
            q = ssc * ql_old[i] + qq_old[i]
            if cb.abs(q) < q_cut:
                q = 0.0
            q_new[i] = q


# --- the tuned port: the same loops branch-free on Lines, fastmath ---------------------------------

@cb.func
def ssc_select(s):
    return cb.select(s <= SSC_LOW, SSC_FLOOR, cb.sqrt(cb.max(s, 0.0)))


@cb.func
def clamp_energy(e, e_cut, emin):
    e = cb.select(cb.abs(e) < e_cut, 0.0, e)
    return cb.select(e < emin, emin, e)


@cb.kernel(checked=False, fastmath="algebraic")
def energy1_tuned(e_new: Mut[Array[f64]], e_old: Array[f64], delvc: Array[f64], p_old: Array[f64],
                  q_old: Array[f64], work: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        e_new[i] = e_old[i] - 0.5 * delvc[i] * (p_old[i] + q_old[i]) + 0.5 * work[i]


# Loops 2, 5 and 6 keep their branches: the arrays read only where delvc <= 0 (RAJAPerf's data
# never goes there) are then not read at all; branch-free selects read all of them (1.8x Base_CUDA
# on an H100, docs/benchmarks.md). Without a branch on a Line comparison these run per element.
@cb.kernel(checked=False, fastmath="algebraic")
def energy2_tuned(q_new: Mut[Array[f64]], delvc: Array[f64], comp_half_step: Array[f64], pbvc: Array[f64],
                  e_new: Array[f64], bvc: Array[f64], p_half_step: Array[f64], ql_old: Array[f64],
                  qq_old: Array[f64], rho0: f64):
    i = cb.ABSOLUTE_POS
    if i < len(q_new):
        q = f64(0.0)
        if delvc[i] <= 0.0:
            vhalf = 1.0 / (1.0 + comp_half_step[i])
            ssc = ssc_select((pbvc[i] * e_new[i] + vhalf * vhalf * bvc[i] * p_half_step[i]) / rho0)
            q = ssc * ql_old[i] + qq_old[i]
        q_new[i] = q


@cb.kernel(checked=False, fastmath="algebraic")
def energy3_tuned(e_new: Mut[Array[f64]], delvc: Array[f64], p_old: Array[f64], q_old: Array[f64],
                  p_half_step: Array[f64], q_new: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        e_new[i] = e_new[i] + 0.5 * delvc[i] * (3.0 * (p_old[i] + q_old[i]) - 4.0 * (p_half_step[i] + q_new[i]))


@cb.kernel(checked=False, fastmath="algebraic")
def energy4_tuned(e_new: Mut[Array[f64]], work: Array[f64], e_cut: f64, emin: f64):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        e_new[i] = clamp_energy(e_new[i] + 0.5 * work[i], e_cut, emin)


@cb.kernel(checked=False, fastmath="algebraic")
def energy5_tuned(e_new: Mut[Array[f64]], delvc: Array[f64], pbvc: Array[f64], vnewc: Array[f64],
                  bvc: Array[f64], p_new: Array[f64], ql_old: Array[f64], qq_old: Array[f64], p_old: Array[f64],
                  q_old: Array[f64], p_half_step: Array[f64], q_new: Array[f64], rho0: f64, e_cut: f64,
                  emin: f64):
    i = cb.ABSOLUTE_POS
    if i < len(e_new):
        d = delvc[i]
        q_tilde = f64(0.0)
        if d <= 0.0:
            ssc = ssc_select((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0)
            q_tilde = ssc * ql_old[i] + qq_old[i]
        e = e_new[i] - (7.0 * (p_old[i] + q_old[i]) - 8.0 * (p_half_step[i] + q_new[i])
                        + (p_new[i] + q_tilde)) * d / 6.0
        e_new[i] = clamp_energy(e, e_cut, emin)


@cb.kernel(checked=False, fastmath="algebraic")
def energy6_tuned(q_new: Mut[Array[f64]], delvc: Array[f64], pbvc: Array[f64], e_new: Array[f64],
                  vnewc: Array[f64], bvc: Array[f64], p_new: Array[f64], ql_old: Array[f64], qq_old: Array[f64],
                  rho0: f64, q_cut: f64):
    i = cb.ABSOLUTE_POS
    if i < len(q_new):
        if delvc[i] <= 0.0:
            ssc = ssc_select((pbvc[i] * e_new[i] + vnewc[i] * vnewc[i] * bvc[i] * p_new[i]) / rho0)
            q = ssc * ql_old[i] + qq_old[i]
            q_new[i] = cb.select(cb.abs(q) < q_cut, 0.0, q)


PLAIN = (energy1, energy2, energy3, energy4, energy5, energy6)
TUNED = (energy1_tuned, energy2_tuned, energy3_tuned, energy4_tuned, energy5_tuned, energy6_tuned)
ON_LINES = (True, False, True, True, False, False)       # the branchy loops run per element


def loop_arguments(a: dict, s: dict) -> list[tuple]:
    """The arguments of the six loops, in order."""
    return [
        (a["e_new"], a["e_old"], a["delvc"], a["p_old"], a["q_old"], a["work"]),
        (a["q_new"], a["delvc"], a["compHalfStep"], a["pbvc"], a["e_new"], a["bvc"], a["pHalfStep"], a["ql_old"],
         a["qq_old"], s["rho0"]),
        (a["e_new"], a["delvc"], a["p_old"], a["q_old"], a["pHalfStep"], a["q_new"]),
        (a["e_new"], a["work"], s["e_cut"], s["emin"]),
        (a["e_new"], a["delvc"], a["pbvc"], a["vnewc"], a["bvc"], a["p_new"], a["ql_old"], a["qq_old"], a["p_old"],
         a["q_old"], a["pHalfStep"], a["q_new"], s["rho0"], s["e_cut"], s["emin"]),
        (a["q_new"], a["delvc"], a["pbvc"], a["e_new"], a["vnewc"], a["bvc"], a["p_new"], a["ql_old"], a["qq_old"],
         s["rho0"], s["q_cut"]),
    ]


def line_width(device, n: int) -> int:
    """Lines for the tuned loops: 4 doubles (a 256-bit vector) on CPUs, 2 (16-byte loads) on GPUs;
    1 where n does not divide."""
    width = 4 if device.properties.backend in ("cpu", "interp") else 2
    return width if n % width == 0 else 1


def as_lines(args: tuple, width: int) -> tuple:
    return tuple(cb.lines(v, width) if hasattr(v, "shape") and width > 1 else v for v in args)


class Energy(App):
    name = "ENERGY"
    default_reps = 130
    kernels_per_rep = 6
    outputs = ("e_new", "q_new")
    tuned_summary = ("loops 1, 3, 4 on Lines (4 f64 on CPU, 2 on GPU), 2, 5, 6 per element with their branches, "
                     "fastmath, autotuned cube sizes")
    tuned_rtol = 1e-10

    def set_up(self, target_size: int) -> Problem:
        n = target_size
        init = DataInit()
        arrays = {}
        for name in ARRAYS:
            arrays[name] = init.const(n, 0.0) if name in ("e_new", "q_new") else init.data(n)
        scalars = {name: init.scalar() for name in ("rho0", "e_cut", "emin", "q_cut")}
        return Problem(self.name, target_size, n, 6 * n, arrays, scalars, {},
                       bytes_per_rep=19 * 8 * n + 2 * 8 * n + 2 * 3 * 8 * n, flops_per_rep=55 * n)

    def reference(self, problem: Problem, a: dict) -> None:
        s = problem.scalars
        e_new, q_new, delvc = a["e_new"], a["q_new"], a["delvc"]
        p_old, q_old, p_new = a["p_old"], a["q_old"], a["p_new"]
        ph, bvc, pbvc, vnewc = a["pHalfStep"], a["bvc"], a["pbvc"], a["vnewc"]
        ql, qq = a["ql_old"], a["qq_old"]

        def ssc_fix(v):
            with np.errstate(invalid="ignore"):
                return np.where(v <= SSC_LOW, SSC_FLOOR, np.sqrt(v))

        def clamp(e):
            e = np.where(np.abs(e) < s["e_cut"], 0.0, e)
            return np.where(e < s["emin"], s["emin"], e)
        e_new[:] = a["e_old"] - 0.5 * delvc * (p_old + q_old) + 0.5 * a["work"]
        vhalf = 1.0 / (1.0 + a["compHalfStep"])
        ssc = ssc_fix((pbvc * e_new + vhalf * vhalf * bvc * ph) / s["rho0"])
        q_new[:] = np.where(delvc > 0.0, 0.0, ssc * ql + qq)
        e_new[:] = e_new + 0.5 * delvc * (3.0 * (p_old + q_old) - 4.0 * (ph + q_new))
        e_new[:] = clamp(e_new + 0.5 * a["work"])
        ssc = ssc_fix((pbvc * e_new + vnewc * vnewc * bvc * p_new) / s["rho0"])
        q_tilde = np.where(delvc > 0.0, 0.0, ssc * ql + qq)
        e_new[:] = clamp(e_new - (7.0 * (p_old + q_old) - 8.0 * (ph + q_new) + (p_new + q_tilde)) * delvc / 6.0)
        ssc = ssc_fix((pbvc * e_new + vnewc * vnewc * bvc * p_new) / s["rho0"])
        q = ssc * ql + qq
        q = np.where(np.abs(q) < s["q_cut"], 0.0, q)
        q_new[:] = np.where(delvc <= 0.0, q, q_new)

    def plain(self, problem, a, device, checked):
        n = problem.size
        return Rep([Launch(k, cubes(n, 256), 256, args) for k, args in zip(PLAIN, loop_arguments(a, problem.scalars))],
                   device, checked)

    def tuned(self, problem, a, device, checked):
        width = line_width(device, problem.size)
        launches = []
        for k, on_lines, args in zip(TUNED, ON_LINES, loop_arguments(a, problem.scalars)):
            w = width if on_lines else 1
            args = as_lines(args, w)
            count, dim = tune_dim(k, args, problem.size // w, device, checked)
            launches.append(Launch(k, count, dim, args))
        return Rep(launches, device, checked)
