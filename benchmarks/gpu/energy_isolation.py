"""Where ENERGY's last 0.2% at 32x goes (docs/benchmarks.md): each of its six kernels alone, the
index arithmetic crossed with the code around it, in one process.

    python benchmarks/gpu/energy_isolation.py [--sizes 32x,default] [--samples 21]   # CuPy, NVIDIA GPU

cubepy's plain ENERGY computes ``ABSOLUTE_POS`` as a 32-bit int from the 3-D cube position;
Base_CUDA as a 64-bit ``Index_type`` from ``blockIdx.x`` alone. Per kernel, GPU time per launch
with the suite's queued timer (`benchmarks.rajaperf.timing.QueuedEventTimer`), every variant
interleaved, median of ``--samples``, 256 threads a block, RAJAPerf's data:

- Base_CUDA's kernel (``base_cuda.cu``, CuPy's ``RawModule``, NVRTC's defaults as the suite's peer);
- the same source with cubepy's index: a 32-bit int from ``blockIdx.x`` alone (``int index``),
  a 32-bit int from the 3-D position as cubepy computes it (``cubepy's index``), and the same with
  the y and z terms added only where the grid has more than one block along y or z (a uniform
  test of ``gridDim``, which NVCC turns into predicated reads of ``blockIdx.y`` and ``.z``);
- cubepy's port, unchecked and checked, through cubepy's launcher;
- cubepy's unchecked CUDA source (`CompiledKernel.source`) built by ``RawModule`` with cubepy's
  NVRTC options and launched raw (``cuLaunchKernel``): built as cubepy builds it for a launch of
  one cube along y and z (``-DCB_ONE_CUBE_Y=1 -DCB_ONE_CUBE_Z=1``: the position from
  ``blockIdx.x`` alone; "1-D build"), built for any launch (the position from ``blockIdx.x``,
  ``.y`` and ``.z``, as cubepy built every launch before the twenty-ninth session; "3-D build"),
  and that 3-D build with its index replaced by Base_CUDA's 64-bit one from ``blockIdx.x``.

Then the six kernels in order (one rep, as the suite times it), each variant's six in turn, so
that what one kernel leaves in L2 for the next is in the figure as well.

Before it is timed, each variant runs once from the set-up state (``delvc`` of both signs, so
that every branch runs; the output poisoned where the kernel writes it whole) and is compared
with Base_CUDA's output from the same state (relative to the output's largest magnitude,
within 1e-12: Base_CUDA contracts to FMA, cubepy does not).
"""

from __future__ import annotations

import argparse
import ctypes
import re
import sys
from pathlib import Path

import numpy as np

import cubepy as cb

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))      # the repository root: benchmarks.rajaperf
from cubepy.backends.cstyle import CUDA, render  # noqa: E402
from cubepy.backends.cstyle.flags import CUDA_FP_FLAGS  # noqa: E402

from benchmarks.rajaperf.app import POISON  # noqa: E402
from benchmarks.rajaperf.apps import APPS  # noqa: E402
from benchmarks.rajaperf.peers.base_cuda import SOURCE, Ptr, launches  # noqa: E402
from benchmarks.rajaperf.timing import QueuedEventTimer, interleaved, print_against  # noqa: E402

SIZES = {"default": 1, "32x": 32}
WRITES = {"energycalc1": "e_new", "energycalc2": "q_new", "energycalc3": "e_new", "energycalc4": "e_new",
          "energycalc5": "e_new", "energycalc6": "q_new"}
POISONED = ("energycalc1", "energycalc2")       # write every element of their output without reading it
BASE_INDEX = "Index_type i = (Index_type)blockIdx.x * blockDim.x + threadIdx.x;"
INDEXES = {
    "int index": "int i = blockIdx.x * blockDim.x + threadIdx.x;",
    "cubepy's index": "int i = (int)(blockIdx.x * blockDim.x + threadIdx.x"
                      " + gridDim.x * blockDim.x * (blockIdx.y + gridDim.y * blockIdx.z));",
    "cubepy's index, y and z behind a test": "int cube = blockIdx.x; if (gridDim.y != 1 || gridDim.z != 1) "
                                              "cube += gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z); "
                                              "int i = cube * blockDim.x + threadIdx.x;",
}
RTOL = 1e-12


