"""FIR: a 16-tap FIR filter (a 1-D window gather with constant coefficients)."""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f64

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..setup_data import DataInit

COEFFICIENTS = (3.0, -1.0, -1.0, -1.0, -1.0, 3.0, -1.0, -1.0, -1.0, -1.0, 3.0, -1.0, -1.0, -1.0, -1.0, 3.0)


@cb.kernel
def fir(out: Mut[Array[f64]], inp: Array[f64], coeff: Array[f64]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        s = 0.0
        for j in range(len(coeff)):
            s += coeff[j] * inp[i + j]
        out[i] = s


@cb.kernel(checked=False, fastmath="algebraic")
def fir_tuned(out: Mut[Array[f64]], inp: Array[f64], taps: Comptime[tuple]):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        s = 0.0
        for j in cb.unroll(range(len(taps))):
            s += taps[j] * inp[i + j]
        out[i] = s


class Fir(App):
    name = "FIR"
    default_reps = 160
    outputs = ("out",)
    tuned_summary = "taps as a Comptime tuple, unrolled, fastmath, autotuned cube size"

    def set_up(self, target_size: int) -> Problem:
        n = target_size
        taps = len(COEFFICIENTS)
        init = DataInit()
        arrays = {"in": init.rand_value(n + taps - 1), "out": init.const(n, 0.0),
                  "coeff": np.array(COEFFICIENTS)}
        return Problem(self.name, target_size, n, n, arrays, {}, {"coefflen": taps},
                       bytes_per_rep=8 * taps + 8 * (n + taps - 1) + 8 * n, flops_per_rep=2 * taps * n)

    def reference(self, problem: Problem, a: dict) -> None:
        n, s = problem.size, 0.0
        for j, c in enumerate(a["coeff"]):
            s = s + c * a["in"][j:j + n]
        a["out"][:] = s

    def plain(self, problem, a, device, checked):
        # the taps as the host array they are set up as: a GPU backend passes a small read-only
        # host array by value, in the launch's parameters (CUDA: the constant bank, as Base_CUDA's
        # __constant__ taps), where a device copy would be read from global memory
        args = (a["out"], a["in"], problem.arrays["coeff"])
        return Rep([Launch(fir, cubes(problem.size, 256), 256, args)], device, checked)

    def tuned(self, problem, a, device, checked):
        args = (a["out"], a["in"], COEFFICIENTS)
        count, dim = tune_dim(fir_tuned, args, problem.size, device, checked)
        return Rep([Launch(fir_tuned, count, dim, args)], device, checked)
