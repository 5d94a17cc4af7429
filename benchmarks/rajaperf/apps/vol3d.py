"""VOL3D: hexahedral zone volumes from nodal coordinates (3-D 8-corner stencil, no indirection)."""

from __future__ import annotations

import cubepy as cb
from cubepy import Array, Comptime, Mut, f64, i32

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..setup_data import DataInit, domain_3d


@cb.func
def triple(ax, ay, az, bx, by, bz, cx, cy, cz):
    """``a . (b x c)`` in the RAJAPerf macro's operation order."""
    return ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)


@cb.kernel
def vol3d(x: Array[f64], y: Array[f64], z: Array[f64], vol: Mut[Array[f64]], jp: i32, kp: i32,
          ibegin: i32, iend: i32, vnormq: f64):
    i = ibegin + cb.ABSOLUTE_POS
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
        v = triple(x71 + x60, y71 + y60, z71 + z60, x72, y72, z72, x30, y30, z30)
        v += triple(x72 + x50, y72 + y50, z72 + z50, x74, y74, z74, x60, y60, z60)
        v += triple(x74 + x30, y74 + y30, z74 + z30, x71, y71, z71, x50, y50, z50)
        vol[i] = v * vnormq


@cb.kernel(checked=False, fastmath="algebraic")
def vol3d_tuned(x: Array[f64], y: Array[f64], z: Array[f64], vol: Mut[Array[f64]], jp: Comptime[int],
                kp: Comptime[int], ibegin: Comptime[int], iend: Comptime[int]):
    i = ibegin + cb.ABSOLUTE_POS
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
        v = triple(x71 + x60, y71 + y60, z71 + z60, x72, y72, z72, x30, y30, z30)
        v += triple(x72 + x50, y72 + y50, z72 + z50, x74, y74, z74, x60, y60, z60)
        v += triple(x74 + x30, y74 + y30, z74 + z30, x71, y71, z71, x50, y50, z50)
        vol[i] = v * 0.083333333333333333


class Vol3D(App):
    name = "VOL3D"
    default_reps = 100
    outputs = ("vol",)
    tuned_summary = "Comptime strides and bounds, fastmath, autotuned cube size"
    tuned_rtol = 1e-9

    def set_up(self, target_size: int) -> Problem:
        dom = domain_3d(target_size)
        init = DataInit()
        x, y, z = (init.const(dom.nnalls, 0.0) for _ in range(3))
        x[:], y[:], z[:] = dom.positions((0.3, 0.2, 0.1))
        vol = init.const(dom.nnalls, 0.0)
        its = dom.lpz + 1 - dom.fpz
        return Problem(self.name, target_size, dom.n_real_zones, its, dict(x=x, y=y, z=z, vol=vol),
                       dict(vnormq=0.083333333333333333),
                       dict(jp=dom.jp, kp=dom.kp, ibegin=dom.fpz, iend=dom.lpz + 1),
                       bytes_per_rep=3 * 8 * (its + 1 + dom.jp + dom.kp) + 8 * its, flops_per_rep=72 * its)

    def reference(self, problem: Problem, a: dict) -> None:
        p = problem.params
        jp, kp, lo, hi = p["jp"], p["kp"], p["ibegin"], p["iend"]
        offsets = (0, 1, jp, 1 + jp, kp, 1 + kp, jp + kp, 1 + jp + kp)

        def corners(v):
            return [v[lo + o:hi + o] for o in offsets]
        (x0, x1, x2, x3, x4, x5, x6, x7), (y0, y1, y2, y3, y4, y5, y6, y7), (z0, z1, z2, z3, z4, z5, z6, z7) = (
            corners(a["x"]), corners(a["y"]), corners(a["z"]))
        x71, x72, x74, x30, x50, x60 = x7 - x1, x7 - x2, x7 - x4, x3 - x0, x5 - x0, x6 - x0
        y71, y72, y74, y30, y50, y60 = y7 - y1, y7 - y2, y7 - y4, y3 - y0, y5 - y0, y6 - y0
        z71, z72, z74, z30, z50, z60 = z7 - z1, z7 - z2, z7 - z4, z3 - z0, z5 - z0, z6 - z0

        def tp(ax, ay, az, bx, by, bz, cx, cy, cz):
            return ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
        v = tp(x71 + x60, y71 + y60, z71 + z60, x72, y72, z72, x30, y30, z30)
        v += tp(x72 + x50, y72 + y50, z72 + z50, x74, y74, z74, x60, y60, z60)
        v += tp(x74 + x30, y74 + y30, z74 + z30, x71, y71, z71, x50, y50, z50)
        a["vol"][lo:hi] = v * problem.scalars["vnormq"]

    def plain(self, problem, a, device, checked):
        p = problem.params
        args = (a["x"], a["y"], a["z"], a["vol"], p["jp"], p["kp"], p["ibegin"], p["iend"],
                problem.scalars["vnormq"])
        return Rep([Launch(vol3d, cubes(problem.its_per_rep, 256), 256, args)], device, checked)

    def tuned(self, problem, a, device, checked):
        p = problem.params
        args = (a["x"], a["y"], a["z"], a["vol"], p["jp"], p["kp"], p["ibegin"], p["iend"])
        count, dim = tune_dim(vol3d_tuned, args, problem.its_per_rep, device, checked)
        return Rep([Launch(vol3d_tuned, count, dim, args)], device, checked)