def base_variants(cp) -> dict[str, object]:
    """Base_CUDA's module and the module of each index variant."""
    text = SOURCE.read_text()
    assert text.count(BASE_INDEX) >= 6, "base_cuda.cu's ENERGY index line changed"
    modules = {"Base_CUDA": cp.RawModule(code=text)}
    for name, line in INDEXES.items():
        modules[f"Base_CUDA, {name}"] = cp.RawModule(code=text.replace(BASE_INDEX, line))
    return modules


def with_base_index(source: str) -> str:
    """cubepy's source with the index its bound test compares replaced by Base_CUDA's 64-bit one."""
    bound = re.search(r"const bool v\d+ = (v\d+) < v\d+;", source)
    index = bound.group(1)
    source, n = re.subn(rf"const int {index} = [^;]*;",
                        f"const long long {index} = (long long)blockIdx.x * blockDim.x + threadIdx.x;", source)
    assert n == 1, "the index's definition was not found"
    return source


def raw_cubepy(cp, source: str, name: str, launch, count: int, defines: tuple = ()):
    """cubepy's source built by RawModule with cubepy's NVRTC options and ``defines``, launched
    raw: each array as its pointer and its extent (int), each scalar as a double, in the kernel's
    parameter order."""
    options = ("--std=c++17", "-default-device", "-minimal", *CUDA_FP_FLAGS[None], *defines)
    function = cp.RawModule(code=source, options=options).get_function(name)
    function = getattr(function, "kernel", function)          # the driver-level Function
    values = []
    for arg in launch.args:
        if hasattr(arg, "data"):
            values += [ctypes.c_uint64(arg.data.ptr), ctypes.c_int32(arg.size)]
        else:
            values.append(ctypes.c_double(arg))
    declared = source.split(f" {name}(", 1)[1].split(")", 1)[0].count(",") + 1
    assert declared == len(values), f"{name}: {declared} parameters, {len(values)} packed"
    pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))

    def run() -> None:
        cp.cuda.driver.launchKernel(function.ptr, count, 1, 1, 256, 1, 1, 0, cp.cuda.get_current_stream().ptr,
                                    ctypes.addressof(pointers), 0)
    run.keep = (values, pointers, function)
    return run


def variants_of(cp, dev, modules, problem, arrays, k: int) -> dict[str, object]:
    app = APPS["ENERGY"]
    base = launches("ENERGY", problem, arrays)[k]
    args = tuple(np.uint64(a.array.data.ptr + a.offset * a.array.itemsize) if isinstance(a, Ptr) else a
                 for a in base.args)
    out = {name: _raw(module.get_function(base.function), base.grid, base.block, args)
           for name, module in modules.items()}
    unchecked, checked = (app.plain(problem, arrays, dev, c).launches[k] for c in (False, True))
    for label, launch, flag in (("cubepy unchecked", unchecked, False), ("cubepy checked", checked, True)):
        launcher = launch.kernel[launch.count, launch.dim]
        out[label] = lambda launcher=launcher, launch=launch, flag=flag: launcher(*launch.args, device=dev,
                                                                                  checked=flag)
    compiled = unchecked.kernel.compile(*unchecked.args, dim=unchecked.dim, count=unchecked.count, device=dev,
                                        checked=False)
    rendered = render(compiled.ir_module, CUDA)                 # what compiled.source() is on cuda
    source, name = rendered.source, unchecked.kernel.__name__
    one_cube = rendered.one_cube_options(rendered.one_cube((unchecked.count, 1, 1)))
    out["cubepy's source, raw, 1-D build"] = raw_cubepy(cp, source, name, unchecked, unchecked.count, one_cube)
    out["cubepy's source, raw, 3-D build"] = raw_cubepy(cp, source, name, unchecked, unchecked.count)
    out["cubepy's source, Base_CUDA's index"] = raw_cubepy(cp, with_base_index(source), name, unchecked,
                                                           unchecked.count)
    return out


