"""The RAJAPerf suite's tests: tiny sizes, interp and cpu; timing is never asserted.

Autotuning caches go to a private folder per session (never the user's cache)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cubepy-cache"))
