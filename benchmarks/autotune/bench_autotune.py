"""The autotuner's benchmark: search quality, reproducibility and parallel compiles.

    python -m benchmarks.autotune.bench_autotune --device cpu --out autotune-cpu.json
    python -m benchmarks.autotune.bench_autotune --device cuda --n 16777216 --out autotune-h200.json

Parts (``--parts``, default all):

- ``synthetic``: the deterministic cost model of `synthetic` (36,960 and 5,400 configs, known
  optimum), each strategy at budgets of 1%, 5% and 10% of the space (and pattern search without
  a budget), ``--seeds`` seeds each: how often the best found is within 2% of the optimum.
- ``replay``: every strategy replayed on the landscapes measured earlier and kept in ``tables/``
  (`measured`; the H200's and this project's development CPU's), ``--seeds`` seeds each.
- ``real``: `kernels.polyval` over 1,200 configs (cube size x per_unit x unroll x Line width x
  fastmath), measured exhaustively on the device (or read from an earlier run's JSON, ``--table``);
  then every strategy replayed on those measured times (``--seeds`` seeds), and a live pattern and
  a live Bayesian search with 10% of the evaluations each, their choices timed side by side with
  the exhaustive best.
- ``repeat``: ten tunings in a row, each with an empty tuning cache, of `kernels.busy_copy` (costs
  3x and more apart) and of a polyval space of 16 configs: the picks, and the gap between the two
  best configs of each run.
- ``compiles``: one cube shape of polyval compiled, eight compiled one after another, and eight
  compiled by the tuner's worker pool and then loaded from the disk cache, all per shape
  (``shape_generic=False``); then eight shapes shape-generic, compiled in this process and tuned
  (each into an empty compile cache): wall time and compile counts.

The table is printed; ``--out`` gets everything as JSON. On the CPU the device has one thread
(``--threads``): a launch split over threads waits for the slowest, which other processes on a
shared machine hold up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time

import numpy as np
from cubepy.autotune import STRATEGIES, Budget, Evaluations, Measure, Space, autotune, pool, shapes
from cubepy.autotune.measure import time_interleaved
from cubepy.autotune.search import BAYES_POOL, run

import cubepy as cb
from cubepy import settings

from . import measured, synthetic
from .kernels import busy_copy, one_per_unit, polyval, polyval_grid, polyval_space

FRACTIONS = (0.01, 0.05, 0.10)
LIVE = ("pattern", "bayes")          # the strategies searched live in part real


def replay(space: Space, table: dict, seeds: int) -> list[dict]:
    """Each strategy and budget over ``table`` (config -> ms), ``seeds`` times."""
    best = min(v for v in table.values() if v < float("inf"))
    rows = []
    # bayes where `auto` would use it (its rounds get slow on the largest spaces)
    strategies = ("random", "pattern", "bayes") if len(space) <= BAYES_POOL else ("random", "pattern")
    plans = [(strategy, f) for strategy in strategies for f in FRACTIONS] + \
        [(strategy, None) for strategy in strategies[1:]]
    for strategy, fraction in plans:
        budget = None if fraction is None else max(1, int(len(space) * fraction))
        gaps, evals = [], []
        for seed in range(seeds):
            objective = Evaluations(lambda batch, out_of_time: {c: table[c] for c in batch},
                                    Budget("replay", budget, None))
            run(STRATEGIES[strategy], space, objective, seed)
            gaps.append(min(objective.values.values()) / best - 1)
            evals.append(len(objective.values))
        rows.append({"strategy": strategy, "budget": budget, "budget_fraction": fraction, "seeds": seeds,
                     "within_2pct": sum(g <= 0.02 for g in gaps), "median_gap": statistics.median(gaps),
                     "max_gap": max(gaps), "median_evals": statistics.median(evals), "max_evals": max(evals),
                     "max_evals_fraction": max(evals) / len(space)})
    return rows


def part_synthetic(args) -> dict:
    spaces = {"synthetic-36960": synthetic.space()}
    dims = [d for d in shapes(synthetic.GPU_LIKE, [64, 128, 256, 512, 1024]) if d[2] == 1]
    spaces["synthetic-5400"] = Space(synthetic.GPU_LIKE, dims=dims,
                                     comptime={"per_unit": [1, 2, 4, 8, 16], "unroll": [1, 2, 4, 8]},
                                     lines={("x", "y"): [1, 2, 4]}, fastmath=[None, "algebraic"])
    out = {}
    for name, space in spaces.items():
        for model_seed in range(3):
            table = {c: synthetic.cost(c, model_seed) for c in space.configs}
            out[f"{name}/model{model_seed}"] = {"configs": len(space), "rows": replay(space, table, args.seeds)}
    return out


def part_replay(args) -> dict:
    """Every strategy replayed on the tables measured earlier (`measured`: kept in tables/)."""
    out = {}
    for name in measured.names():
        space, table = measured.load(name)
        out[name] = {"configs": len(space), "rows": replay(space, table, args.seeds)}
    return out


def part_real(args, dev) -> dict:
    rng = np.random.default_rng(0)
    x = rng.random(args.n).astype(np.float32) * 2 - 1
    y = np.zeros_like(x)
    options = polyval_space(dev.properties, quick=args.quick)
    exhaustive = autotune(polyval, polyval_grid, strategy="exhaustive", **options)
    space = exhaustive.space(dev)
    by_label = {c.label: c for c in space.configs}
    began = time.perf_counter()
    if args.table:            # an earlier exhaustive measurement (same device kind, same n)
        with open(args.table) as f:
            earlier = json.load(f)
        times, compiles, rejected, failed = earlier["real"]["exhaustive_times_ms"], "(from --table)", 0, 0
    else:
        full = exhaustive.tune(x, y, device=dev)
        times, compiles, rejected, failed = dict(full.times), full.compiles, len(full.rejected), len(full.failed)
    wall = time.perf_counter() - began
    table = {by_label[label]: ms for label, ms in times.items()}
    best_label = min(times, key=times.get)
    # Live searches with a tenth of the evaluations, measuring anew (each its own tuning cache).
    live = {}
    for strategy in LIVE:
        with tempfile.TemporaryDirectory() as fresh:
            tuner = autotune(polyval, polyval_grid, strategy=strategy, max_evals=len(space) // 10, seed=1, **options)
            live[strategy] = _with_tuning_cache(fresh, lambda: tuner.tune(x, y, device=dev))
    # The choices timed again side by side with the exhaustive best: the exhaustive best is the
    # minimum of 1,200 noisy times (biased low), and the machine's speed drifts between searches.
    x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(y, device=dev)
    side = [by_label[best_label], *(r.config for r in live.values())]
    again = time_interleaved([lambda c=c: exhaustive.run(c, x_dev, y_dev, device=dev) for c in side], dev,
                             Measure(), rounds=21)
    return {"kernel": "polyval", "n": args.n, "configs": len(space), "exhaustive_seconds": wall,
            "table_from": args.table, "exhaustive_best": best_label, "exhaustive_best_ms": times[best_label],
            "rejected": rejected, "failed": failed, "exhaustive_compiles": compiles,
            "replay": replay(space, table, args.seeds),
            "exhaustive_times_ms": times,      # the measured table, to replay strategies offline
            "side_by_side_best_ms": again[0].ms,
            "live": {strategy: {"evaluations": r.evaluations, "seconds": r.seconds, "chosen": r.config.label,
                                "chosen_ms_live": r.ms, "chosen_ms_exhaustive": times.get(r.config.label),
                                "gap_vs_exhaustive_best":
                                    times.get(r.config.label, float("nan")) / times[best_label] - 1,
                                "compiles": r.compiles, "side_by_side_ms": again[i + 1].ms,
                                "side_by_side_gap": again[i + 1].ms / again[0].ms - 1}
                     for i, (strategy, r) in enumerate(live.items())}}


def _with_tuning_cache(folder: str, action):
    """Run ``action`` with an empty tuning cache and the current compile cache (its entries are
    linked in, so nothing is compiled again but every config is measured anew)."""
    old = os.environ.get("CUBEPY_CACHE_DIR")
    source = settings.cache_dir()
    for entry in source.iterdir() if source.exists() else []:
        if entry.name != "autotune":
            os.symlink(entry, os.path.join(folder, entry.name))
    os.environ["CUBEPY_CACHE_DIR"] = folder
    try:
        return action()
    finally:
        if old is None:
            os.environ.pop("CUBEPY_CACHE_DIR", None)
        else:
            os.environ["CUBEPY_CACHE_DIR"] = old


def part_repeat(args, dev) -> dict:
    rng = np.random.default_rng(1)
    x = rng.random(args.n).astype(np.float32)
    out = {}
    cases = {
        "busy_copy work in [256, 1, 64]": (busy_copy, one_per_unit, {"dims": [64], "comptime": {"work": [256, 1, 64]}}),
        "polyval 8 cube sizes x per_unit 1,4 (Lines of 4)": (polyval, polyval_grid, {
            "dims": [8, 16, 32, 64, 128, 256, 512, 1024], "comptime": {"per_unit": [1, 4], "unroll": [1]},
            "lines": {("x", "y"): [4]}}),
        "polyval Line widths 1, 4, 16": (polyval, polyval_grid, {
            "dims": [64], "comptime": {"per_unit": [4], "unroll": [1]}, "lines": {("x", "y"): [1, 4, 16]}}),
    }
    for name, (kernel, grid, options) in cases.items():
        picks, gaps, seconds = [], [], []
        for _ in range(10):
            with tempfile.TemporaryDirectory() as fresh:
                tuned = autotune(kernel, grid, **options)
                result = _with_tuning_cache(fresh, lambda: tuned.tune(x, np.zeros_like(x), device=dev))
            ranked = sorted(v for v in result.times.values() if v < float("inf"))
            picks.append(result.config.label)
            gaps.append(ranked[1] / ranked[0] - 1 if len(ranked) > 1 else float("nan"))
            seconds.append(result.seconds)
        out[name] = {"picks": picks, "same_pick_every_time": len(set(picks)) == 1,
                     "top_two_gap_median": statistics.median(gaps), "top_two_gap_min": min(gaps),
                     "seconds_median": statistics.median(seconds)}
    return out


def part_compiles(args, dev) -> dict:
    """Eight cube shapes of polyval: compiled per shape (one, eight one after another, eight by the
    tuner's worker pool then loaded by this process), and shape-generic (eight compiled in this
    process, and a whole tuning over them); each into an empty compile cache and with per_unit
    values no other case compiles (so nothing is in memory either)."""
    x = np.random.default_rng(2).random(1 << 16).astype(np.float32)
    y = np.zeros_like(x)
    shapes8 = [8, 16, 32, 64, 128, 256, 512, 1024]
    per_shape = cb.device(dev.backend_name, **{**dev.options, "shape_generic": False})
    cases = [("one shape, in this process", [64], 3, "compile", per_shape),
             ("eight shapes, in this process", shapes8, 5, "compile", per_shape),
             ("eight shapes, worker pool (started now)", shapes8, 6, "pool", per_shape),
             ("eight shapes, worker pool (running)", shapes8, 7, "pool", per_shape),
             ("eight shapes, shape-generic, in this process", shapes8, 8, "compile", dev),
             ("tuning over eight shapes, shape-generic", shapes8, 9, "tune", dev)]
    out = {}
    used = max(2, min(len(shapes8), os.cpu_count() or 2))      # the pool's default size, at least 2
    for label, dims, per_unit, how, device in cases:
        with tempfile.TemporaryDirectory() as fresh:
            old = os.environ.get("CUBEPY_CACHE_DIR")
            os.environ["CUBEPY_CACHE_DIR"] = fresh
            try:
                before = cb.compile_stats()
                began = time.perf_counter()
                workers, pooled = {}, None
                if how == "pool":
                    jobs = [(polyval, pool.placeholders(polyval.signature, (x, y, per_unit, 1), {}), (d, 1, 1), {})
                            for d in dims]
                    workers = pool.compile_all(jobs, device, used)
                    pooled = time.perf_counter() - began
                if how == "tune":
                    tuned = autotune(polyval, polyval_grid, dims=dims, comptime={"per_unit": [per_unit], "unroll": [1]},
                                     strategy="exhaustive")
                    workers = {k: v for k, v in tuned.tune(x, y, device=device).compiles.items() if k.startswith("w")}
                else:
                    for d in dims:
                        polyval.compile(x, y, per_unit, 1, dim=d, device=device)
                wall = time.perf_counter() - began
                after = cb.compile_stats()
            finally:
                if old is None:
                    os.environ.pop("CUBEPY_CACHE_DIR", None)
                else:
                    os.environ["CUBEPY_CACHE_DIR"] = old
        out[label] = {"wall_seconds": wall, "pool_seconds": pooled,
                      "this_process": {k: after[k] - before[k] for k in ("compiles", "disk_loads", "shared_shapes")},
                      "workers": workers, "workers_used": used if pooled else 0}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the cpu device (default 1)")
    parser.add_argument("--n", type=int, default=1 << 20, help="elements of the real kernels' arrays")
    parser.add_argument("--seeds", type=int, default=20, help="search seeds per strategy and budget")
    parser.add_argument("--parts", default="synthetic,repeat,compiles,real")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="16 configs in the real part: to check that it runs")
    parser.add_argument("--table", default=None, help="part real: replay and compare with the exhaustive times of "
                                                      "this earlier --out JSON instead of measuring them again")
    args = parser.parse_args(argv)
    dev = cb.device("cpu", threads=args.threads) if args.device == "cpu" else cb.device(args.device)
    os.environ.setdefault("CUBEPY_CACHE_DIR", tempfile.mkdtemp(prefix="cubepy-autotune-bench-"))
    results = {"device": dev.name, "device_name": dev.properties.name, "host": platform.node(),
               "cores": os.cpu_count(), "n": args.n, "date": time.strftime("%Y-%m-%d %H:%M")}
    parts = {"synthetic": lambda: part_synthetic(args), "replay": lambda: part_replay(args),
             "real": lambda: part_real(args, dev),
             "repeat": lambda: part_repeat(args, dev), "compiles": lambda: part_compiles(args, dev)}
    for name in args.parts.split(","):
        began = time.perf_counter()
        results[name] = parts[name]()
        results[f"{name}_seconds"] = time.perf_counter() - began
        print(report(name, results[name]), flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(results, f, indent=1, default=str)
    return 0


def report(name: str, data: dict) -> str:
    lines = [f"== {name}"]
    if name in ("synthetic", "replay"):
        for space, entry in data.items():
            lines += [f"{space} ({entry['configs']} configs)", *_rows(entry["rows"])]
    elif name == "real":
        lines += [f"polyval, {data['configs']} configs, exhaustive in {data['exhaustive_seconds']:.1f} s: best "
                  f"{data['exhaustive_best']} at {data['exhaustive_best_ms']:.4f} ms ({data['rejected']} rejected, "
                  f"{data['failed']} failed; {data['exhaustive_compiles']})", *_rows(data["replay"])]
        for strategy, live in data["live"].items():
            lines.append(f"live {strategy} search, {live['evaluations']} evaluations in {live['seconds']:.1f} s: "
                         f"{live['chosen']}, {live['gap_vs_exhaustive_best'] * 100:+.2f}% vs the exhaustive best by "
                         f"the exhaustive times, {live['side_by_side_gap'] * 100:+.2f}% timed side by side")
    elif name == "repeat":
        for case, entry in data.items():
            lines.append(f"{case}: same pick 10/10: {entry['same_pick_every_time']} ({entry['picks'][0]}; "
                         f"top-two gap median {entry['top_two_gap_median'] * 100:.1f}%, min "
                         f"{entry['top_two_gap_min'] * 100:.1f}%; {entry['seconds_median']:.2f} s per tuning)")
    else:
        for label, entry in data.items():
            pooled = "" if entry["pool_seconds"] is None else (f" ({entry['pool_seconds']:.2f} s in "
                                                               f"{entry['workers_used']} workers: {entry['workers']})")
            lines.append(f"{label}: {entry['wall_seconds']:.2f} s{pooled}; this process {entry['this_process']}")
    return "\n".join(lines)


def _rows(rows: list[dict]) -> list[str]:
    out = [f"  {'strategy':9s} {'budget':>7s} {'within 2%':>10s} {'median gap':>10s} {'max gap':>8s} "
           f"{'evals (median/max)':>19s}"]
    for r in rows:
        budget = "none" if r["budget"] is None else str(r["budget"])
        out.append(f"  {r['strategy']:9s} {budget:>7s} {r['within_2pct']:>5d}/{r['seeds']:<4d} "
                   f"{r['median_gap'] * 100:9.2f}% {r['max_gap'] * 100:7.2f}% {r['median_evals']:>9.0f}/"
                   f"{r['max_evals']:<6d} ({r['max_evals_fraction'] * 100:.1f}%)")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
