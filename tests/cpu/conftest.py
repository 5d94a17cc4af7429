"""Skip everything when llvmlite is missing."""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test compiles into a private cache directory (never the user's)."""
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cubepy-cache"))
