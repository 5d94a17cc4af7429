"""``cubepy bench`` / ``python -m benchmarks.rajaperf``: the command line of the suite."""

from __future__ import annotations

import argparse
import sys

from .machine import banner
from .report import checksums, plot, table, write_json
from .suite import Options, run
from .timing import TIMERS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench options, for a parser of its own or a subcommand's."""
    o = Options()
    parser.add_argument("--kernels", default=o.kernels,
                        help="comma-separated kernels (DEL_DOT_VEC_2D, ENERGY, FIR, LTIMES, MATVEC_3D_STENCIL, "
                             "PRESSURE, VOL3D) or 'all'")
    parser.add_argument("--device", default=o.device,
                        help="cubepy device: cpu, cuda, opencl, interp (default: the current)")
    parser.add_argument("--sizes", default=o.sizes, help="default, 32x, or target sizes such as 4000 (comma-separated)")
    parser.add_argument("--variants", default=o.variants,
                        help="plain, tuned (ports) and checked, unchecked (modes); an axis not named keeps all")
    parser.add_argument("--peers", default=o.peers,
                        help="numba, openmp (cpu); cuda, numba-cuda, triton (cuda); 'all' (these) or 'none'; "
                             "cuda-strict (Base_CUDA built with --fmad=false), cuda-restrict (Base_CUDA's pointers "
                             "__restrict__): by name only")
    parser.add_argument("--reps", type=int, default=o.reps, help="timed samples per contender (median of these)")
    parser.add_argument("--transfer-reps", type=int, default=o.transfer_reps,
                        help="reps of ENERGY's six kernels per transfer-study scenario")
    parser.add_argument("--transfer-size", type=int, default=o.transfer_size, help="ENERGY's n in the transfer study")
    parser.add_argument("--no-transfer", action="store_true", help="skip the transfer study")
    parser.add_argument("--timer", default=o.timer, choices=TIMERS,
                        help="GPU timing: events around each sample (default), or queued: the sample enqueued "
                             "behind a held stream, so that events time the GPU's work without the host's "
                             "launch rate (CUDA)")
    parser.add_argument("--progress", default=o.progress, choices=("auto", "tqdm", "rich", "plain"))
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--plot", metavar="FILE.png", help="draw the ratios per kernel and size (needs matplotlib)")


def options_from(args: argparse.Namespace) -> Options:
    return Options(kernels=args.kernels, device=args.device, sizes=args.sizes, variants=args.variants,
                   peers=args.peers, reps=args.reps, transfer=not args.no_transfer, transfer_reps=args.transfer_reps,
                   transfer_size=args.transfer_size,
                   progress=args.progress, timer=args.timer)


def bench(args: argparse.Namespace) -> int:
    """Run the suite with parsed arguments; print the table; write JSON and the plot if asked."""
    import cubepy as cb
    try:
        results = run(options_from(args), log=lambda text: print(text, file=sys.stderr))
    except (ValueError, cb.BackendUnavailableError) as e:
        print(f"cubepy bench: {e}", file=sys.stderr)
        return 2
    print(banner(results["machine"]))
    print(table(results))
    print("\nreference checksums (NumPy, RAJAPerf's 2026 formula):")
    print("\n".join(checksums(results)))
    if "transfer" in results:
        from .transfer import transfer_table
        print("\n" + transfer_table(results["transfer"]))
    print(f"\nwall time {results['wall_s']:.1f} s")
    if args.json:
        write_json(results, args.json)
        print(f"wrote {args.json}")
    if args.plot:
        why = plot(results, args.plot)
        print(f"plot not drawn: {why}" if why else f"wrote {args.plot}")
    failed = [f"{r['kernel']} {r['size']} {label}" for r in results["rows"] for label, res in r["contenders"].items()
              if not res.get("correct")]
    if failed:
        print(f"\n{len(failed)} contender(s) failed their check: {', '.join(failed)}")
    for error in results.get("errors", []):
        print(f"\n{error['kernel']} {error.get('size', '')} did not run: {error['error']}")
    cubepy_failed = any(label.startswith("cubepy") for label in (f.split(" ", 2)[2] for f in failed))
    return 1 if cubepy_failed or results.get("errors") else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rajaperf", description=__doc__)
    add_arguments(parser)
    return bench(parser.parse_args(argv))
