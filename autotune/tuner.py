"""`autotune`: pick a kernel's launch shape (and tuned Comptime values, Line widths, fastmath) by
measuring on the device; `Tuned` is the launcher it returns."""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import cubepy as cb
from cubepy import settings
from cubepy.errors import ArgumentTypeError, ArgumentValueError, CubeError
from cubepy.lang.types import ArraySpec, ComptimeSpec, LinesArg, RegionSpec
from cubepy.log import logger
from cubepy.runtime.devices import Device, current_device
from cubepy.runtime.devices import device as get_device
from cubepy.runtime.fake_launches import SKIPPING, skipped
from cubepy.runtime.graph_breaks import register_entry_point
from cubepy.runtime.kernel import KernelFunction

from . import pool, search
from .cache import Entry, TuningCache
from .measure import Measure, time_interleaved, time_launches
from .progress import Reporter
from .shipped import ConfigFile, device_id, kernel_id, loaded
from .space import Config, Space, fits
from .verify import Arguments, Tolerance, mismatch


class Chosen(dict):
    """What ``grid(args, dim, chosen)`` gets: the config's Comptime values by name, and its
    ``dim``, ``lines`` (widths by parameter name) and ``fastmath``."""

    def __init__(self, config: Config):
        super().__init__(config.comptime)
        self.dim, self.lines, self.fastmath = config.dim, dict(config.lines), config.fastmath


@dataclass
class Result:
    """The outcome of tuning one key on one device.

    ``origin``: ``measured`` (a search ran now), ``cache`` (a search of an earlier run), ``shipped``
    (a loaded config file), ``default`` (a mismatch fell back to the default config)."""

    config: Config
    ms: float
    origin: str
    device: str
    key: str
    strategy: str = ""
    evaluations: int = 0
    measured: int = 0
    seconds: float = 0.0
    rejected: dict[str, str] = field(default_factory=dict)      # label -> how its output differed
    failed: dict[str, str] = field(default_factory=dict)        # label -> why the device refused it
    compiles: dict[str, int] = field(default_factory=dict)      # this process's and the workers' counts
    times: dict[str, float] = field(default_factory=dict)       # label -> ms, of every config evaluated


