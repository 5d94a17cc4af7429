"""Run the suite: per kernel and size, set up RAJAPerf's data, check every contender against the
NumPy reference (outputs poisoned first) and RAJAPerf's checksum, then time them interleaved."""

from __future__ import annotations

import math
import traceback
from dataclasses import dataclass, field

import numpy as np

from .app import App, Problem
from .checksum import TOLERANCE, agrees, kernel_checksum, show
from .memory import memory_for
from .timing import batch_size, fair_batches, interleaved, median, timer_for

SIZES = {"default": 1, "32x": 32}
VARIANTS = ("plain", "tuned")
MODES = ("checked", "unchecked")
SAMPLE_SECONDS = {"cpu": 0.05, "interp": 0.05, "cuda": 0.02, "opencl": 0.02}


@dataclass
class Contender:
    """One way to run a kernel: a cubepy variant in a mode, or a peer."""

    label: str
    family: str                    # "cubepy" or "peer"
    variant: str | None = None     # "plain" / "tuned" (cubepy)
    checked: bool | None = None
    rtol: float = 0.0
    rep: object = None
    result: dict = field(default_factory=dict)


def parse_variants(text: str) -> list[tuple[str, str]]:
    """``plain,tuned,checked,unchecked`` -> the (variant, mode) pairs: names of one axis filter it,
    an axis not named keeps all of its values."""
    words = {w.strip() for w in text.split(",") if w.strip()}
    unknown = words - set(VARIANTS) - set(MODES)
    if unknown:
        raise ValueError(f"unknown variant(s) {sorted(unknown)}: choose from {', '.join(VARIANTS + MODES)}")
    variants = [v for v in VARIANTS if v in words] or list(VARIANTS)
    modes = [m for m in MODES if m in words] or list(MODES)
    return [(v, m) for v in variants for m in modes]


