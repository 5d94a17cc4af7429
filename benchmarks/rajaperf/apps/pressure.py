"""PRESSURE: two dependent element-wise loops of an EOS pressure update with clamps.

With RAJAPerf's data ``vnewc >= eosvmax`` everywhere, so ``p_new`` ends at ``pmin``; the tests also
run the kernels on random data.
"""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Mut, f64

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..setup_data import DataInit
from .energy import as_lines, line_width


@cb.kernel
def pressure1(bvc: Mut[Array[f64]], compression: Array[f64], cls: f64):
    i = cb.ABSOLUTE_POS
    if i < len(bvc):
        bvc[i] = cls * (compression[i] + 1.0)


@cb.kernel
def pressure2(p_new: Mut[Array[f64]], bvc: Array[f64], e_old: Array[f64], vnewc: Array[f64], p_cut: f64,
              eosvmax: f64, pmin: f64):
    i = cb.ABSOLUTE_POS
    if i < len(p_new):
        p = bvc[i] * e_old[i]
        if cb.abs(p) < p_cut:
            p = 0.0
        if vnewc[i] >= eosvmax:
            p = 0.0
        if p < pmin:
            p = pmin
        p_new[i] = p


@cb.kernel(checked=False, fastmath="algebraic")
def pressure1_tuned(bvc: Mut[Array[f64]], compression: Array[f64], cls: f64):
    i = cb.ABSOLUTE_POS
    if i < len(bvc):
        bvc[i] = cls * (compression[i] + 1.0)


@cb.kernel(checked=False, fastmath="algebraic")
def pressure2_tuned(p_new: Mut[Array[f64]], bvc: Array[f64], e_old: Array[f64], vnewc: Array[f64], p_cut: f64,
                    eosvmax: f64, pmin: f64):
    i = cb.ABSOLUTE_POS
    if i < len(p_new):
        p = bvc[i] * e_old[i]
        p = cb.select(cb.abs(p) < p_cut, 0.0, p)
        p = cb.select(vnewc[i] >= eosvmax, 0.0, p)
        p_new[i] = cb.select(p < pmin, pmin, p)


class Pressure(App):
    name = "PRESSURE"
    default_reps = 700
    kernels_per_rep = 2
    outputs = ("p_new",)
    written = ("p_new", "bvc")
    tuned_summary = "branch-free selects on Lines (4 f64 on CPU, 2 on GPU), fastmath, autotuned cube sizes"

    def set_up(self, target_size: int) -> Problem:
        n = target_size
        init = DataInit()
        arrays = {"compression": init.data(n), "bvc": init.data(n), "p_new": init.const(n, 0.0),
                  "e_old": init.data(n), "vnewc": init.data(n)}
        scalars = {name: init.scalar() for name in ("cls", "p_cut", "pmin", "eosvmax")}
        return Problem(self.name, target_size, n, 2 * n, arrays, scalars, {},
                       bytes_per_rep=4 * 8 * n + 2 * 8 * n, flops_per_rep=3 * n)

    def reference(self, problem: Problem, a: dict) -> None:
        s = problem.scalars
        a["bvc"][:] = s["cls"] * (a["compression"] + 1.0)
        p = a["bvc"] * a["e_old"]
        p = np.where(np.abs(p) < s["p_cut"], 0.0, p)
        p = np.where(a["vnewc"] >= s["eosvmax"], 0.0, p)
        a["p_new"][:] = np.where(p < s["pmin"], s["pmin"], p)

    def _arguments(self, a: dict, s: dict) -> list[tuple]:
        return [(a["bvc"], a["compression"], s["cls"]),
                (a["p_new"], a["bvc"], a["e_old"], a["vnewc"], s["p_cut"], s["eosvmax"], s["pmin"])]

    def plain(self, problem, a, device, checked):
        n = problem.size
        return Rep([Launch(k, cubes(n, 256), 256, args)
                    for k, args in zip((pressure1, pressure2), self._arguments(a, problem.scalars))], device, checked)

    def tuned(self, problem, a, device, checked):
        width = line_width(device, problem.size)
        launches = []
        for k, args in zip((pressure1_tuned, pressure2_tuned), self._arguments(a, problem.scalars)):
            args = as_lines(args, width)
            count, dim = tune_dim(k, args, problem.size // width, device, checked)
            launches.append(Launch(k, count, dim, args))
        return Rep(launches, device, checked)