class Tuned:
    """A kernel with its launch shape chosen by measurement. Call it like a launch:
    ``tuned(*args, device=None)``. See `autotune`."""

    def __init__(self, kernel: KernelFunction, grid: Callable, key: Callable | None = None, dims=None,
                 comptime: dict | None = None, reps: int | None = None, rounds: int = 5, *,
                 lines: dict | None = None, fastmath: list | None = None, valid: Callable | None = None,
                 default=None, strategy: str = "auto", max_evals: int | None = None,
                 max_seconds: float | None = None, seed: int = 0, max_rounds: int = 40, rel_ci: float = 0.01,
                 verify: bool = True, rtol: float = 1e-4, atol: float = 1e-5, workers: int | None = None,
                 progress: bool | None = None, configs: str | os.PathLike | None = None,
                 on_mismatch: str = "tune", confirm: int = 3):
        if not isinstance(kernel, KernelFunction):
            raise ArgumentTypeError(f"cb.autotune takes a @cb.kernel, got {type(kernel).__name__}")
        sig = kernel.signature
        kinds = dict(zip(sig.names, sig.annotations))
        for name in comptime or {}:
            if not isinstance(kinds.get(name), ComptimeSpec):
                raise ArgumentTypeError(f"autotune: '{name}' is not a Comptime parameter of the kernel",
                                        kernel.__name__)
        self._line_params = [n for group in (lines or {}) for n in ((group,) if isinstance(group, str) else group)]
        for name in self._line_params:
            if not isinstance(kinds.get(name), ArraySpec):
                raise ArgumentTypeError(f"autotune: lines names '{name}', which is not an array parameter of the "
                                        "kernel", kernel.__name__)
        if strategy != "auto" and strategy not in search.STRATEGIES:
            raise ValueError(f"autotune '{kernel.__name__}': unknown strategy {strategy!r}; choose one of auto, "
                             f"{', '.join(search.STRATEGIES)}")
        if on_mismatch not in ("tune", "default"):
            raise ValueError(f"autotune '{kernel.__name__}': on_mismatch={on_mismatch!r}: use 'tune' (measure) or "
                             "'default' (launch the default config)")
        search.Budget(kernel.__name__, max_evals, max_seconds)       # a budget of 0 fails here, not at launch
        self.kernel, self.grid = kernel, grid
        self._grid_takes_comptime = len(inspect.signature(grid).parameters) >= 3
        self._kinds = tuple(("tuned" if n in (comptime or {}) else "comptime") if isinstance(a, ComptimeSpec) else
                            "array" if isinstance(a, (ArraySpec, RegionSpec)) else "scalar"
                            for n, a in zip(sig.names, sig.annotations))
        self._user_key = key is not None
        self._keys_by_count: dict[int, Callable[[tuple], tuple]] = {}
        self.key_of = key or self._default_key_of(_count_without_trailing_tuned(self._kinds))
        self._call_key = self._make_call_key()
        self.dims, self.comptime, self.lines = dims, dict(comptime or {}), lines
        self.valid, self.default = valid, default
        self.fastmath = [kernel.fastmath] if fastmath is None else list(fastmath)
        self.strategy, self.max_evals, self.max_seconds, self.seed = strategy, max_evals, max_seconds, seed
        self.measure = Measure(reps=reps, rounds=rounds, max_rounds=max(rounds, max_rounds), rel_ci=rel_ci)
        self.verify, self.tolerance = verify, Tolerance(rtol, atol)
        self.workers, self.progress, self.on_mismatch, self.confirm = workers, progress, on_mismatch, max(1, confirm)
        self.configs_file = None if configs is None else ConfigFile.read(configs)
        if self.configs_file is not None:
            self.configs_file.require(kernel)
        self.results: dict[tuple[str, str], Result] = {}      # (device, key text) -> the outcome, for export
        self._best: dict[tuple, Config] = {}
        # (device, key of the arguments) -> the launch of its config, ready for repeat calls
        self._chosen: dict[tuple, _Launch] = {}
        self._spaces: dict[Any, Space] = {}
        self._variants: dict[str | None, KernelFunction] = {kernel.fastmath: kernel}
        self._compiled_here: set = set()
        self.measured = 0          # configs measured by this object (cache hits measure none)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_keys_by_count"] = {}           # generated code: written again on load
        state["_chosen"] = {}                  # launches ready to run (launchers): made again on use
        del state["_call_key"]
        if not self._user_key:
            del state["key_of"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if not self._user_key:
            self.key_of = self._default_key_of(_count_without_trailing_tuned(self._kinds))
        self._call_key = self._make_call_key()

    # --- public -----------------------------------------------------------------------------

    def __call__(self, *args, device: Device | str | None = None) -> None:
        if SKIPPING and skipped():  # fake tensors (a derived fake implementation): nothing to tune or run
            return
        dev = current_device() if device is None else get_device(device) if isinstance(device, str) else device
        key = self._call_key(args, id(dev))
        try:
            launch = self._chosen.get(key)
        except TypeError:           # a user key that is not hashable: the text form below
            key, launch = None, None
        if launch is None:
            launch = self._prepared(self.best(*args, device=dev), len(args))
            if key is not None:
                self._chosen[key] = launch
        launch(args, dev)

    def best(self, *args, device: Device | str | None = None) -> Config:
        """The fastest config for these arguments' key on the device: from memory, a loaded config
        file, the on-disk cache, or a search now (on copies of the arguments the kernel writes)."""
        dev = self._device(device)
        key = (id(dev), self._key_text(args))
        found = self._best.get(key)
        if found is None:
            found = self._best[key] = self._find(args, dev, key[1]).config
        return found

    def tune(self, *args, device: Device | str | None = None, strategy: str | None = None,
             max_evals: int | None = None, max_seconds: float | None = None) -> Result:
        """Search now (measurements of earlier runs are reused), whatever files or earlier searches
        say; the result becomes this key's choice. Arguments override the launcher's settings."""
        dev = self._device(device)
        key = self._key_text(args)
        result = self._search(args, dev, key, strategy or self.strategy,
                              self.max_evals if max_evals is None else max_evals,
                              self.max_seconds if max_seconds is None else max_seconds)
        self._best[(id(dev), key)] = result.config
        self._chosen.clear()
        return result

    def run(self, config: Config, *args, device: Device | str | None = None) -> None:
        """Launch ``config`` (any config of the space, chosen or not) on these arguments, in place."""
        self._launch(config, args, self._device(device))

    def space(self, device: Device | str | None = None) -> Space:
        """The candidates on a device."""
        dev = self._device(device)
        found = self._spaces.get(dev.properties)
        if found is None:
            found = self._spaces[dev.properties] = Space(dev.properties, self.dims, self.comptime, self.lines,
                                                         self.fastmath, self.valid, self.default, self.kernel.__name__)
        return found

    # --- finding a config -------------------------------------------------------------------

    def _find(self, args: tuple, dev: Device, key: str) -> Result:
        ident = device_id(dev.properties)
        files = ([self.configs_file] if self.configs_file is not None else []) + loaded()
        reasons = []
        for file in files:
            config, why = file.lookup(self.kernel, dev.properties, key)
            if config is not None:
                why = self._unusable(config, dev)
                if not why:
                    logger.info("autotune '%s' on %s, key %s: %s from %s (not measured)", self.kernel.__name__,
                                dev.name, key, config.label, file.path)
                    return self._record(Result(config, float("nan"), "shipped", ident, key))
            reasons.append(why)
        space = self.space(dev)
        if reasons and self.on_mismatch == "default":
            logger.warning("autotune '%s': %s; launching the default config %s", self.kernel.__name__,
                           "; ".join(reasons), space.default.label)
            return self._record(Result(space.default, float("nan"), "default", ident, key))
        if reasons:
            logger.warning("autotune '%s': %s; tuning instead", self.kernel.__name__, "; ".join(reasons))
        strategy, budget = self.strategy, (self.max_evals, self.max_seconds)
        cache = self._cache(dev)
        earlier = cache.choice(key, self._search_id(space, strategy, *budget))
        if earlier is not None:
            config = Config.from_json(earlier[0])
            if config in space:
                logger.info("autotune '%s' on %s, key %s: %s at %.4f ms, chosen by an earlier search of %d configs",
                            self.kernel.__name__, dev.name, key, config.label, earlier[1], earlier[2])
                return self._record(Result(config, earlier[1], "cache", ident, key, strategy, earlier[2]))
        return self._search(args, dev, key, strategy, *budget)

    def _unusable(self, config: Config, dev: Device) -> str:
        """Why a shipped config cannot run here ("" if it can)."""
        names = {n for n, _ in config.comptime}
        if names != set(self.comptime):
            return f"the shipped config {config.label} sets Comptime {sorted(names)}, the tuner {sorted(self.comptime)}"
        if not fits(config.dim, dev.properties):
            return f"the shipped config {config.label} does not fit device '{dev.name}'"
        return ""

    def _record(self, result: Result) -> Result:
        self.results[(result.device, result.key)] = result
        return result

    # --- searching --------------------------------------------------------------------------

    def _search(self, args: tuple, dev: Device, key: str, strategy: str, max_evals, max_seconds) -> Result:
        began = time.perf_counter()
        space = self.space(dev)
        budget = search.Budget(self.kernel.__name__, max_evals, max_seconds)
        chosen = search.choose(strategy, space, budget, self.kernel.__name__)
        cache = self._cache(dev)
        checks = self._checks(space)
        known = cache.measurements(key, checks)
        arguments = Arguments(self.kernel, args, dev)
        reporter = Reporter(self.kernel.__name__, dev.name, key, len(space), strategy if strategy != "auto" else
                            f"auto ({chosen.__name__})", self.progress)
        state = {"reference": None, "failure": None, "measured": 0}
        expected = min(len(space), max_evals or len(space))        # compiles, for the pool's start
        stats_before = cb.compile_stats()
        worker_stats: dict[str, int] = {}

        def evaluate(batch: list[Config], out_of_time: Callable[[], bool]) -> dict[Config, float]:
            todo = [c for c in batch if c.label not in known]
            for name, count in self._precompile(todo, arguments, dev, expected).items():
                worker_stats[name] = worker_stats.get(name, 0) + count
            out, fresh = {}, {}
            for config in batch:
                if out and out_of_time():
                    break
                entry = known.get(config.label)
                cached = entry is not None
                if entry is None:
                    entry = fresh[config.label] = known[config.label] = self._evaluate(config, arguments, dev, state)
                reporter.config(config.label, entry.ms, entry.status, entry.detail, cached)
                out[config] = entry.ms if entry.status == "ok" else float("inf")
            cache.put(key, checks, fresh)
            state["measured"] += len(fresh)
            return out

        objective = search.Evaluations(evaluate, budget)
        search.run(chosen, space, objective, self.seed)
        self.measured += state["measured"]
        ok = {c: ms for c, ms in objective.values.items() if ms < float("inf")}
        if not ok:
            self._raise_failure(space, objective, known, arguments, dev, state)
        top = sorted(ok, key=ok.__getitem__)[:self.confirm if state["measured"] else 1]   # all cached: confirmed before
        best = self._confirm(top, ok, arguments, dev, known, cache, key, checks, reporter)
        seconds = time.perf_counter() - began
        after = cb.compile_stats()
        compiles = {"compiles": after["compiles"] - stats_before["compiles"],
                    "disk_loads": after["disk_loads"] - stats_before["disk_loads"],
                    "shared_shapes": after["shared_shapes"] - stats_before["shared_shapes"],
                    **{f"worker_{k}": v for k, v in worker_stats.items()}}
        objective.values.update(ok)
        labels = {c.label: c for c in objective.values}
        result = Result(best, ok[best], "measured", device_id(dev.properties), key, chosen.__name__,
                        len(objective.values), state["measured"], seconds,
                        {lb: known[lb].detail for lb in labels if known[lb].status == "wrong"},
                        {lb: known[lb].detail for lb in labels if known[lb].status == "failed"}, compiles,
                        {c.label: ms for c, ms in objective.values.items()})
        reporter.finish(best.label, ok[best], len(objective.values), state["measured"], seconds,
                        ", ".join(f"{k} {v}" for k, v in compiles.items()))
        cache.choose(key, self._search_id(space, strategy, max_evals, max_seconds), best.to_json(), ok[best],
                     len(objective.values), seconds)
        return self._record(result)

    def _confirm(self, top: list[Config], ok: dict, arguments: Arguments, dev: Device, known: dict, cache, key: str,
                 checks: str, reporter: Reporter) -> Config:
        """Time the best few configs again, interleaved, and choose among them on those times."""
        if len(top) < 2:
            return top[0]
        launches = [self._launcher(c, arguments, dev)[0] for c in top]
        timings = time_interleaved(launches, dev, self.measure)
        confirmed = {}
        for config, timing in zip(top, timings):
            ok[config] = timing.ms
            confirmed[config.label] = known[config.label] = Entry(timing.ms, "ok", "", timing.low, timing.high,
                                                                   timing.samples)
            reporter.confirmed(config.label, timing.ms)
        cache.put(key, checks, confirmed)
        return min(top, key=ok.__getitem__)

    def _evaluate(self, config: Config, arguments: Arguments, dev: Device, state: dict) -> Entry:
        """Run a config once on fresh arguments, check its output, then time it."""
        try:
            if self.verify and state["reference"] is None:
                state["reference"] = self._reference(arguments, dev)
            run, launched = self._launcher(config, arguments, dev)
            run()
            if self.verify:
                wrong = mismatch(state["reference"][1], arguments.outputs(launched), self.tolerance)
                if wrong:
                    return Entry(float("inf"), "wrong", f"{wrong}; default config {state['reference'][0].label}")
            timing = time_launches(run, dev, self.measure)
        except CubeError as e:
            if isinstance(e, ReferenceFailed):
                raise e.__cause__ from None
            state["failure"] = e
            return Entry(float("inf"), "failed", str(e).splitlines()[0])
        return Entry(timing.ms, "ok", "", timing.low, timing.high, timing.samples)

    def _reference(self, arguments: Arguments, dev: Device) -> tuple[Config, dict]:
        """The output of the default config (of the first config that runs, if the device refuses it)."""
        space, first = self.space(dev), None
        for config in [space.default, *space.configs]:
            try:
                run, launched = self._launcher(config, arguments, dev)
                run()
                outputs = arguments.outputs(launched)
            except CubeError as e:
                first = first or e
                continue
            if config != space.default:
                logger.warning("autotune '%s': the default config %s fails on %s (%s); outputs are checked "
                               "against %s instead", self.kernel.__name__, space.default.label, dev.name,
                               str(first).splitlines()[0], config.label)
            return config, outputs
        raise ReferenceFailed("every config failed") from first

    def _launcher(self, config: Config, arguments: Arguments, dev: Device) -> tuple[Callable[[], None], tuple]:
        """A launch of ``config`` on fresh arguments (compiled, not run), and those arguments."""
        count, dim, full, named, variant = self._shape(config, arguments.fresh())
        launch = variant.compile(*full, dim=dim, device=dev, **named)[count]
        self._compiled_here.add((id(dev), config))
        return (lambda: launch(*full, **named)), full

    def _precompile(self, todo: list[Config], arguments: Arguments, dev: Device, expected: int) -> dict[str, int]:
        """Compile the configs of a batch: where the device reads cube extents at run time, one
        config per group that differs only in CubeDim (of one rank pattern and units bound) first,
        since a shape-generic kernel compiles once for the whole group (`cubepy.runtime.shapes`);
        then the rest, in worker processes (see `pool`) where that pays for a search that expects
        ``expected`` compiles."""
        todo = [c for c in todo if (id(dev), c) not in self._compiled_here]
        if not dev.backend.runtime_cube_dim:
            return self._compile_in_pool(todo, arguments, dev, expected)
        groups: dict[tuple, list[Config]] = {}
        for config in todo:       # what a shape-generic executable is shared by (`cubepy.runtime.shapes`)
            shared_by = (replace(config, dim=(1, 1, 1)), tuple(d > 1 for d in config.dim),
                         dev.backend.units_bound(math.prod(config.dim)))
            groups.setdefault(shared_by, []).append(config)
        firsts = [members[0] for members in groups.values()]
        done = self._compile_in_pool(firsts, arguments, dev, expected)
        rest = []
        for members in groups.values():
            try:
                count, dim, full, named, variant = self._shape(members[0], arguments.base)
                generic = variant.compile(*full, dim=dim, device=dev, **named).shape_generic
            except CubeError:                 # evaluating it reports why
                generic = False
            if not generic:
                rest += members[1:]
        for name, n in self._compile_in_pool(rest, arguments, dev, expected).items():
            done[name] = done.get(name, 0) + n
        return done

    def _compile_in_pool(self, todo: list[Config], arguments: Arguments, dev: Device, expected: int) -> dict[str, int]:
        """Compile ``todo`` in worker processes, where that pays."""
        workers = pool.workers_for(len(todo), self.workers, expected)
        if workers < 2 or not pool.compiles_in_workers(dev):
            return {}
        jobs = []
        for config in todo:
            count, dim, full, named, variant = self._shape(config, arguments.base)
            small = pool.placeholders(self.kernel.signature, full, named)
            if small is None:
                return {}
            jobs.append((variant, small, dim, {}))
        done = pool.compile_all(jobs, dev, workers)
        self._compiled_here.update((id(dev), c) for c in todo)
        # A backend that kept nothing on disk would compile everything twice: if the first config
        # compiles here again instead of loading, use no pool on it from now on.
        before = cb.compile_stats()["compiles"]
        try:
            self._launcher(todo[0], arguments, dev)
        except CubeError:
            pass
        if cb.compile_stats()["compiles"] > before:
            pool.NOT_DISK_CACHED.add(dev.name)
            logger.info("autotune: device '%s' keeps no compiled code on disk: candidates compile in the tuning "
                        "process", dev.name)
        return done

    def _raise_failure(self, space, objective, known, arguments, dev, state) -> None:
        wrong = [lb for lb in (c.label for c in objective.values) if known[lb].status == "wrong"]
        if wrong and len(wrong) == len(objective.values):
            raise ArgumentValueError(f"autotune: every config computes another answer than the default config "
                                     f"({known[wrong[0]].detail}); is the kernel deterministic? Loosen rtol/atol "
                                     "or pass verify=False", self.kernel.__name__)
        failure = state["failure"]
        if failure is None:          # every refusal came from the cache: raise why, again
            try:
                run, _ = self._launcher(space.default, arguments, dev)
                run()
            except CubeError as e:
                failure = e
        if failure is not None:
            raise failure
        raise ArgumentValueError("autotune: every config failed", self.kernel.__name__)

    # --- launching --------------------------------------------------------------------------

    def _prepared(self, config: Config, n_args: int) -> _Launch:
        """The launch of ``config`` for calls with ``n_args`` arguments, with what does not depend
        on the arguments' values worked out once (a repeat call of the autotuned launcher then
        costs about what a plain launch does)."""
        return _Launch(config, n_args, self.kernel.signature.names, self._variant(config.fastmath), self.grid,
                       self._grid_takes_comptime)

    def _launch(self, config: Config, args: tuple, dev: Device) -> None:
        self._prepared(config, len(args))(args, dev)

    def _shape(self, config: Config, args: tuple) -> tuple:
        """``(count, dim, positional arguments, named arguments, kernel)`` of a launch of ``config``."""
        return self._prepared(config, len(args)).shape(args)

    def _variant(self, fastmath: str | None) -> KernelFunction:
        """The kernel compiled with another ``fastmath`` mode (the same source)."""
        found = self._variants.get(fastmath)
        if found is None:
            found = self._variants[fastmath] = cb.kernel(self.kernel.__wrapped__, checked=self.kernel.checked,
                                                         fastmath=fastmath)
        return found

    # --- keys -------------------------------------------------------------------------------

    def _cache(self, dev: Device) -> TuningCache:
        # The build is part of what is tuned: a checked kernel's best cube size can differ from the
        # same source's unchecked one (more registers), and fastmath changes the code
        k = self.kernel
        checked = k.checked if k.checked is not None else settings.checked_default()
        build = f"{k.source_digest}|checked={checked}|fastmath={k.fastmath}"
        return TuningCache(kernel_id(k), build, _device_key(dev))

    def _checks(self, space: Space) -> str:
        """What a measurement's verification was (rows of other checks are measured again)."""
        if not self.verify:
            return "unchecked"
        return f"against {space.default.label}, rtol={self.tolerance.rtol}, atol={self.tolerance.atol}"

    def _search_id(self, space: Space, strategy: str, max_evals, max_seconds) -> str:
        return (f"{strategy}|evals={max_evals}|seconds={max_seconds}|seed={self.seed}|{self._checks(space)}|"
                f"{space.digest_text}")

    def _key_text(self, args: tuple) -> str:
        """The key as text (what the disk cache stores): shapes as ints, dtypes by name."""
        key = self.key_of(args)
        if not self._user_key:
            key = tuple((tuple(int(s) for s in k[0]), str(k[1]).rpartition(".")[2], k[2]) if isinstance(k, tuple)
                        and len(k) == 3 else k for k in key)
        return repr(key)

    def _default_key(self, args: tuple) -> tuple:
        """Shapes and dtypes of the arrays (the objects themselves: cheap to build and to hash on
        every call; `_key_text` spells them out), types of the scalars, untuned Comptime values."""
        return self._default_key_of(len(args))(args)

    def _default_key_of(self, count: int) -> Callable[[tuple], tuple]:
        """`_default_key` for calls of ``count`` arguments, written out once per count."""
        found = self._keys_by_count.get(count)
        if found is None:
            found = self._keys_by_count[count] = _key_function(count, self._kinds, self._default_key)
        return found

    def _make_call_key(self) -> Callable[[tuple, int], tuple]:
        """The key of a call's ready launch in ``_chosen``: the device's id and the arguments' key,
        in one flat tuple for the default key (`_call_key_function`)."""
        key_of = self.key_of

        def other(args: tuple, dev: int) -> tuple:
            return (dev, _OTHER, key_of(args))
        if self._user_key:
            return other
        return _call_key_function(_count_without_trailing_tuned(self._kinds), self._kinds, other)

    def _device(self, device) -> Device:
        if device is None:
            return current_device()
        return get_device(device) if isinstance(device, str) else device


class _Launch:
    """``launch(args, device)``: ``config`` launched on arguments like the ones it was made for.
    Lines widths wrap their arrays; tuned Comptime values go after the caller's arguments, by
    position where they follow them directly (so that the kernel's launcher, and its warm path,
    serves repeated launches), by name otherwise."""

    __slots__ = ("config", "chosen", "lines", "appended", "named", "dim", "variant", "grid", "takes_config",
                 "as_given", "_last")

    def __init__(self, config: Config, n_args: int, names: list[str], variant: KernelFunction, grid,
                 takes_config: bool):
        self.config, self.chosen, self.variant, self.grid = config, Chosen(config), variant, grid
        self.takes_config = takes_config
        self.lines = [(i, width) for name, width in config.lines if width > 1 and (i := names.index(name)) < n_args]
        values, appended = dict(config.comptime), []
        while n_args + len(appended) < len(names) and names[n_args + len(appended)] in values:
            appended.append(values.pop(names[n_args + len(appended)]))
        self.appended, self.named = tuple(appended), values
        self.dim = config.dim[0] if config.dim[1:] == (1, 1) else config.dim
        self.as_given = not (self.lines or self.appended or self.named)     # the caller's arguments, unchanged
        self._last = (None, None)           # (cube count, its launcher) of the previous call

    def shape(self, args: tuple) -> tuple:
        """``(count, dim, positional arguments, named arguments, kernel)``."""
        dim = self.config.dim
        count = self.grid(args, dim, self.chosen) if self.takes_config else self.grid(args, dim)
        if self.lines:
            args = list(args)
            for i, width in self.lines:
                a = args[i]
                args[i] = LinesArg(a.array if isinstance(a, LinesArg) else a, width)
        return count, self.dim, (*args, *self.appended), self.named, self.variant

    def __call__(self, args: tuple, dev: Device) -> None:
        if not self.as_given:
            count, dim, full, named, variant = self.shape(args)
            variant[count, dim](*full, device=dev, **named)
            return
        # the common case, without the intermediate tuples: a repeat call costs what a plain launch does
        grid, dim = self.grid, self.config.dim
        count = grid(args, dim, self.chosen) if self.takes_config else grid(args, dim)
        last_count, launcher = self._last
        if count.__class__ is not int or count != last_count:      # the launcher of a 1-D count is kept
            launcher = self.variant[count, self.dim]
            if count.__class__ is int:
                self._last = (count, launcher)
        launcher(*args, device=dev)


class ReferenceFailed(CubeError):
    """No config of the space runs, so there is no output to check candidates against."""


register_entry_point(Tuned, "__call__")


def autotune(kernel: KernelFunction, grid: Callable, *, key: Callable | None = None, dims: list | None = None,
             comptime: dict[str, list] | None = None, reps: int | None = None, rounds: int = 5,
             lines: dict | None = None, fastmath: list | None = None, valid: Callable[[Config], bool] | None = None,
             default: Config | dict | None = None, strategy: str = "auto", max_evals: int | None = None,
             max_seconds: float | None = None, seed: int = 0, max_rounds: int = 40, rel_ci: float = 0.01,
             confirm: int = 3, verify: bool = True, rtol: float = 1e-4, atol: float = 1e-5,
             workers: int | None = None, progress: bool | None = None, configs: str | os.PathLike | None = None,
             on_mismatch: str = "tune") -> Tuned:
    """Tune ``kernel``'s launch shape (and chosen Comptime values, Line widths, fastmath) on the
    device it runs on.

    ``grid(args, dim)`` (or ``grid(args, dim, chosen)``, ``chosen`` being the config's Comptime
    values by name, with ``.lines`` and ``.fastmath``) gives the cube count for a cube of ``dim``
    units. The space: ``dims`` (default: the plane size times powers of two, from 64 units up to
    the device's maximum; `shapes` gives 2-D and 3-D ones) times every combination of
    ``comptime`` values, ``lines={"x": [1, 4]}`` widths (a tuple of names shares one width) and
    ``fastmath=[None, "algebraic"]``, where ``valid(config)`` holds. The first value of each is
    the default config (or ``default=``), whose output every candidate's must match (``rtol``,
    ``atol``; ``verify=False`` to skip): a candidate computing another answer is reported and
    never chosen.

    The first call for a ``key(args)`` (default: array shapes and dtypes, scalar types, untuned
    Comptime values) uses a loaded config file (`load_configs`, or ``configs=path``) if it matches
    the device and the kernel's source, else the choice of an earlier search (on-disk cache),
    else searches now: ``strategy`` ``"auto"`` (exhaustive for small spaces, bayes up to 2,048
    configs, else pattern), ``"exhaustive"``, ``"random"``, ``"pattern"`` or ``"bayes"``, within
    ``max_evals`` configs and ``max_seconds``; ``seed`` fixes the random choices. Candidates are
    compiled in parallel (``workers`` processes, default one per core; 0 for none) and timed as
    `cubepy.autotune.measure` says (``reps`` launches per sample, at least ``rounds`` samples, more
    until the 95% interval of the median is within ``rel_ci``), on copies of the arguments the
    kernel writes, so the caller's arrays see exactly one launch. The best ``confirm`` configs are
    then timed again, interleaved, and the fastest of those is chosen. Later calls launch it
    directly.

    Example::

        from cubepy.autotune import autotune

        tuned = autotune(saxpy, grid=lambda args, dim: (len(args[0]) + dim[0] - 1) // dim[0])
        tuned(x, y, 2.0)              # searched once per array size and device, then cached
    """
    return Tuned(kernel, grid, key, dims, comptime, reps, rounds, lines=lines, fastmath=fastmath, valid=valid,
                 default=default, strategy=strategy, max_evals=max_evals, max_seconds=max_seconds, seed=seed,
                 max_rounds=max_rounds, rel_ci=rel_ci, confirm=confirm, verify=verify, rtol=rtol, atol=atol,
                 workers=workers, progress=progress, configs=configs, on_mismatch=on_mismatch)


def _device_key(dev: Device) -> str:
    p = dev.properties
    return f"{p.backend}|{p.name}|plane={p.plane_dim}|cubepy={cb.__version__}"


def _count_without_trailing_tuned(kinds: tuple[str, ...]) -> int:
    """How many arguments a call usually passes: all but the tuned Comptime ones at the end."""
    count = len(kinds)
    while count and kinds[count - 1] == "tuned":
        count -= 1
    return count


def _key_function(count: int, kinds: tuple[str, ...], other_counts: Callable[[tuple], tuple]) -> Callable:
    """The default key of calls with ``count`` arguments (the kinds of the first ones; arguments
    past the kernel's parameters are not keyed), one expression per argument: the autotuned
    launcher keys every call, so no loop over kinds. ``other_counts`` serves other counts."""
    parts, slow = [], []
    for i, kind in enumerate(kinds[:count]):
        a = f"args[{i}]"
        for found, dtype in ((parts, "{}.dtype"), (slow, "_dtype({})")):
            found.append(a if kind == "comptime" else "None" if kind == "tuned" else
                         f"(({a}.array.shape, {dtype.format(a + '.array')}, {a}.width) if {a}.__class__ is LinesArg "
                         f"else ({a}.shape, {dtype.format(a)}, 1))" if kind == "array" else f"{a}.__class__.__name__")
    # the dtype read straight from the array (every array type has one), `_dtype` for anything else
    source = (f"def key(args):\n    if len(args) != {count}:\n        return other_counts(args)\n"
              f"    try:\n        return ({''.join(p + ', ' for p in parts)})\n"
              f"    except AttributeError:\n        return ({''.join(p + ', ' for p in slow)})\n")
    namespace = {"other_counts": other_counts, "_dtype": _dtype, "LinesArg": LinesArg}
    exec(compile(source, "<cubepy autotune key>", "exec"), namespace)
    return namespace["key"]


_OTHER = object()      # marks a call key made by `key_of` (never equal to a flat key's second item)


def _call_key_function(count: int, kinds: tuple[str, ...], other: Callable[[tuple, int], tuple]) -> Callable:
    """The key of a repeat call of the autotuned launcher: ``(device id, shape, dtype, ...)``, flat,
    arrays by shape and dtype, scalars by class, untuned Comptime values as they are (what
    `_key_function` keys, in one tuple: every call builds and hashes it). Calls of another count,
    Lines arguments and arrays without ``shape``/``dtype`` take ``other``."""
    names = [f"a{i}" for i in range(count)]
    parts, arrays = [], []
    for a, kind in zip(names, kinds):
        if kind == "array":
            parts += [f"{a}.shape", f"{a}.dtype"]
            arrays.append(a)
        elif kind == "comptime":
            parts.append(a)
        elif kind == "scalar":
            parts.append(f"{a}.__class__")
    unpack = f"    {''.join(n + ', ' for n in names)}= args\n" if count else ""
    lines_test = " or ".join(f"{a}.__class__ is LinesArg" for a in arrays)
    source = (f"def call_key(args, dev):\n    if len(args) != {count}:\n        return other(args, dev)\n{unpack}"
              + (f"    if {lines_test}:\n        return other(args, dev)\n" if arrays else "")
              + f"    try:\n        return (dev, {''.join(p + ', ' for p in parts)})\n"
              "    except AttributeError:\n        return other(args, dev)\n")
    namespace = {"other": other, "LinesArg": LinesArg}
    exec(compile(source, "<cubepy autotune call key>", "exec"), namespace)
    return namespace["call_key"]


def _dtype(a) -> Any:
    """The element type (a NumPy, CuPy, JAX or torch dtype; its text names it alike in all of them)."""
    dtype = getattr(a, "dtype", None)
    return dtype if dtype is not None else np.asarray(a).dtype
