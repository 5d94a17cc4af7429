"""The disk cache: checksummed entries, atomic writes, one build per key across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from cubepy.runtime import disk_cache
from cubepy.runtime.disk_cache import DiskCache
from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_an_entry_is_built_once_then_read_back_verified(cache_dir):
    cache, builds = DiskCache("test", ".bin"), []
    payload, from_disk = cache.get_or_build("ab" * 32, lambda: builds.append(1) or b"compiled code")
    assert (payload, from_disk, builds) == (b"compiled code", False, [1])
    payload, from_disk = DiskCache("test", ".bin").get_or_build("ab" * 32, lambda: builds.append(1) or b"other")
    assert (payload, from_disk, builds) == (b"compiled code", True, [1])
    assert cache.path("ab" * 32).parent.parent == cache_dir / "test"


@pytest.mark.parametrize("damage", ["truncate", "flip", "foreign", "empty"])
def test_a_damaged_entry_is_deleted_and_built_again(cache_dir, damage):
    cache = DiskCache("test")
    key = "cd" * 32
    cache.get_or_build(key, lambda: b"x" * 1000)
    path = cache.path(key)
    data = path.read_bytes()
    path.write_bytes({"truncate": data[:-10], "flip": data[:-1] + bytes([data[-1] ^ 1]),
                      "foreign": b"\x7fELF" + data[4:], "empty": b""}[damage])
    fresh = DiskCache("test")
    payload, from_disk = fresh.get_or_build(key, lambda: b"rebuilt")
    assert (payload, from_disk, fresh.stats.corrupt) == (b"rebuilt", False, 1)
    assert fresh.get_or_build(key, lambda: b"never")[0] == b"rebuilt"


def test_info_clear_and_prune_manage_the_folder(cache_dir):
    cache = DiskCache("test")
    for k in range(5):
        cache.get_or_build(f"{k:02x}" * 32, lambda k=k: bytes(1000 + k))
    found = disk_cache.info()
    assert found["root"] == str(cache_dir) and found["backends"]["test"]["entries"] == 5
    assert disk_cache.prune(max_bytes=3 * 1200) == 2
    assert disk_cache.info()["backends"]["test"]["entries"] == 3
    assert disk_cache.clear() >= 3 and disk_cache.info()["bytes"] == 0


CONCURRENT = textwrap.dedent('''
    import json, sys
    from multiprocessing import Barrier, get_context
    import numpy as np

    def worker(barrier, queue):
        import cubepy as cb
        from cubepy import Array, Mut, f32
        @cb.kernel
        def shared(x: Array[f32], y: Mut[Array[f32]]):
            i = cb.ABSOLUTE_POS
            if i < len(x):
                y[i] = x[i] * 2.0 + 1.0
        x, y = np.arange(1000, dtype=np.float32), np.zeros(1000, np.float32)
        barrier.wait()                                  # all four compile at the same moment
        try:
            shared[4, 256](x, y, device="cpu")
            queue.put((cb.compile_stats(), bool((y == x * 2 + 1).all())))
        except Exception as e:
            queue.put(({"error": repr(e)}, False))

    if __name__ == "__main__":
        ctx = get_context("spawn")
        barrier, queue = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=worker, args=(barrier, queue)) for _ in range(4)]
        for p in procs:
            p.start()
        results = [queue.get(timeout=240) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        print(json.dumps(results))
''')


def test_four_processes_compiling_one_kernel_compile_it_once(tmp_path):
    script = tmp_path / "compile_race.py"
    script.write_text(CONCURRENT)
    env = subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert all(correct for _, correct in results)
    assert sum(stats["compiles"] for stats, _ in results) == 1
    assert sum(stats["disk_loads"] for stats, _ in results) == 3


def test_an_entry_lock_held_elsewhere_makes_a_builder_wait_then_time_out(tmp_path, monkeypatch):
    """The entry lock excludes another holder (another open of the file, as another process has),
    waits while it is held, and says which lock when it waited too long."""
    monkeypatch.setattr(disk_cache, "LOCK_TIMEOUT_S", 0.2)
    path = tmp_path / "entry.lock"
    with disk_cache.entry_lock(path):
        with pytest.raises(TimeoutError, match="entry.lock"):
            with disk_cache.entry_lock(path):
                pass
    with disk_cache.entry_lock(path):        # released: taken at once
        pass


def test_a_profile_tells_compiles_from_disk_loads(cache_dir):
    def make():
        @cb.kernel
        def loaded(x: Array[f32], y: Mut[Array[f32]]):
            i = cb.ABSOLUTE_POS
            if i < len(x):
                y[i] = x[i] + 1.0
        return loaded

    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    with cb.profile() as first:
        make()[1, 64](x, y, device="cpu")
    with cb.profile() as second:                  # a new kernel object: traced again, its code from disk
        make()[1, 64](x, y, device="cpu")
    assert (first.kernels["loaded"].compiles, first.kernels["loaded"].disk_loads) == (1, 0)
    assert (second.kernels["loaded"].compiles, second.kernels["loaded"].disk_loads) == (0, 1)
    assert "disk loads" in second.table()


ONE_KERNEL = textwrap.dedent('''
    import json, sys
    import numpy as np
    import cubepy as cb
    from cubepy import Array, Mut, f32

    @cb.kernel
    def cached(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] * 3.0

    x, y = np.arange(300, dtype=np.float32), np.zeros(300, np.float32)
    cached[2, 256](x, y, device=sys.argv[1])
    print(json.dumps({**cb.compile_stats(), "right": bool((y == x * 3).all())}))
''')

CACHED_BACKENDS = list(dict.fromkeys(d.backend_name for d in cb.devices() if d.available and d.backend.disk_cached))


@pytest.mark.parametrize("backend", CACHED_BACKENDS)
def test_a_corrupt_entry_of_every_backend_with_a_disk_cache_is_compiled_again(tmp_path, backend):
    script, cache = tmp_path / "one_kernel.py", tmp_path / "cache"
    script.write_text(ONE_KERNEL)

    def run() -> dict:
        done = subprocess.run([sys.executable, str(script), backend], capture_output=True, text=True, timeout=300,
                              env=subprocess_env(CUBEPY_CACHE_DIR=str(cache)))
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run()
    assert first["right"] and first["compiles"] == 1
    entries = [p for p in (cache / backend).rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:-40])                  # truncated, as a crash would leave it
    again = run()
    assert again["right"] and again["compiles"] == 1 and again["disk_loads"] == 0
    third = run()
    assert third["right"] and third["compiles"] == 0 and third["disk_loads"] == 1
