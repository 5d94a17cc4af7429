"""What a tuning says: CUBEPY_PRINT_AUTOTUNING prints every config and its time, a progress line
shows on long tunings, and the cubepy logger gets the start, each config and the choice."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
from cubepy.autotune import autotune, progress

from tests.autotune.kernels import axpy, lines_grid

SPACE = {"dims": [32, 64, 128], "comptime": {"per_unit": [1, 2]}, "workers": 0, "rounds": 2}


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))


def test_print_autotuning_prints_each_config_its_time_and_the_choice(rng, monkeypatch, capsys):
    monkeypatch.setenv("CUBEPY_PRINT_AUTOTUNING", "1")
    x, y = rng.standard_normal(2048).astype(np.float32), rng.standard_normal(2048).astype(np.float32)
    autotune(axpy, lines_grid, **SPACE, confirm=1)(x, y, 0.5, device="cpu")
    err = capsys.readouterr().err
    lines = re.findall(r"^autotune axpy \[(\d+)\] (dim=\S+ per_unit=\d): ([\d.]+) ms$", err, re.M)
    assert [int(n) for n, _, _ in lines] == [1, 2, 3, 4, 5, 6] and len({label for _, label, _ in lines}) == 6
    assert re.search(r"autotune 'axpy' on cpu, key .*: dim=\S+ per_unit=\d at [\d.]+ ms \(auto \(exhaustive\): "
                     r"6 of 6 configs evaluated, 6 measured now", err)


def test_without_the_setting_nothing_is_printed_and_the_logger_has_it_all(rng, monkeypatch, capsys, caplog):
    monkeypatch.delenv("CUBEPY_PRINT_AUTOTUNING", raising=False)
    x, y = rng.standard_normal(2048).astype(np.float32), rng.standard_normal(2048).astype(np.float32)
    with caplog.at_level(logging.DEBUG, logger="cubepy"):
        autotune(axpy, lines_grid, **SPACE)(x, y, 0.5, device="cpu")
    assert capsys.readouterr().err == ""
    messages = [r.message for r in caplog.records if r.name == "cubepy"]
    assert any("exhaustive) search over 6 configs" in m for m in messages)
    assert sum(bool(re.search(r": dim=\S+ per_unit=\d: [\d.]+ ms$", m)) for m in messages) == 6
    assert any("6 measured now" in m for m in messages)


def test_a_long_tuning_shows_progress_lines_without_tqdm(rng, monkeypatch, capsys):
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "_tqdm", lambda total, description: None)       # as if tqdm were not installed
    x, y = rng.standard_normal(2048).astype(np.float32), rng.standard_normal(2048).astype(np.float32)
    autotune(axpy, lines_grid, **SPACE, progress=True)(x, y, 0.5, device="cpu")
    shown = re.findall(r"^autotune axpy: (\d) configs evaluated, best [\d.]+ ms \(dim=", capsys.readouterr().err, re.M)
    assert shown == ["1", "2", "3", "4", "5", "6"]
