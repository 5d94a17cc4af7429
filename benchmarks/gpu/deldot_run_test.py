"""Where DEL_DOT_VEC_2D's checked plain port loses its last percent against Base_CUDA: the test a
checked run makes on the zone it loaded (docs/design.md, "checks per run"), as a branch or as a
clamp.

    python benchmarks/gpu/deldot_run_test.py [--samples 21] [--sizes default,32x]   # CuPy and an NVIDIA GPU

Every variant reads the corners through one base pointer and ``real_zones`` as cubepy's port does
(``x[i + 1 + jp]``), 256 threads a block, f64; GPU time per launch with the suite's queued timer
(`benchmarks.rajaperf.timing.QueuedEventTimer`), interleaved, median of ``--samples``:

- ``plain``: no test (what cubepy's unchecked port is);
- ``branch``: ``if (zone and zone + jp in range) {loads} else {each load checked}`` (what the
  checked port runs on CUDA: the run versioned on its test);
- ``branch, no checked side``: the same test, an error flag on the other side (the test's cost
  without the second copy of the body);
- ``clamp``: the loads from ``ok ? zone : 0`` unconditionally, the store and the error flag under
  ``ok`` (no branch before the loads);
- cubepy's own plain port, checked and unchecked, and Base_CUDA's kernel (sixteen shifted
  pointers), as the suite runs them.

Each variant's output is poisoned, then checked against NumPy. On an H100 (2026-12-06) every form
of the test cost at most 0.3%; the checked port's extra percent was its store's own check, which
now joins the run's test (docs/benchmarks.md, "The twenty-third session").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: benchmarks.rajaperf
from benchmarks.rajaperf.apps.del_dot_vec_2d import DelDotVec2D  # noqa: E402
from benchmarks.rajaperf.peers.base_cuda import BaseCuda  # noqa: E402
from benchmarks.rajaperf.timing import QueuedEventTimer, interleaved, print_against  # noqa: E402

SOURCE = r'''
typedef long long I;
typedef unsigned long long U;
#define PARAMS const I* rz, const double* x, const double* y, const double* fx, const double* fy, double* div, \
               int jp, double half, double ptiny, I n
#define CORNERS(a, t, LOAD) double a##1 = LOAD(a, t + 1), a##2 = LOAD(a, t + 1 + jp), a##3 = LOAD(a, t + jp), \
                                   a##4 = LOAD(a, t)
#define PLAIN(a, k) a[k]
#define CHECKED(a, k) ((U)(k) < (U)lim ? a[k] : (atomicOr(err, 1), 0.0))
#define BODY(t, LOAD) CORNERS(x, t, LOAD); CORNERS(y, t, LOAD); CORNERS(fx, t, LOAD); CORNERS(fy, t, LOAD); \
  double xi = half * (x1 + x2 - x3 - x4), xj = half * (x2 + x3 - x4 - x1); \
  double yi = half * (y1 + y2 - y3 - y4), yj = half * (y2 + y3 - y4 - y1); \
  double fxi = half * (fx1 + fx2 - fx3 - fx4), fxj = half * (fx2 + fx3 - fx4 - fx1); \
  double fyi = half * (fy1 + fy2 - fy3 - fy4), fyj = half * (fy2 + fy3 - fy4 - fy1); \
  double rarea = 1.0 / (xi * yj - xj * yi + ptiny); \
  double v = rarea * (fxi * yj - fxj * yi) + rarea * (fyj * xi - fyi * xj) + \
             (fy1 + fy2 + fy3 + fy4) / (y1 + y2 + y3 + y4)
#define ZONE I ii = (I)blockIdx.x * blockDim.x + threadIdx.x; if (ii >= n) return; I t = rz[ii]; \
  bool ok = (U)t < (U)(lim - 1) && (U)(t + jp) < (U)(lim - 1)

extern "C" __global__ void __launch_bounds__(256) dd_plain(PARAMS) {
  I ii = (I)blockIdx.x * blockDim.x + threadIdx.x;
  if (ii < n) { I t = rz[ii]; BODY(t, PLAIN); div[t] = v; }
}
extern "C" __global__ void __launch_bounds__(256) dd_branch(PARAMS, I lim, int* err) {
  ZONE;
  if (ok) { BODY(t, PLAIN); div[t] = v; }
  else { BODY(t, CHECKED); if ((U)t < (U)lim) div[t] = v; else atomicOr(err, 1); }
}
extern "C" __global__ void __launch_bounds__(256) dd_branch_flag(PARAMS, I lim, int* err) {
  ZONE;
  if (ok) { BODY(t, PLAIN); div[t] = v; } else atomicOr(err, 1);
}
extern "C" __global__ void __launch_bounds__(256) dd_clamp(PARAMS, I lim, int* err) {
  ZONE;
  I s = ok ? t : 0;
  BODY(s, PLAIN);
  if (ok) div[t] = v; else atomicOr(err, 1);
}
'''

SIZES = {"default": 1_000_000, "32x": 32_000_000}


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=21)
    parser.add_argument("--sizes", default="default,32x")
    opts = parser.parse_args()
    dev = cb.device("cuda")
    module = cp.RawModule(code=SOURCE, options=("--std=c++17",))
    app, base_cuda = DelDotVec2D(), BaseCuda()
    timer = QueuedEventTimer(dev)
    print(f"{dev.properties.name}; DEL_DOT_VEC_2D; GPU time per launch (queued), median of {opts.samples}")
    for size in opts.sizes.split(","):
        problem = app.set_up(SIZES[size])
        host, want = problem.copy_arrays(), problem.copy_arrays()
        app.reference(problem, want)
        a = {k: cp.asarray(v) for k, v in host.items()}
        n, jp = problem.size, problem.params["jp"]
        lim = min(a[k].size for k in ("x", "y", "xdot", "ydot"))
        err = cp.zeros(1, cp.int32)
        common = (a["real_zones"], a["x"], a["y"], a["xdot"], a["ydot"], a["div"], np.int32(jp),
                  np.float64(problem.scalars["half"]), np.float64(problem.scalars["ptiny"]), np.int64(n))
        grid = ((n + 255) // 256,)
        raw = {name: module.get_function(name) for name in ("dd_plain", "dd_branch", "dd_branch_flag", "dd_clamp")}
        variants = {
            "plain": lambda: raw["dd_plain"](grid, (256,), common),
            "branch": lambda: raw["dd_branch"](grid, (256,), (*common, np.int64(lim), err)),
            "branch, no checked side": lambda: raw["dd_branch_flag"](grid, (256,), (*common, np.int64(lim), err)),
            "clamp": lambda: raw["dd_clamp"](grid, (256,), (*common, np.int64(lim), err)),
            "cubepy plain, unchecked": app.plain(problem, a, dev, checked=False),
            "cubepy plain, checked": app.plain(problem, a, dev, checked=True),
            "Base_CUDA": base_cuda.bind(app.name, problem, a),
        }
        for name, launch in variants.items():
            a["div"][...] = cp.nan                        # poisoned: an unwritten zone fails the check
            launch()
            dev.synchronize()
            got = cp.asnumpy(a["div"])[host["real_zones"]]
            if not np.allclose(got, want["div"][host["real_zones"]], rtol=1e-12) or int(err[0]):
                raise SystemExit(f"{name}: wrong output at {size}")
        samples = interleaved(timer, {name: (launch, 100) for name, launch in variants.items()}, opts.samples)
        print(f"{size} ({n} zones)")
        print_against(samples, "Base_CUDA", 28)


if __name__ == "__main__":
    main()
