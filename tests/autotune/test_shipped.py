"""Shareable results: configs exported to a file (API and `cubepy tune --out`), used at run time
without measuring on a matching device and kernel source; a mismatch falls back with a log line;
a file for other kernels is a clear error. The tuning cache takes concurrent writers."""

from __future__ import annotations

import json
import logging
import multiprocessing
import sqlite3

import cubepy.bench.progress  # noqa: F401  (see test_cubepy_tune_writes_the_configs_of_its_targets)
import numpy as np
import pytest
from cubepy.autotune import Config, TuningCache, autotune, export_configs, load_configs, unload_configs
from cubepy.autotune.cache import Entry

from cubepy.cli import main
from tests.autotune.kernels import axpy, busy_copy, lines_grid, one_per_unit

SPACE = {"dims": [32, 64], "comptime": {"per_unit": [1, 2]}, "workers": 0, "rounds": 2}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path / "cache"))
    yield tmp_path
    unload_configs()


def arrays(rng, n=2048):
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def shipped(rng, path) -> Config:
    """Tune axpy on the CPU, export it to ``path``, then forget every measurement."""
    x, y = arrays(rng)
    tuned = autotune(axpy, lines_grid, **SPACE)
    tuned(x, y, 0.5, device="cpu")
    assert export_configs(path, [tuned]) == 1
    return tuned.best(x, y, 0.5, device="cpu")


def test_a_shipped_config_is_used_without_measuring(rng, private_cache, monkeypatch, caplog):
    path = private_cache / "configs.json"
    chosen = shipped(rng, path)
    data = json.loads(path.read_text())
    entry = data["kernels"]["tests.autotune.kernels.axpy"]
    assert data["format"] == "cubepy-tuned-configs/1" and entry["source"] == axpy.source_digest
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(private_cache / "elsewhere"))       # another machine
    x, y = arrays(rng)
    y0 = y.copy()
    user = autotune(axpy, lines_grid, **SPACE, configs=path)
    with caplog.at_level(logging.INFO, logger="cubepy"):
        user(x, y, 0.5, device="cpu")
    assert user.measured == 0 and user.best(x, y, 0.5, device="cpu") == chosen
    assert any("(not measured)" in r.message and str(path) in r.message for r in caplog.records)
    np.testing.assert_allclose(y, y0 + 0.5 * x, rtol=1e-6)
    load_configs(path)                           # or for every kernel of the process
    everyone = autotune(axpy, lines_grid, **SPACE)
    everyone(x, y, 0.5, device="cpu")
    assert everyone.measured == 0


def test_another_source_or_device_or_key_falls_back_with_a_log_line(rng, private_cache, monkeypatch, caplog):
    path = private_cache / "configs.json"
    shipped(rng, path)
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(private_cache / "elsewhere"))
    data = json.loads(path.read_text())
    entry = data["kernels"]["tests.autotune.kernels.axpy"]
    edited = dict(data, kernels={"tests.autotune.kernels.axpy": dict(entry, source="0" * 64)})
    (private_cache / "old.json").write_text(json.dumps(edited))
    x, y = arrays(rng)
    with caplog.at_level(logging.WARNING, logger="cubepy"):
        tuned = autotune(axpy, lines_grid, **SPACE, configs=private_cache / "old.json")
        tuned(x, y, 0.5, device="cpu")
    assert tuned.measured == 4
    assert any("tuned for another source" in r.message and "tuning instead" in r.message for r in caplog.records)
    caplog.clear()
    other_device = dict(data, kernels={"tests.autotune.kernels.axpy": dict(entry, devices={
        "cuda|NVIDIA H200|plane=32": next(iter(entry["devices"].values()))})})
    (private_cache / "h200.json").write_text(json.dumps(other_device))
    with caplog.at_level(logging.WARNING, logger="cubepy"):
        fallback = autotune(axpy, lines_grid, **SPACE, configs=private_cache / "h200.json", on_mismatch="default")
        fallback(x, y, 0.5, device="cpu")
    assert fallback.measured == 0 and fallback.best(x, y, 0.5, device="cpu").label == "dim=32x1x1 per_unit=1"
    assert any("for device cpu|" in r.message and "it has cuda|NVIDIA H200|plane=32" in r.message
               and "launching the default config" in r.message for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cubepy"):
        bigger = autotune(axpy, lines_grid, **SPACE, configs=path, on_mismatch="default")
        bigger(*arrays(rng, 4096), 0.5, device="cpu")
    assert any("for key" in r.message and "4096" in r.message for r in caplog.records)


def test_a_config_file_for_other_kernels_or_of_another_format_is_an_error(rng, private_cache):
    path = private_cache / "configs.json"
    shipped(rng, path)
    with pytest.raises(ValueError, match=r"autotune 'busy_copy': config file .*configs.json' has configs of "
                                         r"tests.autotune.kernels.axpy, not of tests.autotune.kernels.busy_copy"):
        autotune(busy_copy, one_per_unit, comptime={"work": [1]}, configs=path)
    (private_cache / "bad.json").write_text(json.dumps({"format": "triton-cache"}))
    with pytest.raises(ValueError, match="has format 'triton-cache', not 'cubepy-tuned-configs/1'"):
        load_configs(private_cache / "bad.json")
    with pytest.raises(FileNotFoundError, match="cannot be read"):
        load_configs(private_cache / "missing.json")
    with pytest.raises(ValueError, match="nothing to write"):
        export_configs(private_cache / "empty.json", [autotune(axpy, lines_grid, **SPACE)])


def test_cubepy_tune_writes_the_configs_of_its_targets(private_cache, capsys):
    # main() builds every subcommand's parser, importing cubepy.bench; its progress module binds
    # sys.stderr when imported, so it is imported above, outside capsys, whose stream closes.
    out = private_cache / "tuned.json"
    assert main(["tune", "tests.autotune.kernels:targets", "--device", "cpu", "--out", str(out),
                 "--strategy", "exhaustive"]) == 0
    printed = capsys.readouterr().out
    assert "wrote 2 configs to" in printed and printed.count("axpy") == 2
    table = next(iter(json.loads(out.read_text())["kernels"]["tests.autotune.kernels.axpy"]["devices"].values()))
    assert len(table) == 2 and all(set(e["config"]) == {"dim", "comptime"} and e["evaluations"] == 4
                                   for e in table.values())
    with pytest.raises(SystemExit, match="no function 'nothing'"):
        main(["tune", "tests.autotune.kernels:nothing", "--device", "cpu"])
    with pytest.raises(SystemExit) as refused:
        main(["tune", "tests.autotune.kernels:targets", "--device", "cpu", "--strategy", "annealing"])
    assert refused.value.code == 2 and "invalid choice: 'annealing'" in capsys.readouterr().err


def _write_rows(path: str, worker: int) -> None:
    import os

    os.environ["CUBEPY_CACHE_DIR"] = path
    cache = TuningCache("k", "source", f"device{worker % 2}")
    for i in range(25):
        cache.put("key", "checks", {f"w{worker} c{i}": Entry(float(i), "ok")})
        cache.choose(f"key{i}", "search", {"dim": [worker, 1, 1]}, 1.0, 1, 0.1)


def test_the_tuning_cache_takes_concurrent_writers(private_cache):
    folder = str(private_cache / "shared")
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_rows, args=(folder, w)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    with sqlite3.connect(f"{folder}/autotune/tuning.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM measurements").fetchone() == (100,)
        assert db.execute("SELECT COUNT(*) FROM choices").fetchone() == (50,)
