"""DEL_DOT_VEC_2D: divergence of a nodal vector field on a 2-D quad mesh, gathered via real_zones."""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f64, i32, i64

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..setup_data import DataInit, domain_2d


@cb.kernel
def del_dot_vec_2d(real_zones: Array[i64], x: Array[f64], y: Array[f64], fx: Array[f64], fy: Array[f64],
                   div: Mut[Array[f64]], jp: i32, half: f64, ptiny: f64):
    ii = cb.ABSOLUTE_POS
    if ii < len(real_zones):
        i = real_zones[ii]
        x1, x2, x3, x4 = x[i + 1], x[i + 1 + jp], x[i + jp], x[i]
        y1, y2, y3, y4 = y[i + 1], y[i + 1 + jp], y[i + jp], y[i]
        fx1, fx2, fx3, fx4 = fx[i + 1], fx[i + 1 + jp], fx[i + jp], fx[i]
        fy1, fy2, fy3, fy4 = fy[i + 1], fy[i + 1 + jp], fy[i + jp], fy[i]
        xi = half * (x1 + x2 - x3 - x4)
        xj = half * (x2 + x3 - x4 - x1)
        yi = half * (y1 + y2 - y3 - y4)
        yj = half * (y2 + y3 - y4 - y1)
        fxi = half * (fx1 + fx2 - fx3 - fx4)
        fxj = half * (fx2 + fx3 - fx4 - fx1)
        fyi = half * (fy1 + fy2 - fy3 - fy4)
        fyj = half * (fy2 + fy3 - fy4 - fy1)
        rarea = 1.0 / (xi * yj - xj * yi + ptiny)
        dfxdx = rarea * (fxi * yj - fxj * yi)
        dfydy = rarea * (fyj * xi - fyi * xj)
        affine = (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4)
        div[i] = dfxdx + dfydy + affine


@cb.kernel(checked=False, fastmath="algebraic")
def del_dot_vec_2d_tuned(real_zones: Array[i64], x: Array[f64], y: Array[f64], fx: Array[f64], fy: Array[f64],
                         div: Mut[Array[f64]], jp: Comptime[int]):
    ii = cb.ABSOLUTE_POS
    if ii < len(real_zones):
        i = real_zones[ii]
        x1, x2, x3, x4 = x[i + 1], x[i + 1 + jp], x[i + jp], x[i]
        y1, y2, y3, y4 = y[i + 1], y[i + 1 + jp], y[i + jp], y[i]
        fx1, fx2, fx3, fx4 = fx[i + 1], fx[i + 1 + jp], fx[i + jp], fx[i]
        fy1, fy2, fy3, fy4 = fy[i + 1], fy[i + 1 + jp], fy[i + jp], fy[i]
        xi = 0.5 * (x1 + x2 - x3 - x4)
        xj = 0.5 * (x2 + x3 - x4 - x1)
        yi = 0.5 * (y1 + y2 - y3 - y4)
        yj = 0.5 * (y2 + y3 - y4 - y1)
        fxi = 0.5 * (fx1 + fx2 - fx3 - fx4)
        fxj = 0.5 * (fx2 + fx3 - fx4 - fx1)
        fyi = 0.5 * (fy1 + fy2 - fy3 - fy4)
        fyj = 0.5 * (fy2 + fy3 - fy4 - fy1)
        rarea = 1.0 / (xi * yj - xj * yi + 1e-20)
        div[i] = rarea * (fxi * yj - fxj * yi) + rarea * (fyj * xi - fyi * xj) + \
            (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4)


class DelDotVec2D(App):
    name = "DEL_DOT_VEC_2D"
    default_reps = 100
    outputs = ("div",)
    tuned_summary = "Comptime jp, fastmath, autotuned cube size"
    tuned_rtol = 1e-10

    def set_up(self, target_size: int) -> Problem:
        dom = domain_2d(target_size)
        init = DataInit()
        x = init.const(dom.nnalls, 0.0)
        y = init.const(dom.nnalls, 0.0)
        init.const(dom.n_real_zones, -1, np.int64)      # real_zones, then overwritten
        x[:], y[:] = dom.positions((0.2, 0.1))
        real_zones = dom.real_zones()
        xdot = init.data(dom.nnalls)
        ydot = init.data(dom.nnalls)
        div = init.const(dom.nnalls, 0.0)
        n = dom.n_real_zones
        return Problem(self.name, target_size, n, n,
                       dict(real_zones=real_zones, x=x, y=y, xdot=xdot, ydot=ydot, div=div),
                       dict(half=0.5, ptiny=1e-20), dict(jp=dom.jp),
                       bytes_per_rep=8 * n + 4 * 8 * dom.n_real_nodes + 8 * n, flops_per_rep=54 * n)

    def reference(self, problem: Problem, a: dict) -> None:
        # The body is elementwise in the zone index i: evaluate it for every i from the first to
        # the last real zone with contiguous slices (fast), then keep the real zones' values.
        zones, jp = a["real_zones"], problem.params["jp"]
        half, ptiny = problem.scalars["half"], problem.scalars["ptiny"]
        lo, hi = int(zones[0]), int(zones[-1]) + 1

        def corners(v):
            return v[lo + 1:hi + 1], v[lo + 1 + jp:hi + 1 + jp], v[lo + jp:hi + jp], v[lo:hi]
        x1, x2, x3, x4 = corners(a["x"])
        y1, y2, y3, y4 = corners(a["y"])
        fx1, fx2, fx3, fx4 = corners(a["xdot"])
        fy1, fy2, fy3, fy4 = corners(a["ydot"])
        xi, xj = half * (x1 + x2 - x3 - x4), half * (x2 + x3 - x4 - x1)
        yi, yj = half * (y1 + y2 - y3 - y4), half * (y2 + y3 - y4 - y1)
        fxi, fxj = half * (fx1 + fx2 - fx3 - fx4), half * (fx2 + fx3 - fx4 - fx1)
        fyi, fyj = half * (fy1 + fy2 - fy3 - fy4), half * (fy2 + fy3 - fy4 - fy1)
        rarea = 1.0 / (xi * yj - xj * yi + ptiny)
        every = rarea * (fxi * yj - fxj * yi) + rarea * (fyj * xi - fyi * xj) + \
            (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4)
        a["div"][zones] = every[zones - lo]

    def plain(self, problem, a, device, checked):
        n = problem.size
        args = (a["real_zones"], a["x"], a["y"], a["xdot"], a["ydot"], a["div"], problem.params["jp"],
                problem.scalars["half"], problem.scalars["ptiny"])
        return Rep([Launch(del_dot_vec_2d, cubes(n, 256), 256, args)], device, checked)

    def tuned(self, problem, a, device, checked):
        args = (a["real_zones"], a["x"], a["y"], a["xdot"], a["ydot"], a["div"], problem.params["jp"])
        count, dim = tune_dim(del_dot_vec_2d_tuned, args, problem.size, device, checked)
        return Rep([Launch(del_dot_vec_2d_tuned, count, dim, args)], device, checked)
