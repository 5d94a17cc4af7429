"""The on-disk tuning cache: one SQLite database, ``$CUBEPY_CACHE_DIR/autotune/tuning.sqlite3``.

``measurements`` keeps one row per (kernel, source hash, device, key, checks, config): its time,
the interval, or why it was not timed (``failed``: the device refused it; ``wrong``: its output
differed from the default config's). ``checks`` names the verification (the reference config and
the tolerances), so that other checks measure again. ``choices`` keeps the outcome of each search: per (kernel,
source, device, key, space and strategy) the config chosen, so that a later process uses it
without searching. A new config in a space measures only itself; an edited kernel (another
source hash) or another device starts afresh.

SQLite makes it safe for concurrent writers (processes tuning at once: each write is one
transaction, waiting up to 60 s for another's lock); the database is in WAL mode so that
readers never wait for writers.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from cubepy import settings

SCHEMA = """
CREATE TABLE IF NOT EXISTS measurements (
    kernel TEXT, source TEXT, device TEXT, key TEXT, checks TEXT, config TEXT,
    ms REAL, low REAL, high REAL, samples INTEGER, status TEXT, detail TEXT, at REAL,
    PRIMARY KEY (kernel, source, device, key, checks, config));
CREATE TABLE IF NOT EXISTS choices (
    kernel TEXT, source TEXT, device TEXT, key TEXT, search TEXT,
    config TEXT, ms REAL, evaluations INTEGER, seconds REAL, at REAL,
    PRIMARY KEY (kernel, source, device, key, search));
"""


@dataclass(frozen=True)
class Entry:
    """One measured config: ``status`` is ``ok`` (timed), ``failed`` or ``wrong`` (not timed)."""

    ms: float
    status: str = "ok"
    detail: str = ""
    low: float = 0.0
    high: float = 0.0
    samples: int = 0


class TuningCache:
    """The tuning cache of one kernel source on one device (``kernel_name``: its module and name)."""

    def __init__(self, kernel_name: str, source_hash: str, device_key: str):
        self.path = settings.cache_dir() / "autotune" / "tuning.sqlite3"
        self.identity = (kernel_name, source_hash, device_key)

    def _connect(self) -> sqlite3.Connection | None:
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            return db
        except sqlite3.Error:           # a read-only or broken cache folder: tune without it
            return None

    def measurements(self, key: str, checks: str) -> dict[str, Entry]:
        """Every config measured for ``key`` under ``checks``, by label."""
        db = self._connect()
        if db is None:
            return {}
        with db:
            rows = db.execute("SELECT config, ms, status, detail, low, high, samples FROM measurements WHERE "
                              "kernel=? AND source=? AND device=? AND key=? AND checks=?",
                              (*self.identity, key, checks)).fetchall()
        db.close()
        return {label: Entry(float("inf") if ms is None else ms, status, detail or "", low or 0.0, high or 0.0,
                             samples or 0) for label, ms, status, detail, low, high, samples in rows}

    def put(self, key: str, checks: str, measured: dict[str, Entry]) -> None:
        """Add measurements of ``key`` under ``checks`` (by config label), in one transaction."""
        db = self._connect()
        if db is None or not measured:
            return
        now = time.time()
        with db:
            db.executemany("INSERT OR REPLACE INTO measurements VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           [(*self.identity, key, checks, label, None if e.ms == float("inf") else e.ms, e.low, e.high,
                             e.samples, e.status, e.detail, now) for label, e in measured.items()])
        db.close()

    def choice(self, key: str, search: str) -> tuple[dict, float, int] | None:
        """``(config as JSON data, ms, evaluations)`` of a search done before, if any."""
        db = self._connect()
        if db is None:
            return None
        with db:
            row = db.execute("SELECT config, ms, evaluations FROM choices WHERE kernel=? AND source=? AND device=? "
                             "AND key=? AND search=?", (*self.identity, key, search)).fetchone()
        db.close()
        return None if row is None else (json.loads(row[0]), row[1], row[2])

    def choose(self, key: str, search: str, config: dict, ms: float, evaluations: int, seconds: float) -> None:
        """Record the outcome of a search."""
        db = self._connect()
        if db is None:
            return
        with db:
            db.execute("INSERT OR REPLACE INTO choices VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (*self.identity, key, search, json.dumps(config, sort_keys=True), ms, evaluations, seconds,
                        time.time()))
        db.close()
