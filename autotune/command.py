"""``cubepy tune``: tune a package's kernels on this machine and write the configs it can ship.

    cubepy tune mypkg.tuning:targets --device cuda --out mypkg/tuned.json

Each TARGET is ``module:function``; the function (called with the device, or with no argument)
returns ``(tuned, args)`` pairs: a `Tuned` launcher and arguments of a size to tune for. Each
pair is searched now (measurements in the tuning cache are reused), a table is printed, and
``--out`` gets every choice (merged into an existing file unless ``--no-merge``).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys

import cubepy as cb

from .search import STRATEGIES
from .shipped import export_configs
from .tuner import Tuned


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="+", metavar="TARGET",
                        help="module:function returning (tuned, args) pairs, e.g. mypkg.tuning:targets")
    parser.add_argument("--device", default=None, help="device to tune on (default: the current device)")
    parser.add_argument("--out", default=None, help="write the chosen configs to this JSON file")
    parser.add_argument("--no-merge", action="store_true", help="overwrite --out instead of merging into it")
    parser.add_argument("--strategy", default=None, choices=["auto", *STRATEGIES],
                        help="the search strategy (default: each launcher's own)")
    parser.add_argument("--max-evals", type=int, default=None, help="configs to evaluate at most, per kernel and key")
    parser.add_argument("--max-seconds", type=float, default=None, help="seconds to search at most, per kernel and key")


def tune(args: argparse.Namespace) -> int:
    dev = cb.device(args.device) if args.device else cb.current_device()
    launchers: list[Tuned] = []
    rows = []
    for target in args.targets:
        for tuned, example in _pairs(target, dev):
            result = tuned.tune(*example, device=dev, strategy=args.strategy, max_evals=args.max_evals,
                                max_seconds=args.max_seconds)
            if tuned not in launchers:
                launchers.append(tuned)
            rows.append((tuned.kernel.__name__, result))
    print(f"tuned on {dev.name} ({dev.properties.name})")
    print(f"{'kernel':16s} {'config':40s} {'ms':>10s} {'evaluated':>9s} {'measured':>8s} {'seconds':>8s}  key")
    for name, r in rows:
        print(f"{name:16s} {r.config.label:40s} {r.ms:10.4f} {r.evaluations:9d} {r.measured:8d} {r.seconds:8.2f}  "
              f"{r.key}")
        if r.rejected:
            print(f"  {len(r.rejected)} configs computed another answer and were skipped: {', '.join(r.rejected)}")
    if args.out:
        count = export_configs(args.out, launchers, device=dev, merge=not args.no_merge)
        print(f"wrote {count} configs to {args.out}")
    return 0


def _pairs(target: str, dev) -> list[tuple[Tuned, tuple]]:
    module_name, _, name = target.partition(":")
    if not module_name or not name:
        raise SystemExit(f"cubepy tune: target {target!r} is not module:function (e.g. mypkg.tuning:targets)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"cubepy tune: cannot import {module_name!r} for target {target!r}: {e}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise SystemExit(f"cubepy tune: {module_name} has no function {name!r} (target {target!r})")
    pairs = list(function(dev) if inspect.signature(function).parameters else function())
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Tuned)):
            raise SystemExit(f"cubepy tune: {target} must return (tuned, args) pairs, got {pair!r:.80}")
    if not pairs:
        print(f"cubepy tune: {target} returned no (tuned, args) pairs", file=sys.stderr)
    return [(t, tuple(a)) for t, a in pairs]
