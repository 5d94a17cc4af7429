"""Many random programs on several devices, in worker processes (a device that crashes the process,
as PoCL's miscompiled kernels did with heap corruption, takes down a worker, not the campaign).

`check` runs one seed: the interpreter at each plane size needed (the reference), the NumPy model
for straight-line programs, then each target device, and classifies the outcome per target:
``ok``, ``mismatch`` (outputs differ), ``error`` (the device raised where the interpreter did
not), ``skip`` (the device lacks a feature the kernel uses), ``crash`` (the worker died).
``invalid`` means the interpreter itself refused the program: a generator bug or a cubepy bug,
reported with the message so that it can be told apart.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import queue
import signal
import time
from dataclasses import dataclass, field

_devices: dict = {}


def device(target: str):
    """``interp-p8`` (the reference: every CubeDim traced on its own, one trace a kernel),
    ``cpu-p32``, ``cpu-p8-O1`` (LLVM -O1), ``opencl``, ``opencl-O0`` (-cl-opt-disable), ``cuda``,
    ``cuda-cubes`` (no launch test: the checks per cube and run run on the GPU), ``cuda-fast``
    (NVRTC's --Ofast-compile=max: about 2.5x shorter builds),
    ``interp-p32-gpu`` (the interpreter running the IR as CUDA gets it: checks per launch, cube and
    run, shape-generic code, small read-only arrays by value), ``interp-p8-runs`` (checks per run
    without checks per cube first), ``interp-p32-generic`` (CubeDims
    sharing shape-generic code, as the interpreter does by default): a device of this process,
    made once."""
    import cubepy as cb

    if target not in _devices:
        parts = target.split("-")
        options = {"shape_generic": False} if parts[0] == "interp" else {}
        for part in parts[1:]:
            if part.startswith("p"):
                options["plane_dim"] = int(part[1:])
            elif part == "gpu":
                options.update(checks_per_cube=True, checks_per_launch=True, checks_per_run=True, shape_generic=True,
                               inline_array_bytes=2048)
            elif part == "runs":              # checked per run, not per cube (as cpu with checks_per_cube=False)
                options.update(checks_per_run=True, checks_per_cube=False)
            elif part == "generic":
                options["shape_generic"] = True
            elif part == "cubes":             # cuda without checks per launch: the build with the cube's test
                options["checks_per_launch"] = False
            elif part == "fast":              # cuda through NVRTC's --Ofast-compile=max
                options["fast_compile"] = "max"
            elif part.startswith("O"):
                options["opt_level" if parts[0] == "cpu" else "build_options"] = (
                    int(part[1:]) if parts[0] == "cpu" else ("-cl-opt-disable",))
        _devices[target] = cb.device(parts[0], **options)
    return _devices[target]


def check(seed: int, targets: tuple, size: int = 40, model: bool = True) -> dict:
    from .generate import generate
    from .run import compare, execute, load

    start = time.perf_counter()
    program = generate(seed, size=size, exclude=excluded(targets))
    result = {"seed": seed, "lines": program.source().count("\n"), "targets": {}, "times": {}, "devices": targets}
    try:
        kernel = load(program)
    except Exception as e:  # the generator wrote something Python does not parse
        result["invalid"] = f"{type(e).__name__}: {e}"
        return result
    result["times"]["generate"] = time.perf_counter() - start
    refs = {}

    def reference(plane: int):
        if plane not in refs:
            t0 = time.perf_counter()
            refs[plane] = execute(kernel, program, device(f"interp-p{plane}"))
            result["times"][f"interp-p{plane}"] = time.perf_counter() - t0
        return refs[plane]

    first_plane = _plane_of(targets[0]) if targets else 32
    first = reference(first_plane)
    if first.error:
        result["invalid"] = first.error
        return result
    if model and program.straight:
        from .model import evaluate

        expected = evaluate(program, first_plane)
        diff = compare(program, expected, first) if expected is not None else None
        result["model"] = "ok" if expected is not None and diff is None else ("skip" if expected is None else diff)
    for target in targets:
        if target.startswith("interp") and not target.endswith(("-gpu", "-generic", "-runs")):
            result["targets"][target] = ("ok", "")
            continue
        dev = device(target)
        ref = reference(dev.properties.plane_dim)
        if ref.error:
            result["targets"][target] = ("invalid", ref.error)
            continue
        t0 = time.perf_counter()
        got = execute(kernel, program, dev)
        result["times"][target] = time.perf_counter() - t0
        if got.skipped:
            result["targets"][target] = ("skip", got.skipped)
        elif got.error:
            result["targets"][target] = ("error", got.error)
        else:
            diff = compare(program, ref, got)
            result["targets"][target] = ("ok", "") if diff is None else ("mismatch", diff)
    result["seconds"] = time.perf_counter() - start
    return result


def check_isolated(seed: int, targets: tuple, size: int = 40) -> dict:
    """`check` in a child process: a target whose compiler kills the process is reported as
    ``crash`` (each target is then run alone to tell which one it was) instead of ending ours."""
    ctx = mp.get_context("spawn")

    def run(these: tuple) -> tuple[int | None, dict | None]:
        results = ctx.Queue()
        child = ctx.Process(target=_check_into, args=(seed, these, size, results), daemon=True)
        child.start()
        while True:                      # read before joining: a child blocks until its result is read
            try:
                out = results.get(timeout=1.0)
                break
            except queue.Empty:
                if not child.is_alive():
                    out = None
                    break
        child.join()
        return child.exitcode, out

    code, out = run(targets)
    if out is not None:
        return out
    out = {"seed": seed, "targets": {}, "devices": targets}
    for target in targets:
        code, alone = run((target,))
        out["targets"][target] = (("crash", f"exit code {code}") if alone is None
                                  else alone["targets"].get(target, ("ok", "")))
    return out


def _check_into(seed: int, targets: tuple, size: int, results) -> None:
    import warnings

    warnings.simplefilter("ignore")
    results.put(check(seed, targets, size))


def excluded(targets) -> frozenset:
    """Types to leave out of the program: those a target device cannot run (f16 on PoCL)."""
    out = set()
    for t in targets:
        if not device(t).properties.supports("fp16"):
            out.add("f16")
    return frozenset(out)


def _plane_of(target: str) -> int:
    return device(target).properties.plane_dim


# a worker retires after this many kernels (against memory the devices' compilers may keep: 150
# kernels on the CPU backend and PoCL kept a worker at 0.45 GB, flat after the first 50)
KERNELS_PER_WORKER = 300


def _worker(tasks, results, size: int, gpu: int | None = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the parent's: it reports, then stops us
    if gpu is not None:            # before CUDA loads: this worker's kernels run on that GPU alone
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")    # as the parent saw them
        os.environ["CUDA_VISIBLE_DEVICES"] = visible[gpu % len(visible)] if visible[0] else str(gpu)
    os.environ.setdefault("CUBEPY_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "cubepy-fuzz-cache"))
    # every fuzz kernel is new (its module file too): an index entry of its trace (its pickled IR,
    # 150 KB for a fuzz kernel) would never be read
    os.environ.setdefault("CUBEPY_TRACE_INDEX", "0")
    import warnings

    warnings.simplefilter("ignore")
    for _ in range(KERNELS_PER_WORKER):
        task = tasks.get()
        if task is None:
            return
        seed, targets = task
        results.put(("start", os.getpid(), seed))
        try:
            out = check(seed, targets, size)
        except Exception as e:     # a bug in the fuzzer itself: report it, keep going
            import traceback

            out = {"seed": seed, "invalid": f"fuzzer: {type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}",
                   "targets": {}}
        # the kernel just checked is garbage now (its module and function form a cycle): collect it,
        # then keep what stays (imports, devices) out of later full passes of the collector, which
        # walked it again and again (a quarter of a worker's time before, and its memory grew)
        gc.collect()
        gc.freeze()
        results.put(("done", os.getpid(), out))
    results.put(("retired", os.getpid(), None))


@dataclass
class Tally:
    """Counts per target and outcome, the failures, and how long it took."""

    kernels: int = 0
    counts: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    invalid: list = field(default_factory=list)
    model: dict = field(default_factory=dict)
    seconds: float = 0.0
    lines: int = 0
    interrupted: bool = False
    times: dict = field(default_factory=dict)     # target -> (kernels timed, seconds in all)

    def add(self, out: dict) -> None:
        self.kernels += 1
        self.lines += out.get("lines", 0)
        for target, seconds in out.get("times", {}).items():
            n, total = self.times.get(target, (0, 0.0))
            self.times[target] = (n + 1, total + seconds)
        if "invalid" in out:
            self.invalid.append((out["seed"], out["invalid"]))
            return
        self.counts.setdefault("interp", {}).setdefault("ok", 0)
        self.counts["interp"]["ok"] += 1
        if "model" in out:
            key = out["model"] if out["model"] in ("ok", "skip") else "mismatch"
            self.model[key] = self.model.get(key, 0) + 1
            if key == "mismatch":
                self.failures.append((out["seed"], "model", "mismatch", out["model"], out.get("devices", ())))
        for target, (status, detail) in out["targets"].items():
            per = self.counts.setdefault(target, {})
            per[status] = per.get(status, 0) + 1
            if status in ("mismatch", "error", "crash", "invalid"):
                self.failures.append((out["seed"], target, status, detail, out.get("devices", (target,))))

    def table(self) -> str:
        rows = [f"{self.kernels} kernels ({self.lines / max(1, self.kernels):.0f} lines on average) in "
                f"{self.seconds:.0f} s; {len(self.invalid)} rejected by the interpreter"
                + ("; interrupted" if self.interrupted else "")]
        if self.model:
            rows.append("  NumPy model vs interp: " + ", ".join(f"{k} {v}" for k, v in sorted(self.model.items())))
        for target, per in sorted(self.counts.items()):
            compared = sum(v for k, v in per.items() if k != "skip")
            rows.append(f"  {target:12s} " + ", ".join(f"{k} {v}" for k, v in sorted(per.items())) +
                        f"  ({compared} compared)")
        if self.times:
            rows.append("  seconds per kernel (compile and run): " + ", ".join(
                f"{t} {total / n:.2f}" for t, (n, total) in sorted(self.times.items())))
        return "\n".join(rows)


def campaign(seeds, assign, workers: int, size: int = 40, deadline: float | None = None,
             on_result=None, gpus: int = 1) -> Tally:
    """Run ``check(seed, assign(seed))`` for each seed on ``workers`` processes until ``deadline``
    (time.monotonic()); a worker that dies is replaced and its seed counted as a crash. Ctrl-C
    ends the run early with the tally of the kernels done (``tally.interrupted``). With ``gpus``
    above 1, worker k sees GPU k mod ``gpus`` alone (compiles are the CPU's work, so a host with
    many cores and GPUs runs many workers without crowding one GPU with their contexts)."""
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    procs = {}

    deaths, spawned = [0], [0]

    def spawn():
        if deaths[0] > 3 * workers + 10:
            raise RuntimeError("fuzz workers keep dying before they run anything (is the calling module "
                               "guarded by if __name__ == '__main__'?)")
        gpu = spawned[0] % gpus if gpus > 1 else None
        spawned[0] += 1
        p = ctx.Process(target=_worker, args=(tasks, results, size, gpu), daemon=True)
        p.start()
        procs[p.pid] = (p, None)

    for _ in range(workers):
        spawn()
    tally = Tally()
    start = time.monotonic()
    seeds = iter(seeds)
    pending = 0

    def feed():
        nonlocal pending
        while pending < 2 * workers:
            if deadline is not None and time.monotonic() > deadline:
                return
            seed = next(seeds, None)
            if seed is None:
                return
            tasks.put((seed, tuple(assign(seed))))
            pending += 1

    feed()
    try:
        while pending:
            try:
                kind, pid, payload = results.get(timeout=1.0)
            except queue.Empty:
                for pid, (p, seed) in list(procs.items()):
                    if not p.is_alive():
                        del procs[pid]
                        deaths[0] += seed is None and p.exitcode != 0   # exit code 0: it retired
                        if seed is not None:
                            pending -= 1
                            out = {"seed": seed, "targets": {"worker": ("crash", f"exit code {p.exitcode}")},
                                   "devices": tuple(assign(seed))}     # what to replay it on
                            tally.add(out)
                            if on_result:
                                on_result(out)
                        spawn()
                feed()
                continue
            if kind == "start":
                p, _ = procs.get(pid, (None, None))
                if p is not None:
                    procs[pid] = (p, payload)
                continue
            if kind == "retired":
                p, _ = procs.pop(pid, (None, None))
                if p is not None:          # else it was seen gone and replaced already
                    p.join(timeout=30)
                    spawn()
                continue
            pending -= 1
            p, _ = procs.get(pid, (None, None))
            if p is not None:
                procs[pid] = (p, None)
            tally.add(payload)
            if on_result:
                on_result(payload)
            feed()
    except KeyboardInterrupt:      # Ctrl-C: stop, and report what was done
        tally.interrupted = True
    for _ in procs:
        tasks.put(None)
    for p, _ in procs.values():
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    tally.seconds = time.monotonic() - start
    return tally
