"""The on-disk cache of measured configs: one entry per (kernel source, device, key, config).

A new config in the list measures only itself; an edited kernel (another source hash) or another
device starts afresh. Files are JSON under ``$CUBEPY_CACHE_DIR/autotune``, written atomically.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cubepy import settings


class TuningCache:
    """Measured milliseconds per config, for one kernel source on one device."""

    def __init__(self, kernel_name: str, source_hash: str, device_key: str):
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in kernel_name)
        self.path = settings.cache_dir() / "autotune" / f"{safe}-{source_hash[:16]}.json"
        self.identity = {"source": source_hash, "device": device_key}
        self.entries: dict[str, float] = self._load()

    def _load(self) -> dict[str, float]:
        try:
            data = json.loads(Path(self.path).read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("source") != self.identity["source"]:
            return {}
        table = data.get("devices", {}).get(self.identity["device"], {})
        return {k: float(v) for k, v in table.items()} if isinstance(table, dict) else {}

    @staticmethod
    def entry(key: str, label: str) -> str:
        return f"{key} | {label}"

    def get(self, key: str, label: str) -> float | None:
        return self.entries.get(self.entry(key, label))

    def put(self, measured: dict[tuple[str, str], float]) -> None:
        """Add measurements and write the file (other devices' entries are kept)."""
        for (key, label), ms in measured.items():
            self.entries[self.entry(key, label)] = ms
        try:
            data = json.loads(Path(self.path).read_text())
            if data.get("source") != self.identity["source"]:
                data = {}
        except (OSError, ValueError, AttributeError):
            data = {}
        data["source"] = self.identity["source"]
        data.setdefault("devices", {})[self.identity["device"]] = self.entries
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, self.path)
