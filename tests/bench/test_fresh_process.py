"""The start-up benchmarks' child processes: bytecode cached in a private folder, or not at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.fresh_process import child_env


def test_children_cache_bytecode_in_a_private_folder_whatever_the_parent_says(tmp_path):
    parent = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin"}
    cached, uncached = child_env(str(tmp_path), True, parent), child_env(str(tmp_path), False, parent)
    assert "PYTHONDONTWRITEBYTECODE" not in cached and uncached["PYTHONDONTWRITEBYTECODE"] == "1"
    assert cached["PYTHONPYCACHEPREFIX"] != uncached["PYTHONPYCACHEPREFIX"]
    assert cached["CUBEPY_CACHE_DIR"] == str(tmp_path)
    module = tmp_path / "probe_module.py"
    module.write_text("VALUE = 1\n")
    for env in (cached, uncached):
        subprocess.run([sys.executable, "-c", "import probe_module"], cwd=tmp_path, env=env, check=True, timeout=60)
    prefix = cached["PYTHONPYCACHEPREFIX"]
    assert list(Path(prefix).rglob("probe_module*.pyc"))        # written where asked
    assert not list(Path(uncached["PYTHONPYCACHEPREFIX"]).rglob("*.pyc"))
    assert not (tmp_path / "__pycache__").exists()
