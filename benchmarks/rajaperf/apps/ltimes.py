"""LTIMES: the discrete-ordinates "L times psi" contraction, phi(z,g,m) += ell(m,d) * psi(z,g,d).

``phi`` accumulates across reps, so RAJAPerf's checksum is that of exactly 50 reps from zero.
"""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy import Array, Comptime, Mut, f64

from ..app import App, Launch, Problem, Rep, cubes, tune_dim
from ..memory import HostMemory
from ..setup_data import DataInit

NUM_D, NUM_G, NUM_M = 64, 32, 25
BLOCK = (32, 4, 2)                   # RAJAPerf's Base_CUDA block over (m, g, z)


@cb.kernel
def ltimes(phi: Mut[Array[f64]], ell: Array[f64], psi: Array[f64]):
    m = cb.ABSOLUTE_POS_X
    g = cb.ABSOLUTE_POS_Y
    z = cb.ABSOLUTE_POS_Z
    if m < phi.shape[2] and g < phi.shape[1] and z < phi.shape[0]:
        s = phi[z, g, m]
        for d in range(psi.shape[2]):
            s += ell[m, d] * psi[z, g, d]
        phi[z, g, m] = s


@cb.kernel(checked=False, fastmath="algebraic")
def ltimes_tuned(phi: Mut[Array[f64]], ell: Array[f64], psi: Array[f64], nd: Comptime[int], ng: Comptime[int],
                 nm: Comptime[int]):
    """One cube per (z, block of CUBE_DIM_Y groups): ell (transposed, so lanes over m read
    consecutive words) and the cube's rows of psi are staged in shared memory."""
    ell_t = cb.SharedMemory(f64, (nd, 32))
    rows = cb.SharedMemory(f64, (cb.CUBE_DIM_Y, nd))
    unit = cb.UNIT_POS_X + cb.UNIT_POS_Y * 32
    units = 32 * cb.CUBE_DIM_Y
    z = cb.CUBE_POS_Z
    g0 = cb.CUBE_POS_Y * cb.CUBE_DIM_Y
    for f in range(unit, nm * nd, units):
        ell_t[f % nd, f // nd] = ell[f // nd, f % nd]
    for f in range(unit, cb.CUBE_DIM_Y * nd, units):
        rows[f // nd, f % nd] = psi[z, g0 + f // nd, f % nd]
    cb.sync_cube()
    m = cb.UNIT_POS_X
    g = cb.UNIT_POS_Y
    if m < nm and g0 + g < ng:
        s = 0.0
        for d in cb.unroll(range(nd)):
            s += ell_t[d, m] * rows[g, d]
        phi[z, g0 + g, m] += s


class Ltimes(App):
    name = "LTIMES"
    default_reps = 50
    outputs = ("phi",)
    accumulates = True
    tuned_summary = "Comptime extents, ell and psi rows staged in SharedMemory, fastmath, autotuned groups per cube"
    tuned_rtol = 1e-10

    def set_up(self, target_size: int) -> Problem:
        nz = max((target_size + NUM_D * NUM_G // 2) // (NUM_D * NUM_G), 1)
        init = DataInit()
        phi = init.const(nz * NUM_G * NUM_M, 0.0).reshape(nz, NUM_G, NUM_M)
        ell = init.data(NUM_M * NUM_D).reshape(NUM_M, NUM_D)
        psi = init.data(nz * NUM_G * NUM_D).reshape(nz, NUM_G, NUM_D)
        return Problem(self.name, target_size, psi.size, phi.size, dict(phi=phi, ell=ell, psi=psi), {},
                       dict(num_z=nz, num_g=NUM_G, num_m=NUM_M, num_d=NUM_D),
                       bytes_per_rep=8 * (ell.size + psi.size) + 2 * 8 * phi.size,
                       flops_per_rep=2 * nz * NUM_G * NUM_M * NUM_D)

    def reference(self, problem: Problem, a: dict) -> None:
        phi, ell, psi = a["phi"], a["ell"], a["psi"]
        for d in range(psi.shape[2]):       # phi += ell * psi one d at a time, as the C loop adds
            phi += ell[None, None, :, d] * psi[:, :, d, None]

    def poison(self, arrays: dict, memory=None) -> None:
        # phi accumulates, so a check starts it from values a kernel that overwrites would lose
        # (made on the host: not every device array library takes strided updates)
        phi = arrays["phi"]
        values = np.full(phi.shape, 1.5)
        values[::2] -= 3.25
        (memory or HostMemory()).assign(phi, values)

    def plain(self, problem, a, device, checked):
        p = problem.params
        count = (cubes(p["num_m"], BLOCK[0]), cubes(p["num_g"], BLOCK[1]), cubes(p["num_z"], BLOCK[2]))
        args = (a["phi"], a["ell"], a["psi"])
        return Rep([Launch(ltimes, count, BLOCK, args)], device, checked)

    def tuned(self, problem, a, device, checked):
        p = problem.params
        args = (a["phi"], a["ell"], a["psi"], p["num_d"], p["num_g"], p["num_m"])

        def grid(_args, dim):
            return (1, cubes(p["num_g"], dim[1]), p["num_z"])
        count, dim = tune_dim(ltimes_tuned, args, 0, device, checked,
                              dims=[(32, 2, 1), (32, 4, 1), (32, 8, 1), (32, 16, 1)], grid=grid)
        return Rep([Launch(ltimes_tuned, count, dim, args)], device, checked)
