"""``cubepy bench`` runs a subset, prints a table and writes valid JSON (and a plot)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cubepy.cli import main


def test_bench_runs_a_subset_and_writes_json(tmp_path, capsys):
    out, png = tmp_path / "bench.json", tmp_path / "ratios.png"
    status = main(["bench", "--kernels", "FIR,PRESSURE", "--device", "cpu", "--sizes", "1200", "--reps", "2",
                   "--variants", "plain,tuned,checked,unchecked", "--peers", "openmp", "--transfer-reps", "2",
                   "--transfer-size", "4096", "--progress", "plain", "--json", str(out), "--plot", str(png)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "cpu:" in printed and "-bit SIMD" in printed and "transfer study" in printed
    results = json.loads(out.read_text())
    assert [r["kernel"] for r in results["rows"]] == ["FIR", "PRESSURE"]
    row = results["rows"][0]
    assert set(row["contenders"]) >= {"cubepy plain checked", "cubepy plain unchecked", "cubepy tuned checked",
                                      "cubepy tuned unchecked"}
    assert all(c["correct"] for c in row["contenders"].values())
    assert row["contenders"]["cubepy plain checked"]["median_s"] > 0
    assert row["contenders"]["cubepy tuned unchecked"]["launches"][0]["kernel"] == "fir_tuned"
    assert row["contenders"]["cubepy plain checked"]["launches"][0]["cube_dim"] == 256
    if "C OpenMP" in row["contenders"]:
        assert "C OpenMP" in row["ratios"]["cubepy plain checked"]
    assert "checked cost plain" in row["ratios"]
    assert results["machine"]["simd_bits"] in (128, 256, 512)
    study = results["transfer"]["scenarios"]
    assert set(study) == {"numpy", "preload", "host read per kernel"}
    assert all(s["correct"] and s["launches"] == 12 for s in study.values())
    try:
        import matplotlib  # noqa: F401
        assert png.stat().st_size > 0
    except ImportError:
        assert not png.exists()


def test_bench_rejects_an_unknown_kernel(capsys):
    assert main(["bench", "--kernels", "NOPE", "--device", "cpu", "--no-transfer"]) == 2
    assert "unknown kernel" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["cubepy", "benchmarks.rajaperf"])
def test_the_command_line_entry_points_answer_help(module):
    args = [sys.executable, "-m", module] + (["bench"] if module == "cubepy" else []) + ["--help"]
    root = Path(__file__).resolve().parents[2]          # benchmarks.rajaperf runs from a checkout's root
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0 and "--kernels" in done.stdout, done.stderr


def test_the_queued_timer_is_for_cuda_and_host_devices_keep_the_host_clock():
    import cubepy as cb
    from benchmarks.rajaperf.timing import HostTimer, timer_for

    assert isinstance(timer_for(cb.device("cpu"), "queued"), HostTimer)
    opencl = cb.device("opencl")
    if not opencl.available:
        pytest.skip(f"no OpenCL device: {opencl.reason}")
    with pytest.raises(ValueError, match="needs a CUDA device"):
        timer_for(opencl, "queued")


def test_the_queued_timer_gives_every_contender_the_least_batch():
    """With the queued timer a sample's fixed cost weighs 1/batch on each launch, so every
    contender of a comparison takes one batch, the least the host's pace allows any of them;
    other timers keep each contender's own."""
    from benchmarks.rajaperf.timing import HostTimer, fair_batches, interleaved

    class Queued:                           # the queued timer's batch rule, host times made up
        def __init__(self):
            self.host_s, self.seen = {}, []

        def batch_for(self, rep, batch):
            return max(1, min(batch, int(0.002 / self.host_s[rep])))

        def sample(self, rep, batch):
            self.seen.append((rep, self.batch_for(rep, batch)))
            return 1e-6

    timer = Queued()
    fast, slow = (lambda: None), (lambda: None)
    timer.host_s = {fast: 10e-6, slow: 40e-6}                # 200 and 50 reps in the hold
    contenders = {"fast": (fast, 100), "slow": (slow, 100)}
    assert fair_batches(timer, contenders) == {"fast": (fast, 50), "slow": (slow, 50)}
    interleaved(timer, contenders, 3)
    assert {batch for _, batch in timer.seen} == {50}
    assert fair_batches(HostTimer(), {"a": (fast, 7), "b": (slow, 9)}) == {"a": (fast, 7), "b": (slow, 9)}
