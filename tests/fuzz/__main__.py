"""Command line of the differential fuzzer (see ``tests/fuzz/__init__.py``).

    python -m tests.fuzz --devices cpu,opencl --minutes 60 --workers 2
    python -m tests.fuzz --devices cuda --minutes 6 --workers 12
    python -m tests.fuzz --devices cuda --minutes 8 --workers 100 --gpus 8   # an 8-GPU, 128-core host
    python -m tests.fuzz --replay 4711 --devices opencl        # shrink one seed and print it
    python -m tests.fuzz --devices cpu,opencl --alternate      # each kernel on one of them, in turn
    python -m tests.fuzz --cuda-source 16001842 > k.cu          # a seed's kernel as the cuda backend
                                                               # renders it (no GPU needed: for nvcc, SASS)
    python -m tests.fuzz --devices cuda --kernels 20000 --seed 30000000 --state run.jsonl --minutes 9
                                                               # one run over several calls: each call
                                                               # goes on where the last one stopped

``--devices`` takes backends (``cpu`` runs at plane sizes 8, 32, 1 and 64 by turns, or give ``cpu-p64``;
``cpu-O1`` takes the turns at LLVM -O1, as CI does; ``interp-gpu`` is the interpreter running the
IR as CUDA and HIP get it, checks per launch, cube and run, compared with the plain interpreter);
each kernel runs on the interpreter at the device's plane size and on its devices, and every
failure is shrunk and printed with its seed, then listed at the end. Exit status 1 if any failed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time


def _targets(devices: list[str], alternate: bool = False):
    """seed -> the targets it runs on: backends without a plane size take turns at 1, 8, 32, 64;
    with ``alternate`` each seed runs on one of the devices, in turn (their plane sizes turn too)."""
    planes = {"cpu": (8, 32, 1, 64), "interp": (8, 32, 1, 64)}

    def assign(seed: int) -> list[str]:
        out = []
        if alternate:
            chosen, turn = [devices[seed % len(devices)]], seed // len(devices)
        else:
            chosen, turn = devices, seed
        for d in chosen:
            base, *rest = d.split("-")
            if base not in planes or any(part.startswith("p") for part in rest):
                out.append(d)
            else:
                out.append("-".join([base, f"p{planes[base][turn % len(planes[base])]}", *rest]))
        return out
    return assign


def _report_failure(seed, target, status, detail, devices, shrink: bool) -> None:
    """Print a failure with its seed, and the failing program shrunk (the program of a seed also
    depends on its device list: types a device lacks are left out)."""
    from .campaign import excluded
    from .generate import generate
    from .shrink import same_failure
    from .shrink import shrink as minimize

    print(f"\n=== seed {seed}: {target} {status} (python -m tests.fuzz --replay {seed} --devices "
          f"{','.join(devices)})\n{detail[:2000]}", flush=True)
    if not shrink or target in ("worker", "model") or status == "invalid":
        return
    program = generate(seed, exclude=excluded(devices))
    small = minimize(program, same_failure(target, (status, detail)))
    print(f"--- shrunk to {small.size()} statements:")
    print(small.source())
    print(f"launch: cube_count={small.cube_count} cube_dim={small.cube_dim} nu={small.active} K={small.comptime}",
          flush=True)


def _cuda_source(seed: int) -> str:
    """The seed's kernel (generated for ``cuda``) traced and rendered as the cuda backend does it,
    without a GPU."""
    from cubepy.backends.cstyle import CUDA, render

    from .generate import generate
    from .host_cuda import cuda_ir
    from .run import arguments, load

    program = generate(seed)
    return render(cuda_ir(load(program), program, arguments(program)), CUDA).source


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu,opencl", help="comma-separated targets (default cpu,opencl)")
    ap.add_argument("--minutes", type=float, default=None, help="run until this much time has passed")
    ap.add_argument("--kernels", type=int, default=None, help="or this many kernels")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=None, help="first seed (default: from the clock)")
    ap.add_argument("--size", type=int, default=40, help="statements per kernel (default 40)")
    ap.add_argument("--replay", type=int, default=None, help="run one seed, shrink it if it fails, print it")
    ap.add_argument("--no-shrink", action="store_true", help="print failures without shrinking them")
    ap.add_argument("--alternate", action="store_true",
                    help="run each kernel on one of the devices, in turn, instead of on all of them")
    ap.add_argument("--gpus", type=int, default=1,
                    help="spread the workers over this many GPUs (worker k on GPU k mod N; a many-core "
                         "host with several GPUs runs many workers)")
    ap.add_argument("--state", default=None, metavar="FILE",
                    help="a resumable run: each finished kernel is kept in FILE (JSON lines); a later call with "
                         "the same FILE runs the seeds not done yet and prints the whole run's tally")
    ap.add_argument("--cuda-source", type=int, default=None, metavar="SEED",
                    help="print one seed's kernel as CUDA source, as the cuda backend renders it, and stop")
    args = ap.parse_args(argv)
    if args.cuda_source is not None:
        print(_cuda_source(args.cuda_source))
        return 0
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    assign = _targets(devices, args.alternate)
    if args.replay is not None:
        from .campaign import check_isolated, excluded
        from .generate import generate

        out = check_isolated(args.replay, tuple(assign(args.replay)))
        print(generate(args.replay, exclude=excluded(assign(args.replay))).source())
        bad = [(t, s, d) for t, (s, d) in out["targets"].items() if s not in ("ok", "skip")]
        print(out.get("invalid") or out["targets"])
        for t, s, d in bad:
            _report_failure(args.replay, t, s, d, assign(args.replay), not args.no_shrink)
        return 1 if bad or "invalid" in out else 0
    from .campaign import campaign

    first = args.seed if args.seed is not None else int(time.time()) % 1_000_000 * 1000
    count = args.kernels
    seeds = range(first, first + count) if count else itertools.count(first)
    state = None
    if args.state:
        from .resume import RunState

        state = RunState(args.state, first, count, devices, args.alternate)
        first, devices = state.header["first"], state.header["devices"]
        assign = _targets(devices, state.header["alternate"])
        seeds = state.seeds
        print(f"resuming {args.state}: {len(state.done)} of {state.header['kernels']} kernels done in "
              f"{state.calls} calls", flush=True)
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    print(f"fuzzing {devices} from seed {first} with {args.workers} workers", flush=True)
    done = [0]

    def progress(out):
        if state is not None:
            state.record(out)
        done[0] += 1
        for target, (status, detail) in out["targets"].items():
            if status in ("mismatch", "error", "crash"):
                print(f"seed {out['seed']}: {target} {status}: {detail.splitlines()[0][:300]}", flush=True)
        if "invalid" in out:
            print(f"seed {out['seed']}: rejected by the interpreter: {out['invalid'].splitlines()[0][:300]}",
                  flush=True)
        if done[0] % 200 == 0:
            print(f"... {done[0]} kernels", flush=True)
    tally = campaign(seeds, assign, args.workers, args.size, deadline, progress, gpus=args.gpus)
    if state is not None:
        tally = state.finish(tally)
        left = state.header["kernels"] - tally.kernels
        print(f"the run {args.state}: {state.calls} calls, " + (f"{left} kernels left" if left else "complete"))
    print(tally.table())
    for seed, target, status, detail, devices in tally.failures[:20]:
        _report_failure(seed, target, status, detail, devices, not args.no_shrink)
    for seed, message in tally.invalid[:5]:
        print(f"\n=== seed {seed}: rejected by the interpreter\n{message[:1500]}")
    return 1 if tally.failures or tally.invalid else 0


if __name__ == "__main__":
    sys.exit(main())