def parse_sizes(text: str) -> list[str]:
    sizes = [s.strip() for s in text.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES and not s.isdigit():
            raise ValueError(f"unknown size {s!r}: choose default, 32x or a target size such as 4000")
    return sizes


def target_size(app: App, size: str) -> int:
    return app.default_size * SIZES[size] if size in SIZES else int(size)


def compare(actual: np.ndarray, expected: np.ndarray, rtol: float) -> tuple[bool, float]:
    """Equal to ``expected`` (NaN exactly where the reference left poison), each element within
    ``rtol`` of the output's largest magnitude: reassociated sums (fastmath, FMA contraction) err
    relative to their terms, not to a result that cancels to near zero. ``rtol=0`` means
    bit-identical. Returns the verdict and the largest error relative to that scale."""
    same_nan = np.array_equal(np.isnan(actual), np.isnan(expected))
    finite = ~np.isnan(expected)
    if not finite.any():
        return same_nan, 0.0
    scale = float(np.max(np.abs(expected[finite]))) or 1.0
    with np.errstate(invalid="ignore"):
        worst = float(np.max(np.abs(actual[finite] - expected[finite]))) / scale
    ok = same_nan and (np.array_equal(actual[finite], expected[finite]) if rtol == 0 else worst <= rtol)
    return bool(ok), worst


class KernelRun:
    """One kernel at one size on one device: its problem, reference, contenders and results."""

    def __init__(self, app: App, size: str, device, pairs, peers, samples: int, log=print, timer: str = "events"):
        self.app, self.size, self.device, self.pairs, self.peers = app, size, device, pairs, peers
        self.samples, self.log, self.timer = samples, log, timer
        self.memory = memory_for(device)

    def run(self) -> dict:
        app = self.app
        problem = app.set_up(target_size(app, self.size))
        expected = problem.copy_arrays()
        app.poison(expected)
        app.reference(problem, expected)
        reps = app.checksum_reps(problem)
        settled = self._settled(problem, expected, reps)
        reference_checksum = kernel_checksum(settled[name] for name in app.outputs)
        del settled
        arrays = {name: self.memory.upload(value) for name, value in problem.arrays.items()}
        contenders = self._contenders(problem, arrays)
        for c in contenders:
            self._check(c, problem, arrays, expected, reps, reference_checksum)
        timed = [c for c in contenders if c.result.get("correct")]
        self._time(timed)
        for c in contenders:        # the launch shapes (for tuned ports, what autotune chose)
            if hasattr(c.rep, "launches"):
                c.result["launches"] = [launch.describe() for launch in c.rep.launches]
        row = {
            "kernel": app.name, "size": self.size, "target_size": problem.target_size, "problem_size": problem.size,
            "its_per_rep": problem.its_per_rep, "kernels_per_rep": app.kernels_per_rep,
            "bytes_per_rep": problem.bytes_per_rep, "flops_per_rep": problem.flops_per_rep,
            "checksum_reps": reps, "reference_checksum": show(reference_checksum),
            "tuned_summary": app.tuned_summary,
            "contenders": {c.label: c.result for c in contenders},
        }
        row["ratios"] = ratios(row)
        return row

    def _settled(self, problem: Problem, expected: dict, reps: int) -> dict:
        """The arrays after ``reps`` reps from the set-up state. Where no state carries across reps
        one rep from the poisoned state wrote the same values (each kernel overwrites before it
        reads), so the poisoned reference with its unwritten (NaN) places set back to their
        set-up values is that state, without running the reference again."""
        if self.app.accumulates:
            settled = problem.copy_arrays()
            for _ in range(reps):
                self.app.reference(problem, settled)
            return settled
        return {name: np.where(np.isnan(expected[name]), problem.arrays[name], expected[name])
                for name in self.app.written_arrays()}

    # --- contenders ----------------------------------------------------------------------------

    def _contenders(self, problem: Problem, arrays: dict) -> list[Contender]:
        out = []
        for variant, mode in self.pairs:
            checked = mode == "checked"
            c = Contender(f"cubepy {variant} {mode}", "cubepy", variant, checked,
                          0.0 if variant == "plain" else self.app.tuned_rtol)
            try:
                c.rep = self.app.port(variant, problem, arrays, self.device, checked)
            except Exception as e:       # a port cubepy cannot compile is a result, not a crash
                c.result = failure("bind", e)
            out.append(c)
        for peer in self.peers:
            c = Contender(peer.name, "peer", rtol=peer.rtol)
            try:
                c.rep = peer.bind(self.app.name, problem, arrays)
            except Exception as e:
                c.result = failure("bind", e)
            out.append(c)
        return out

    def _check(self, c: Contender, problem: Problem, arrays: dict, expected: dict, reps: int, reference) -> None:
        if c.rep is None:
            return
        app, memory = self.app, self.memory
        try:
            app.poison(arrays, memory)
            c.rep()
            memory.synchronize()
            self.device.synchronize()       # raises what a checked kernel recorded (out-of-bounds)
            errors, correct = {}, True
            for name in app.written_arrays():
                ok, worst = compare(memory.download(arrays[name]), expected[name], c.rtol)
                errors[name] = worst
                correct &= ok
            for name in app.written_arrays():
                memory.assign(arrays[name], problem.arrays[name])
            for _ in range(reps):
                c.rep()
            memory.synchronize()
            self.device.synchronize()
            value = kernel_checksum(memory.download(arrays[name]) for name in app.outputs)
            checksum_ok = agrees(value, reference, TOLERANCE)
            c.result = {"correct": bool(correct and checksum_ok), "output_matches_reference": bool(correct),
                        "max_relative_error": errors, "checksum": show(value), "checksum_ok": checksum_ok}
            if not c.result["correct"]:
                self.log(f"  {app.name} {self.size}: {c.label} does not match the reference: {c.result}")
        except Exception as e:
            c.result = failure("check", e)
            self.log(f"  {app.name} {self.size}: {c.label} failed: {c.result['error']}")

    def _time(self, contenders: list[Contender]) -> None:
        if not contenders:
            return
        timer = timer_for(self.device, self.timer)
        target = SAMPLE_SECONDS.get(self.device.properties.backend, 0.02)
        batches = {}
        for c in contenders:
            c.rep()                                   # warm: every compile happened in the check
            batches[c.label] = (c.rep, batch_size(timer, c.rep, target, self.app.default_reps))
        batches = fair_batches(timer, batches)
        samples = interleaved(timer, batches, self.samples)
        for c in contenders:
            c.result.update(batch=batches[c.label][1], samples_s=samples[c.label],
                            median_s=median(samples[c.label]), min_s=min(samples[c.label]))


def failure(stage: str, e: Exception) -> dict:
    return {"correct": False, "error": f"{stage}: {type(e).__name__}: {e}".strip()[:2000],
            "traceback": traceback.format_exc(limit=8)[-4000:]}


PRIMARY_PEERS = ("CUDA (Base_CUDA)", "numba parallel")


def ratios(row: dict) -> dict:
    """cubepy median / peer median for every cubepy contender and peer that ran, and the cost of
    checked mode (checked / unchecked) per variant."""
    res = row["contenders"]
    times = {k: v.get("median_s") for k, v in res.items() if v.get("median_s")}
    peers = [k for k in times if not k.startswith("cubepy")]
    out = {}
    for label, t in times.items():
        if label.startswith("cubepy"):
            out[label] = {peer: t / times[peer] for peer in peers}
    for variant in VARIANTS:
        c, u = times.get(f"cubepy {variant} checked"), times.get(f"cubepy {variant} unchecked")
        if c and u:
            out[f"checked cost {variant}"] = c / u
    return out


def geomean(values: list[float]) -> float:
    values = [v for v in values if v and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