def _raw(function, grid, block, args):
    return lambda: function(grid, block, args)


def _in_order(runs):
    def rep() -> None:
        for run in runs:
            run()
    return rep


def check(cp, dev, variants, problem, arrays, function: str) -> None:
    """Each variant from one state, against Base_CUDA's output from it. The state is the set-up's
    with ``delvc`` of both signs (RAJAPerf's is positive everywhere, so energycalc2's and 5's
    square-root branches and energycalc6's store would never run), and ``e_new`` and ``qq_old``
    random in [0, 1) (with RAJAPerf's, every q that energycalc6 stores is under ``q_cut``, so
    it stores the zeros the set-up has); the output is poisoned where
    the kernel writes every element without reading it (energycalc1 and 2)."""
    written, poison = WRITES[function], function in POISONED
    rng, n = np.random.default_rng(7), problem.arrays["delvc"].size
    state = dict(problem.arrays, delvc=rng.uniform(-1.0, 1.0, n), e_new=rng.uniform(0.0, 1.0, n),
                 qq_old=rng.uniform(0.0, 1.0, n))
    results = {}
    for label, run in variants.items():
        for key, host in state.items():
            arrays[key].set(host)
        if poison:
            arrays[written].fill(POISON)
        run()
        dev.synchronize()
        results[label] = cp.asnumpy(arrays[written])
    for key, host in problem.arrays.items():        # RAJAPerf's data again, for the timing
        arrays[key].set(host)
    want = results["Base_CUDA"]
    assert not np.array_equal(want, state[written]), f"{function} wrote nothing to check"
    scale = float(np.max(np.abs(want))) or 1.0
    for label, got in results.items():
        assert not np.isnan(got).any(), f"{label} left elements of {written} unwritten"
        worst = float(np.max(np.abs(got - want))) / scale
        assert worst <= RTOL, f"{label}: {written} differs from Base_CUDA's by {worst:.2e} of its largest magnitude"


def main() -> None:
    import cupy as cp

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32x,default")
    parser.add_argument("--samples", type=int, default=21)
    parser.add_argument("--batch", type=int, default=50,
                        help="launches per sample (the timer takes fewer where the host is slower)")
    opts = parser.parse_args()
    dev = cb.device("cuda")
    modules = base_variants(cp)
    app = APPS["ENERGY"]
    timer = QueuedEventTimer(dev)
    for size in opts.sizes.split(","):
        problem = app.set_up(app.default_size * SIZES[size])
        arrays = {key: cp.asarray(host) for key, host in problem.arrays.items()}
        print(f"{dev.properties.name}; ENERGY at {size} ({problem.size} iterates); GPU time per launch (queued), "
              f"median of {opts.samples}")
        per_kernel = []
        for k, function in enumerate(WRITES):
            variants = variants_of(cp, dev, modules, problem, arrays, k)
            check(cp, dev, variants, problem, arrays, function)
            per_kernel.append(variants)
            samples = interleaved(timer, {label: (run, opts.batch) for label, run in variants.items()}, opts.samples)
            print(f" {function}:")
            print_against(samples, "Base_CUDA")
        reps = {label: _in_order([v[label] for v in per_kernel]) for label in per_kernel[0]}
        samples = interleaved(timer, {label: (rep, max(1, opts.batch // 6)) for label, rep in reps.items()},
                              opts.samples)
        print(f" the six kernels in order, one rep ({size}):")
        print_against(samples, "Base_CUDA")
        del arrays


if __name__ == "__main__":
    main()
