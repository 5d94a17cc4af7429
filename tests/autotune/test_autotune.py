"""cubepy.autotune on every device: the search space respects the device, measurements never
touch the caller's arrays, the result is right, and the on-disk cache keeps one entry per
(key, config) (no timing is asserted: which config wins is the machine's business)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from cubepy.autotune import Config, autotune, configs, default_dims

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32
from tests.conftest import DEVICE_PARAMS

ONE_PER_BACKEND = [p for p in DEVICE_PARAMS if p.values[0][1] in (None, 8)]


@cb.kernel
def accumulate(x: Array[f32], y: Mut[Array[f32]], a: f32, per_unit: Comptime[int]):
    base = cb.ABSOLUTE_POS * per_unit
    for k in range(per_unit):
        if base + k < len(x):
            y[base + k] = y[base + k] + a * x[base + k]


def grid(args, dim, comptime):
    per_unit = comptime["per_unit"]
    return (len(args[0]) + dim[0] * per_unit - 1) // (dim[0] * per_unit)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBEPY_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.filterwarnings("ignore::cubepy.TransferWarning")
@pytest.mark.parametrize("dev", ONE_PER_BACKEND, indirect=True)
def test_tuning_measures_on_copies_and_launches_once_with_the_best(dev, rng):
    x = rng.random(3000).astype(np.float32)
    y = rng.random(3000).astype(np.float32)
    y0 = y.copy()
    tuned = autotune(accumulate, grid, dims=[64, 128], comptime={"per_unit": [1, 2]}, reps=2, rounds=1)
    tuned(x, y, 0.5, device=dev)
    np.testing.assert_allclose(y, y0 + 0.5 * x, rtol=1e-6)       # exactly one application
    assert tuned.measured == 4
    best = tuned.best(x, y, 0.5, device=dev)
    assert best.dim in ((64, 1, 1), (128, 1, 1)) and dict(best.comptime)["per_unit"] in (1, 2)
    tuned(x, y, 0.5, device=dev)
    assert tuned.measured == 4                                    # same key: nothing measured again
    np.testing.assert_allclose(y, y0 + 1.0 * x, rtol=1e-6)


def test_the_disk_cache_keeps_one_entry_per_key_and_config(private_cache):
    x, y = np.ones(500, np.float32), np.zeros(500, np.float32)
    first = autotune(accumulate, grid, dims=[64, 128], comptime={"per_unit": [1]}, reps=1, rounds=1)
    first(x, y, 1.0, device="cpu")
    assert first.measured == 2
    again = autotune(accumulate, grid, dims=[64, 128], comptime={"per_unit": [1]}, reps=1, rounds=1)
    again(x, y, 1.0, device="cpu")
    assert again.measured == 0                                    # a fresh process would see the same
    more = autotune(accumulate, grid, dims=[64, 128, 256], comptime={"per_unit": [1]}, reps=1, rounds=1)
    more(x, y, 1.0, device="cpu")
    assert more.measured == 1                                     # only the new config
    other_size = np.ones(700, np.float32)
    more(other_size, np.zeros(700, np.float32), 1.0, device="cpu")
    assert more.measured == 4                                     # a new key measures again
    with sqlite3.connect(private_cache / "autotune" / "tuning.sqlite3") as db:
        rows = db.execute("SELECT key, config, status FROM measurements WHERE kernel LIKE '%.accumulate'").fetchall()
    assert len(rows) == 6 and len({key for key, _, _ in rows}) == 2
    assert all(config.startswith("dim=") and status == "ok" for _, config, status in rows)
    np.testing.assert_allclose(y, 3.0)


def test_a_checked_and_an_unchecked_build_of_one_source_are_tuned_apart():
    # The same function decorated twice: the checked build may want another cube size (more
    # registers), so the unchecked build's search must not answer for it, nor fastmath's for strict
    x, y = np.ones(500, np.float32), np.zeros(500, np.float32)
    unchecked = cb.kernel(accumulate.__wrapped__, checked=False)
    fast = cb.kernel(accumulate.__wrapped__, checked=False, fastmath="algebraic")
    counts = []
    for k in (unchecked, unchecked, accumulate, fast):
        tuner = autotune(k, grid, dims=[64, 128], comptime={"per_unit": [1]}, reps=1, rounds=1)
        tuner(x, y, 1.0, device="cpu")
        counts.append(tuner.measured)
    assert counts == [2, 0, 2, 2]
    np.testing.assert_allclose(y, 4.0)


def test_the_search_space_comes_from_the_device():
    for dev in (cb.device("cpu"), cb.device("interp", plane_dim=64), cb.device("interp", plane_dim=8)):
        p = dev.properties
        dims = default_dims(p)
        assert dims and all(d[0] % p.plane_dim == 0 and d[0] <= p.max_units_per_cube for d in dims)
        assert [d[0] for d in dims] == sorted(d[0] for d in dims) and dims[0][0] >= min(64, p.max_units_per_cube)
    p = cb.device("interp").properties
    assert Config((128, 1, 1), (("per_unit", 2),)).label == "dim=128x1x1 per_unit=2"
    too_big = configs(p, [64, (32, 32), 4096], None)
    assert [c.dim for c in too_big] == [(64, 1, 1), (32, 32, 1)]       # 4096 units exceed the device


def test_bad_tuning_requests_are_clear_errors():
    with pytest.raises(TypeError, match="'n' is not a Comptime parameter"):
        autotune(accumulate, grid, comptime={"n": [1]})
    with pytest.raises(TypeError, match="takes a @cb.kernel"):
        autotune(lambda: None, grid)

    class NoCopy:
        shape, dtype = (4,), np.dtype(np.float32)

    tuned = autotune(accumulate, grid, dims=[64], comptime={"per_unit": [1]})
    with pytest.raises(TypeError, match="copy of 'y', which the kernel writes"):
        tuned(np.ones(4, np.float32), NoCopy(), 1.0, device="cpu")


@cb.kernel
def staged_copy(x: Array[f32], y: Mut[Array[f32]], size: Comptime[int]):
    sm = cb.SharedMemory(f32, size)
    i = cb.UNIT_POS
    sm[i] = x[cb.ABSOLUTE_POS]
    cb.sync_cube()
    y[cb.ABSOLUTE_POS] = sm[i]


def test_a_config_the_device_refuses_is_skipped_and_all_refused_is_an_error():
    x = np.arange(256, dtype=np.float32)
    y = np.zeros(256, np.float32)
    blocks = lambda args, dim: len(args[0]) // dim[0]       # noqa: E731
    tuned = autotune(staged_copy, blocks, dims=[64], comptime={"size": [128, 20000]}, reps=1, rounds=1)
    tuned(x, y, device="interp")                  # 20000 floats exceed the interpreter's 64 KiB per cube
    assert dict(tuned.best(x, y, device="interp").comptime) == {"size": 128}
    np.testing.assert_array_equal(y, x)
    hopeless = autotune(staged_copy, blocks, dims=[64], comptime={"size": [20000]}, reps=1, rounds=1)
    with pytest.raises(ValueError, match="bytes of shared memory"):
        hopeless(x, y, device="interp")


def test_tuned_launches_use_the_kernels_launcher_and_errors_point_at_the_caller():
    x, y = np.ones(256, np.float32), np.zeros(256, np.float32)
    tuned = autotune(accumulate, grid, dims=[64], comptime={"per_unit": [2]}, reps=1, rounds=1)
    tuned(x, y, 1.0, device="cpu")
    launcher = accumulate[2, 64]                       # 256 elements: 2 cubes of 64 units, 2 elements each
    assert launcher.warm_path is not None              # the Comptime value went by position
    with pytest.raises(TypeError, match="expects a f32 scalar") as info:
        tuned(x, y, "fast", device="cpu")
    assert info.value.loc is not None and info.value.loc.filename == __file__


def test_an_autotuned_launcher_pickles_and_keys_calls_as_before(rng):
    """A launcher pickles (its generated key function is written again on load) and keys a call
    as the general key does; a call with another argument count takes the general key."""
    import pickle

    from tests.autotune.kernels import axpy, lines_grid

    # per_unit 9: a value no other test compiles (test_pool counts its compiles)
    tuned = autotune(axpy, lines_grid, dims=[64], comptime={"per_unit": [9]}, reps=1, rounds=1)
    x = rng.standard_normal(512).astype(np.float32)
    y = rng.standard_normal(512).astype(np.float32)
    again = pickle.loads(pickle.dumps(tuned))
    f32_array = ((512,), np.dtype(np.float32), 1)
    expected = [((x, y, 0.5), (f32_array, f32_array, "float")),
                ((x, cb.lines(y, 4), 0.5), (f32_array, ((512,), np.dtype(np.float32), 4), "float")),
                ((x, y), (f32_array, f32_array))]        # another argument count
    for args, want in expected:
        assert tuned.key_of(args) == again.key_of(args) == want
    want = y + 0.5 * x
    again(x, y, 0.5, device="interp")
    np.testing.assert_allclose(y, want, rtol=1e-6)
    want = y + 0.5 * x
    again(x, y, 0.5, device="cpu")                      # a launch that keeps a warm path
    np.testing.assert_allclose(y, want, rtol=1e-6)
    third = pickle.loads(pickle.dumps(again))           # after launches too: its launchers stay behind
    want = y + 0.5 * x
    third(x, y, 0.5, device="cpu")
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_a_repeat_call_takes_its_own_keys_choice_and_a_new_key_searches_once(rng):
    """The launcher's per-call key (flat, built on every call) tells keys apart as `key_of` does:
    a new shape or untuned Comptime value searches once, a key seen before, in any order,
    measures nothing; every call's answer is right (outputs poisoned first)."""
    from tests.autotune.kernels import busy_copy, one_per_unit

    tuned = autotune(busy_copy, one_per_unit, dims=[64, 128], reps=1, rounds=1)
    short, long_ = rng.random(300).astype(np.float32), rng.random(700).astype(np.float32)
    calls = [(short, 1), (short, 1), (short, 2), (long_, 1), (short, 1), (long_, 1), (short, 2), (long_, 2)]
    seen: set = set()
    for x, work in calls:
        key = (len(x), work)
        before = tuned.measured
        y = np.full_like(x, np.nan)
        tuned(x, y, work, device="cpu")
        np.testing.assert_array_equal(y, x)
        assert tuned.measured - before == (0 if key in seen else 2), key
        seen.add(key)
