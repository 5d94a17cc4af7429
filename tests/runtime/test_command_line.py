"""The cubepy command: cache, devices and version (bench has its own tests in tests/bench)."""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy.cli import main
from tests.kernels import saxpy


def test_cache_info_clear_and_prune(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))

    def fresh():          # a new kernel object compiles (or loads) again, so the folder gets an entry
        return cb.kernel(checked=False)(saxpy.fn)

    fresh()[1, 64](np.ones(64, np.float32), np.zeros(64, np.float32), 1.0, device="cpu")
    assert main(["cache", "info"]) == 0
    shown = capsys.readouterr().out
    # the object code, and the trace that a fresh process restores (cubepy.runtime.trace_index)
    assert str(tmp_path) in shown and "cpu" in shown and "traces" in shown and "1 entries" in shown
    assert main(["cache", "prune", "--max-size", "1G"]) == 0 and "deleted 0 entries" in capsys.readouterr().out
    assert main(["cache", "prune", "--max-size", "0"]) == 0 and "deleted 2 entries" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    main(["cache", "info"])
    assert "0 entries" in capsys.readouterr().out


def test_devices_lists_every_backend_with_its_plane_sizes_or_why_not(capsys):
    assert main(["devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {line.split()[0] for line in lines} == set(cb.backend_names())
    cpu = next(line for line in lines if line.startswith("cpu"))
    assert "plane" in cpu and "units/cube" in cpu
    assert all("unavailable:" in line or "plane" in line for line in lines)


def test_version(capsys):
    assert main(["version"]) == 0 and capsys.readouterr().out.strip() == f"cubepy {cb.__version__}"



def test_a_reader_that_leaves_early_gets_no_traceback(monkeypatch):
    # `cubepy devices | head -1`: the pipe's reader is gone, so writing raises BrokenPipeError
    import os
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    saved = os.dup(1)
    try:
        with os.fdopen(write_end, "w", buffering=1) as closed_pipe:
            monkeypatch.setattr(sys, "stdout", closed_pipe)
            assert main(["devices"]) == 0
            monkeypatch.undo()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
