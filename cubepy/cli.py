"""The ``cubepy`` command line (also ``python -m cubepy``): one subcommand per function below.

    cubepy bench --kernels FIR,LTIMES --device cpu --sizes default --json out.json
    cubepy cache info | clear [BACKEND] | prune --max-size 2G
    cubepy devices
    cubepy tune mypkg.tuning:targets --device cuda --out mypkg/tuned.json
    cubepy version

A subcommand is a function taking the parsed arguments and returning the exit status, and a
line in `main` that adds its parser; its work lives in its own module (``bench`` in
``cubepy.bench``, the RAJAPerf suite, installed from ``benchmarks/rajaperf``; ``tune`` in
``cubepy.autotune.command``).
"""

from __future__ import annotations

import argparse
import os
import sys


def bench(args: argparse.Namespace) -> int:
    """Run the RAJAPerf apps suite: cubepy against hand-written and library peers, same run."""
    from cubepy.bench.command import bench as run_bench
    return run_bench(args)


def cache(args: argparse.Namespace) -> int:
    """Show, clear or prune the disk cache of compiled code."""
    from cubepy.runtime import disk_cache

    if args.action == "info":
        found = disk_cache.info()
        print(f"cache folder: {found['root']}")
        for name, entry in found["backends"].items():
            print(f"  {name:10s} {entry['entries']:6d} entries  {_size(entry['bytes']):>10s}")
        print(f"  {'total':10s} {sum(e['entries'] for e in found['backends'].values()):6d} entries  "
              f"{_size(found['bytes']):>10s}")
    elif args.action == "clear":
        print(f"deleted {disk_cache.clear(args.backend)} files")
    else:
        print(f"deleted {disk_cache.prune(args.max_size)} entries")
    return 0


def devices(args: argparse.Namespace) -> int:
    """List every backend's device with its properties, or why it is unavailable."""
    import cubepy as cb

    for dev in cb.devices():
        if not dev.available:
            print(f"{dev.backend_name:8s} unavailable: {dev.reason}")
            continue
        p = dev.properties
        print(f"{dev.backend_name:8s} {p.name}: plane {p.plane_size_min}..{p.plane_size_max}, "
              f"{p.max_units_per_cube} units/cube, {_size(p.shared_memory_per_cube)} shared, vectors "
              f"{','.join(map(str, p.vector_widths))}, {','.join(sorted(p.features))}")
    return 0


def tune(args: argparse.Namespace) -> int:
    """Autotune kernels on this machine and write their configs to a file a package can ship."""
    from cubepy.autotune.command import tune as run_tune
    return run_tune(args)


def version(args: argparse.Namespace) -> int:
    """Print cubepy's version."""
    import cubepy as cb

    print(f"cubepy {cb.__version__}")
    return 0


def _size(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return str(nbytes)


def _bytes(text: str) -> int:
    """A size like ``500M`` or ``2G`` (powers of 1024) or a plain number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cubepy", description="cubepy's command line")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from cubepy.bench.command import add_arguments as bench_arguments
    bench_parser = commands.add_parser("bench", help=bench.__doc__, description=bench.__doc__)
    bench_arguments(bench_parser)
    bench_parser.set_defaults(run=bench)

    cache_parser = commands.add_parser("cache", help=cache.__doc__, description=cache.__doc__)
    actions = cache_parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("info", help="the cache folder and what each backend keeps there")
    clear_parser = actions.add_parser("clear", help="delete every entry (of one backend if named)")
    clear_parser.add_argument("backend", nargs="?", default=None, help="e.g. cpu, cuda")
    prune_parser = actions.add_parser("prune", help="delete the oldest entries down to a size")
    prune_parser.add_argument("--max-size", type=_bytes, required=True, help="e.g. 500M, 2G")
    cache_parser.set_defaults(run=cache)

    from cubepy.autotune.command import add_arguments as tune_arguments
    tune_parser = commands.add_parser("tune", help=tune.__doc__, description=tune.__doc__)
    tune_arguments(tune_parser)
    tune_parser.set_defaults(run=tune)

    for command in (devices, version):
        commands.add_parser(command.__name__, help=command.__doc__).set_defaults(run=command)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:        # `cubepy devices | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
