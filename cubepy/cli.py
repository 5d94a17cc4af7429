"""The ``cubepy`` command line (also ``python -m cubepy``): one subcommand per function below.

    cubepy bench --kernels FIR,LTIMES --device cpu --sizes default --json out.json

A subcommand is a function taking the parsed arguments and returning the exit status, and a
line in `main` that adds its parser; its work lives in its own module (``bench`` in
``cubepy.bench``, the RAJAPerf suite, installed from ``benchmarks/rajaperf``).
"""

from __future__ import annotations

import argparse


def bench(args: argparse.Namespace) -> int:
    """Run the RAJAPerf apps suite: cubepy against hand-written and library peers, same run."""
    from cubepy.bench.command import bench as run_bench
    return run_bench(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cubepy", description="cubepy's command line")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from cubepy.bench.command import add_arguments as bench_arguments
    bench_parser = commands.add_parser("bench", help=bench.__doc__, description=bench.__doc__)
    bench_arguments(bench_parser)
    bench_parser.set_defaults(run=bench)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
