"""Tuned configs in a file a package can ship, and their use at run time.

``export_configs(path, [tuned, ...])`` (or ``cubepy tune ... --out configs.json``) writes the
configs that tunings chose, per kernel (its module and name, and the sha256 of its source), per
device (backend, name and plane size) and per key::

    {"format": "cubepy-tuned-configs/1",
     "kernels": {"mypkg.kernels.saxpy": {"source": "3f2a...",
        "devices": {"cuda|NVIDIA H200|plane=32": {"((1048576,), 'float32', 1), ...": {
            "config": {"dim": [256, 1, 1], "comptime": {"per_unit": 4}}, "ms": 0.0123, ...}}}}}}

``load_configs(path)`` (every kernel) or ``autotune(..., configs=path)`` (one kernel) makes
matching launches use the shipped config without measuring. A mismatch (another device, another
source of the kernel, a key not in the file, a config the device cannot take) falls back to
tuning, or to the default config with ``on_mismatch="default"``, and says so in a log line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cubepy as cb
from cubepy.log import logger
from cubepy.runtime.properties import DeviceProperties

from .space import Config

FORMAT = "cubepy-tuned-configs/1"


def kernel_id(kernel) -> str:
    """How files and caches name a kernel: its module and qualified name."""
    return f"{kernel.__module__}.{kernel.__qualname__}"


def device_id(props: DeviceProperties) -> str:
    """How files name a device: what decides a config's speed (backend, model, plane size)."""
    return f"{props.backend}|{props.name}|plane={props.plane_dim}"


class ConfigFile:
    """A file of shipped configs, read once."""

    def __init__(self, path: str | os.PathLike, data: dict):
        self.path, self.data = str(path), data

    @classmethod
    def read(cls, path: str | os.PathLike) -> ConfigFile:
        """Read and check a config file; errors name the file and what is wrong with it."""
        try:
            data = json.loads(Path(path).read_text())
        except OSError as e:
            raise FileNotFoundError(f"autotune config file {os.fspath(path)!r} cannot be read: {e.strerror}") from None
        except ValueError as e:
            raise ValueError(f"autotune config file {os.fspath(path)!r} is not JSON: {e}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"autotune config file {os.fspath(path)!r} has format {found!r}, not {FORMAT!r}: "
                             "write it with cubepy.autotune.export_configs or `cubepy tune --out`")
        return cls(path, data)

    def kernels(self) -> list[str]:
        return sorted(self.data.get("kernels", {}))

    def require(self, kernel) -> None:
        """Raise if the file has no configs of ``kernel`` at all (a file for other kernels)."""
        if kernel_id(kernel) not in self.data.get("kernels", {}):
            raise ValueError(f"autotune '{kernel.__name__}': config file {self.path!r} has configs of "
                             f"{', '.join(self.kernels()) or 'no kernel'}, not of {kernel_id(kernel)}; export "
                             "this kernel's configs into it (cubepy tune ... --out) or pass another file")

    def lookup(self, kernel, props: DeviceProperties, key: str) -> tuple[Config | None, str]:
        """``(config, "")`` for a match, else ``(None, why not)``."""
        entry = self.data.get("kernels", {}).get(kernel_id(kernel))
        if entry is None:
            return None, f"{self.path} has no configs of {kernel_id(kernel)}"
        if entry.get("source") != kernel.source_digest:
            return None, (f"{self.path} was tuned for another source of {kernel_id(kernel)} (sha256 "
                          f"{str(entry.get('source'))[:12]}..., the kernel now has {kernel.source_digest[:12]}...)")
        devices = entry.get("devices", {})
        table = devices.get(device_id(props))
        if table is None:
            return None, (f"{self.path} has no configs of {kernel_id(kernel)} for device {device_id(props)} "
                          f"(it has {', '.join(sorted(devices)) or 'none'})")
        found = table.get(key)
        if found is None:
            return None, (f"{self.path} has no config of {kernel_id(kernel)} on {device_id(props)} for key {key} "
                          f"({len(table)} other keys)")
        return Config.from_json(found["config"]), ""


_loaded: list[ConfigFile] = []


def load_configs(path: str | os.PathLike) -> ConfigFile:
    """Use the configs of ``path`` for every tuned kernel of this process (files loaded later
    are consulted first). Returns the file, for `unload_configs`."""
    found = ConfigFile.read(path)
    _loaded.insert(0, found)
    logger.info("autotune: loaded config file %s (%d kernels)", found.path, len(found.kernels()))
    return found


def unload_configs(file: ConfigFile | None = None) -> None:
    """Stop using a file loaded by `load_configs` (every file, with no argument)."""
    if file is None:
        _loaded.clear()
    elif file in _loaded:
        _loaded.remove(file)


def loaded() -> list[ConfigFile]:
    return list(_loaded)


def export_configs(path: str | os.PathLike, tuned: Iterable, device: Any = None, merge: bool = True) -> int:
    """Write the configs that ``tuned`` (`Tuned` launchers) chose in this process, for every device
    or only ``device``, to ``path``; with ``merge`` the file's other entries are kept (entries of
    an older source of a kernel are dropped). Returns the number of configs written.

    Example::

        tuned(x, y, 2.0)                                  # tunes on this machine's GPU
        export_configs("mypkg/tuned.json", [tuned])       # ship it; load_configs() at import time
    """
    want = None if device is None else device_id((cb.device(device) if isinstance(device, str) else device).properties)
    data = {"format": FORMAT, "kernels": {}}
    if merge and Path(path).exists():
        data = ConfigFile.read(path).data
    data["cubepy"] = cb.__version__
    written = 0
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for t in tuned:
        kid = kernel_id(t.kernel)
        entry = data["kernels"].get(kid)
        if entry is None or entry.get("source") != t.kernel.source_digest:
            if entry is not None:
                logger.info("autotune: %s: replacing the configs of %s, tuned for another source", path, kid)
            entry = data["kernels"][kid] = {"source": t.kernel.source_digest, "devices": {}}
        for result in t.results.values():
            if result.origin == "default" or (want is not None and result.device != want):
                continue
            entry["devices"].setdefault(result.device, {})[result.key] = {
                "config": result.config.to_json(), "ms": result.ms, "evaluations": result.evaluations,
                "strategy": result.strategy, "tuned": stamp}
            written += 1
    if not written:
        raise ValueError(f"export_configs({os.fspath(path)!r}): nothing to write: the tuned kernels have chosen no "
                         "config yet (call them, or .best(...), on the device first)")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{os.fspath(path)}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return written
