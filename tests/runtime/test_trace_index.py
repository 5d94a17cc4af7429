"""The index of traces: a later process reuses a specialization without tracing it, only while
everything the trace read is unchanged (cubepy.runtime.trace_index, cubepy.frontend.dependencies)."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cubepy as cb
from cubepy.frontend.dependencies import Dependencies, fingerprint
from cubepy.runtime import trace_index
from tests.conftest import subprocess_env

# one module, run as a fresh process each time: argv = device, scale, offset, config, bad index
PROGRAM = textwrap.dedent('''
    import hashlib, json, sys
    import numpy as np
    import cubepy as cb
    from cubepy import Array, Mut, f32, i32

    SCALE = float(sys.argv[2])
    OFFSETS = (0, int(sys.argv[3]))


    class Config:
        def __init__(self, bias):
            self.bias = bias


    CONFIG = Config(float(sys.argv[4]))


    @cb.func
    def scaled(v):
        return v * SCALE


    @cb.kernel
    def affine(x: Array[f32], y: Mut[Array[f32]], at: i32):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = scaled(x[i]) + f32(OFFSETS[1])
        if i == 0:
            y[at] = 1.0


    @cb.kernel
    def biased(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] + CONFIG.bias


    x = np.arange(300, dtype=np.float32)
    y, z = np.zeros(301, np.float32), np.zeros(300, np.float32)
    error = None
    try:
        affine[2, 256](x, y, int(sys.argv[5]), device=sys.argv[1])
    except cb.OutOfBoundsError as e:
        error = str(e)
    biased[2, 256](x, z, device=sys.argv[1])
    source = affine.source(x, y, 0, dim=256, device=sys.argv[1])
    print(json.dumps({**cb.compile_stats(), "error": error, "source": hashlib.sha256(source.encode()).hexdigest(),
                      "y": y[:300].tolist(), "z": z.tolist(), "traces_affine": affine.trace_count,
                      "traces_biased": biased.trace_count}))
''')

AVAILABLE = {d.backend_name for d in cb.devices() if d.available}
RESTORING = [name for name in ("cpu", "cuda") if name in AVAILABLE]     # the index's semantics, on the fast ones
EVERY_RESTORING = RESTORING + [name for name in ("opencl",) if name in AVAILABLE]


@pytest.fixture
def run(tmp_path):
    script = tmp_path / "index_program.py"
    script.write_text(PROGRAM)

    def run(device: str, scale=2.0, offset=1, bias=0.5, at=300) -> dict:
        done = subprocess.run([sys.executable, str(script), device, str(scale), str(offset), str(bias), str(at)],
                              capture_output=True, text=True, timeout=300,
                              env=subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache")))
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads(done.stdout.strip().splitlines()[-1])
        x = np.arange(300, dtype=np.float32)
        assert out["y"] == (x * np.float32(scale) + np.float32(offset)).tolist()
        assert out["z"] == (x + np.float32(bias)).tolist()
        return out
    return run


@pytest.mark.parametrize("device", EVERY_RESTORING)
def test_a_fresh_process_restores_a_specialization_without_tracing_it(run, device):
    first = run(device)
    assert (first["traces_affine"], first["restored"]) == (1, 0)
    again = run(device)
    # affine (and its source) come back untraced; biased reads a Config, which has no fingerprint
    assert (again["traces_affine"], again["restored"]) == (0, 1)
    assert again["traces_biased"] == 1 and again["source"] == first["source"]
    if cb.device(device).backend.disk_cached:       # else the driver's own cache builds it (PoCL, NVIDIA OpenCL)
        assert again["compiles"] == 0


@pytest.mark.parametrize("device", RESTORING)
@pytest.mark.parametrize("change", [{"scale": 3.0}, {"offset": -4}])
def test_a_changed_global_of_the_kernel_or_of_a_helper_is_traced_again(run, device, change):
    run(device)
    changed = run(device, **change)             # run() checks the answer against the new values
    assert (changed["traces_affine"], changed["restored"]) == (1, 0)
    assert run(device, **change)["restored"] == 1
    assert run(device)["traces_affine"] == 1    # one entry per specialization: the latest trace


@pytest.mark.parametrize("device", RESTORING)
def test_a_value_without_a_fingerprint_is_never_restored(run, device):
    run(device, bias=0.5)
    for bias in (0.5, 7.25):                    # run() checks z against the bias of this process
        assert run(device, bias=bias)["traces_biased"] == 1


@pytest.mark.parametrize("device", RESTORING)
def test_a_restored_kernel_reports_out_of_bounds_with_the_users_line(run, device):
    first = run(device, at=301)
    again = run(device, at=301)
    assert again["restored"] == 1 and first["error"] == again["error"]
    assert "affine" in again["error"] and "'y'" in again["error"] and "301" in again["error"]
    assert "y[at] = 1.0" in again["error"]


@pytest.mark.parametrize("device", RESTORING)
def test_a_damaged_index_entry_is_traced_again(run, device, tmp_path):
    run(device)
    for path in (tmp_path / "cache" / "traces").rglob("*.pkl"):
        data = path.read_bytes()
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    again = run(device)
    assert (again["traces_affine"], again["restored"]) == (1, 0)
    assert run(device)["restored"] == 1


# --- fingerprints ----------------------------------------------------------------------------

def test_fingerprints_are_equal_only_for_equal_values():
    assert fingerprint(1) == fingerprint(1) and fingerprint(1) != fingerprint(True) != fingerprint(1.0)
    assert fingerprint(0.0) != fingerprint(-0.0)
    quiet, other = float("nan"), np.frombuffer(np.array([0x7FF8000000000001], np.uint64).tobytes())[0].item()
    assert fingerprint(quiet) != fingerprint(other)
    assert fingerprint((1, 2.5, "a")) == fingerprint((1, 2.5, "a")) != fingerprint([1, 2.5, "a"])
    assert fingerprint(np.float32(1.5)) != fingerprint(np.float64(1.5))
    assert fingerprint(frozenset({3, 1, 2})) == fingerprint(frozenset({2, 3, 1}))


def test_modules_and_named_objects_of_trusted_modules_have_a_fingerprint_others_none():
    assert fingerprint(cb) == ("module", "cubepy") and fingerprint(math) == ("module", "math")
    assert fingerprint(math.sqrt) == ("object", "math", "sqrt") and fingerprint(len) == ("object", "builtins", "len")
    assert fingerprint(np.float32) == ("object", "numpy", "float32")
    assert fingerprint(cb.f32) == ("object", "cubepy", "f32")
    assert fingerprint(cb.ABSOLUTE_POS) == ("object", "cubepy", "ABSOLUTE_POS")
    assert fingerprint(hashlib) is None                       # a module whose attributes may be anything
    assert fingerprint(object()) is None and fingerprint((1, object())) is None
    assert fingerprint(lambda v: v) is None


def test_a_read_without_a_fingerprint_makes_the_traces_unusable():
    reads = Dependencies()
    reads.read((), "N", 4)
    assert reads.reusable
    reads.read((), "config", object())
    assert not reads.reusable and "config" in reads.why_not


def test_reads_are_checked_against_the_functions_as_they_are_now():
    namespace: dict = {}
    exec("N = 4\ndef kern():\n    return N\n", namespace)
    reads = Dependencies()
    reads.read((), "N", 4)
    assert Dependencies.hold(reads.snapshot(), namespace["kern"])
    namespace["N"] = 5
    assert not Dependencies.hold(reads.snapshot(), namespace["kern"])
    del namespace["N"]
    assert not Dependencies.hold(reads.snapshot(), namespace["kern"])


def test_the_canonical_text_of_a_device_key_does_not_depend_on_set_order():
    one, other = frozenset([1, 9]), frozenset([9, 1])      # equal sets, iterated in another order
    assert list(one) != list(other)
    assert trace_index.canonical(one) == trace_index.canonical(other)
    assert trace_index.canonical({"features": one}) == trace_index.canonical({"features": other})
    text = trace_index.canonical(cb.device("cpu").properties)   # a frozen dataclass holding a frozenset
    assert text is not None and text.startswith("DeviceProperties(") and " at 0x" not in text
    assert trace_index.canonical((object(),)) is None


def test_a_list_changed_between_two_traces_is_seen_as_a_change():
    """A list read again after it changed is fingerprinted again: the traces cannot be reused."""
    weights = [1, 2]
    reads = Dependencies()
    reads.read((), "W", weights)
    weights.append(3)
    reads.read((), "W", weights)
    assert not reads.reusable and "W" in reads.why_not
    same = (1, 2)
    again = Dependencies()
    again.read((), "T", same)
    again.read((), "T", same)
    assert again.reusable


SHAPES_PROGRAM = textwrap.dedent('''
    import json, sys
    import numpy as np
    import cubepy as cb
    from cubepy import Array, Mut, f32


    @cb.kernel
    def double(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] * 2.0


    x = np.arange(1000, dtype=np.float32)
    device = cb.device(sys.argv[1], shape_generic=True)      # PoCL's shape-generic code is opt-in
    for dim in (64, 128, 256, 512):
        y = np.full(1000, np.nan, np.float32)
        double[-(-1000 // dim), dim](x, y, device=device)
        assert (y == 2 * x).all(), dim
    print(json.dumps(cb.compile_stats()))
''')


@pytest.mark.parametrize("device", [n for n in ("cuda", "opencl") if n in AVAILABLE])
def test_cube_shapes_sharing_shape_generic_code_restore_it_once(device, tmp_path):
    """Each CubeDim has an index entry holding the same shape-generic kernel: a later process
    restores the kernel once and shares it, as the process that compiled it did."""
    script = tmp_path / "shapes.py"
    script.write_text(SHAPES_PROGRAM)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script), device], capture_output=True, text=True, timeout=300,
                              env=subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache")))
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, again = runs
    built = first["compiles"] + first["disk_loads"]
    assert built < 4 and first["shared_shapes"] == 4 - built
    assert again["restored"] == built and again["shared_shapes"] == first["shared_shapes"]
    assert again["traces"] == 0
