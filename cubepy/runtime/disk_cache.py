"""The on-disk cache of compiled code: one implementation for every backend.

Entries live under ``settings.cache_dir()/<backend>/<first two hex digits>/<key><suffix>``, keyed
by a full sha256 that the backend derives from everything the code depends on (source or IR,
architecture, options, toolchain versions). Each entry starts with a header (magic, payload
length, sha256 of the payload); an entry that is truncated, corrupt or of another format is
deleted and built again. Writes go to a temporary file in the same folder, renamed into place.

One build per key, across processes and machines that share the folder: a miss takes the
entry's file lock (`entry_lock`: ``fcntl.flock`` on POSIX, ``filelock`` elsewhere; released by the OS if
the process dies), reads
again (another process may have written the entry meanwhile), and only then builds. So four
workers that start with the same kernel compile it once; the other three wait and load it.

`info`, `clear` and `prune` manage the folder (also as ``cubepy cache ...``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

try:
    import fcntl
except ImportError:                       # Windows: filelock's msvcrt lock
    fcntl = None

from .. import settings

MAGIC = b"CUBEPY-CACHE-2\n"
_HEADER = len(MAGIC) + 16 + 64          # magic, payload length (hex), sha256 (hex)
LOCK_TIMEOUT_S = 900.0                  # longer than any compile; a dead holder's lock is freed by the OS


@dataclass
class CacheStats:
    """What this process did with one backend's cache."""

    hits: int = 0
    builds: int = 0
    corrupt: int = 0
    waited: int = 0                      # misses that found the entry built by another process


@dataclass
class DiskCache:
    """One backend's part of the disk cache (``namespace``: "cpu", "cuda", ...)."""

    namespace: str
    suffix: str = ".bin"
    stats: CacheStats = field(default_factory=CacheStats)

    @property
    def root(self) -> Path:
        return settings.cache_dir() / self.namespace

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{self.suffix}"

    def get_or_build(self, key: str, build: Callable[[], bytes]) -> tuple[bytes, bool]:
        """``(payload, from_disk)``: the entry for ``key``, built (once, across processes) if missing."""
        found = self.read(key)
        path = self.path(key)
        if found is not None:
            self.stats.hits += 1
            touch(path)
            return found, True
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = entry_lock(Path(str(path) + ".lock"))
        except OSError:                   # a read-only cache: build without it
            self.stats.builds += 1
            return build(), False
        with lock:
            found = self.read(key)
            if found is not None:
                self.stats.waited += 1
                return found, True
            payload = build()
            self.stats.builds += 1
            self.write(key, payload)
        return payload, False

    def read(self, key: str) -> bytes | None:
        """A verified entry, or None (a bad one is deleted)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        payload = _verified(data)
        if payload is None:
            self.stats.corrupt += 1
            self.discard(key)
        return payload

    def write(self, key: str, payload: bytes) -> None:
        path = self.path(key)
        header = MAGIC + f"{len(payload):016x}".encode() + hashlib.sha256(payload).hexdigest().encode()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(header + payload)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass                          # a full or read-only disk only costs a compile next time

    def discard(self, key: str) -> None:
        """Delete an entry (one that is corrupt, or that its backend could not load)."""
        self.path(key).unlink(missing_ok=True)


@contextmanager
def _flock(fd: int, path: Path) -> Iterator[None]:
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise TimeoutError(f"the disk-cache lock {path} was held for {LOCK_TIMEOUT_S:.0f} s") from None
            time.sleep(0.01)
    try:
        yield
    finally:
        os.close(fd)                      # closing the file releases the lock


def entry_lock(path: Path) -> AbstractContextManager:
    """An exclusive lock on ``path`` (created if missing) for one entry's build, across processes.

    On POSIX it is ``fcntl.flock`` on the open file, which the OS releases when the process dies.
    ``filelock`` (a dependency, for Windows) costs a fresh process 20-60 ms to import here and
    130 ms on the H200's host, all of it on a cold compile's path, so it is used only where fcntl
    is missing. Raises OSError when the folder cannot hold the lock file."""
    if fcntl is None:
        from filelock import FileLock

        return FileLock(str(path), timeout=LOCK_TIMEOUT_S)
    return _flock(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), path)


def _verified(data: bytes) -> bytes | None:
    if len(data) < _HEADER or not data.startswith(MAGIC):
        return None
    try:
        length = int(data[len(MAGIC):len(MAGIC) + 16], 16)
    except ValueError:
        return None
    digest, payload = data[len(MAGIC) + 16:_HEADER], data[_HEADER:]
    if len(payload) != length or hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


# --- managing the folder -----------------------------------------------------------------------

def _entries(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".lock")
            and not p.name.startswith(".tmp-")]


def info() -> dict:
    """``{"root": folder, "backends": {name: {"entries": n, "bytes": b}}, "bytes": total}``."""
    root = settings.cache_dir()
    backends = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        files = _entries(folder)
        backends[folder.name] = {"entries": len(files), "bytes": sum(f.stat().st_size for f in files)}
    return {"root": str(root), "backends": backends, "bytes": sum(b["bytes"] for b in backends.values())}


def clear(backend: str | None = None) -> int:
    """Delete every entry (of one backend's folder if given); the number of files deleted."""
    root = settings.cache_dir() if backend is None else settings.cache_dir() / backend
    count = 0
    if root.is_dir():
        for p in sorted(root.rglob("*"), reverse=True):
            if p.is_file():
                p.unlink(missing_ok=True)
                count += 1
    return count


def prune(max_bytes: int) -> int:
    """Delete the least recently written entries until the cache holds at most ``max_bytes``;
    the number of entries deleted."""
    files = sorted(_entries(settings.cache_dir()), key=lambda p: p.stat().st_mtime)
    total, deleted = sum(p.stat().st_size for p in files), 0
    for p in files:
        if total <= max_bytes:
            break
        total -= p.stat().st_size
        p.unlink(missing_ok=True)
        deleted += 1
    return deleted


def touch(path: Path) -> None:
    """Mark an entry as just used (so `prune` keeps it)."""
    try:
        os.utime(path, (time.time(), time.time()))
    except OSError:
        pass
