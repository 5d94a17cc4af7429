"""Put this folder on sys.path (for cpu_kernels) and skip everything when llvmlite is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

pytest.importorskip("llvmlite")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test compiles into a private cache directory (never the user's)."""
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cubepy-cache"))
