"""The backend contract (cubepy/runtime/backend.py): every registered backend meets it, and a
package outside cubepy adds a backend through the registry's entry points."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from cubepy.runtime import registry
from cubepy.runtime.backend import Backend, contract_violations
from tests.conftest import poisoned, subprocess_env

NAMES = cb.backend_names()


@cb.kernel
def scale(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i]


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_backend_meets_the_contract(name):
    try:
        backend = registry.load_backend(name)
    except cb.BackendUnavailableError as e:     # only a module that cannot be imported may be missing
        assert "breaks the backend contract" not in e.message
        pytest.skip(e.message)
    assert contract_violations(backend, name) == []
    assert isinstance(backend.preference, int)


def test_built_in_backends_come_gpus_first_then_the_cpu_then_the_interpreter():
    order = [n for n in NAMES if n in ("cuda", "hip", "opencl", "cpu", "interp")]
    assert order == ["cuda", "hip", "opencl", "cpu", "interp"]
    assert [d.backend_name for d in cb.devices() if d.index in (None, 0)] == list(NAMES)


AVAILABLE = [d.backend_name for d in cb.devices() if d.available and d.index in (None, 0)]


@pytest.mark.parametrize("name", AVAILABLE)
def test_every_available_backend_runs_the_contract_s_operations(name, rng):
    dev = cb.device(name)
    backend = dev.backend
    assert dev.properties.backend == name and backend.device_count() >= 1
    x = rng.standard_normal(1000).astype(np.float32)
    y = poisoned(1000, np.float32)
    compiled = scale.compile(x, y, 2.0, dim=64, device=dev)
    for form in compiled.forms:
        assert compiled.source(form).strip()
    start, stop = dev.event(), dev.event()
    start.record()
    compiled[16](x, y, 2.0)
    stop.record()
    assert stop.elapsed_ms(start) >= 0
    dev.synchronize()
    np.testing.assert_array_equal(y, 2 * x)
    # residency: a preloaded array stays on the device; to_host brings back what the kernel wrote
    x_dev, y_dev = cb.preload(x, device=dev), cb.preload_mut(poisoned(1000, np.float32), device=dev)
    scale[16, 64](x_dev, y_dev, 3.0, device=dev)
    np.testing.assert_array_equal(y_dev.to_host(), 3 * x)
    if not backend.takes_streams:
        with pytest.raises(cb.ArgumentValueError, match="takes no stream"):
            scale[16, 64](x, y, 1.0, device=dev, stream=object())


@pytest.mark.parametrize("name", AVAILABLE)
def test_a_snapshot_restores_an_executable_that_runs_like_the_compiled_one(name, rng):
    dev = cb.device(name)
    backend = dev.backend
    x = rng.standard_normal(1000).astype(np.float32)
    y = poisoned(1000, np.float32)
    compiled = scale.compile(x, y, 2.0, dim=64, device=dev)
    snapshot = backend.snapshot(compiled.executable, dev.properties)
    if snapshot is None:
        assert type(backend).restore is Backend.restore
        pytest.skip(f"{name} does not restore executables")
    restored = backend.restore(compiled.ir_module, dev.properties, snapshot)
    assert restored is not None
    backend.launch(restored, compiled.ir_module, (16, 1, 1), (64, 1, 1), [x, y, np.float32(2.0)], dev.properties, {})
    dev.synchronize()
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("name", AVAILABLE)
def test_a_device_probed_again_runs_what_was_compiled_for_it(name, rng):
    """A second probe with the same properties (a device made again, as `cb.device` with options
    that come to the same device does) must not strand the executables compiled before it: the
    runtime finds them by the properties. (wgpu's second GPUDevice refused the first one's
    pipelines: "Device of Buffer doesn't match Device".)"""
    dev = cb.device(name)
    x = rng.standard_normal(1000).astype(np.float32)
    y = poisoned(1000, np.float32)
    compiled = scale.compile(x, y, 2.0, dim=64, device=dev)
    assert dev.backend.probe(**dev.options) == dev.properties
    compiled[16](x, y, 2.0)
    dev.synchronize()
    np.testing.assert_array_equal(y, 2 * x)


class _Delegating(Backend):
    """A third party's backend: it runs everything on the interpreter."""

    name = "delegating"
    preference = 95

    def __init__(self):
        self.launches = 0
        self._interp = registry.load_backend("interp")

    def probe(self, **options):
        return self._interp.probe(**options)

    def compile(self, kernel, properties):
        return self._interp.compile(kernel, properties)

    def launch(self, executable, kernel, cube_count, cube_dim, args, properties, options):
        self.launches += 1
        self._interp.launch(executable, kernel, cube_count, cube_dim, args, properties, options)


class _NoCompile(Backend):
    name = "nocompile"

    def probe(self, **options):
        return registry.load_backend("interp").probe(**options)


@pytest.fixture
def restore_registry():
    added = dict(registry._added)
    yield
    registry._added.clear()
    registry._added.update(added)
    registry._loaded.clear()
    registry.backend_names.cache_clear()


def test_a_registered_backend_is_a_device_like_the_built_ins(restore_registry, rng):
    backend = _Delegating()
    cb.register_backend("delegating", backend)
    assert "delegating" in cb.backend_names()
    dev = cb.device("delegating", plane_dim=8)
    x = rng.standard_normal(100).astype(np.float32)
    y = poisoned(100, np.float32)
    scale[2, 64](x, y, 0.5, device=dev)
    np.testing.assert_array_equal(y, np.float32(0.5) * x)
    assert backend.launches == 1 and dev.host_memory


def test_a_backend_breaking_the_contract_is_unavailable_with_the_reason(restore_registry):
    cb.register_backend("nocompile", _NoCompile())
    listed = {d.backend_name: d for d in cb.devices()}
    assert not listed["nocompile"].available
    assert "does not override the required method 'compile'" in listed["nocompile"].reason
    with pytest.raises(cb.BackendUnavailableError, match="breaks the backend contract"):
        cb.device("nocompile")
    with pytest.raises(cb.ArgumentValueError, match="unknown device 'nosuch'; choose one of"):
        cb.device("nosuch")


def test_a_package_adds_a_backend_through_an_entry_point(tmp_path):
    """A distribution on the path with an entry point in the cubepy.backends group: nothing in cubepy names it."""
    package = tmp_path / "thirdparty_backend"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""
        from cubepy.runtime import registry
        from cubepy.runtime.backend import Backend

        class Thirdparty(Backend):
            name = "thirdparty"
            preference = 99

            def probe(self, **options):
                return registry.load_backend("interp").probe(**options)

            def compile(self, kernel, properties):
                return registry.load_backend("interp").compile(kernel, properties)

            def launch(self, executable, kernel, cube_count, cube_dim, args, properties, options):
                registry.load_backend("interp").launch(executable, kernel, cube_count, cube_dim, args, properties,
                                                      options)

        BACKEND = Thirdparty()
    """))
    info = tmp_path / "thirdparty_backend-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-backend\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[cubepy.backends]\nthirdparty = thirdparty_backend\n")
    script = textwrap.dedent("""
        import numpy as np
        import cubepy as cb

        @cb.kernel
        def add_one(y: cb.Mut[cb.Array[cb.f32]]):
            i = cb.ABSOLUTE_POS
            if i < len(y):
                y[i] += 1.0

        y = np.arange(10, dtype=np.float32)
        add_one[1, 32](y, device="thirdparty")
        print(cb.backend_names()[-1], y.sum())
    """)
    env = subprocess_env()
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    (tmp_path / "run.py").write_text(script)
    out = subprocess.run([sys.executable, str(tmp_path / "run.py")], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["thirdparty", "55.0"]


def test_the_c_style_backends_load_no_renderer_or_dialect_at_import():
    """The contract asks for backend modules cheap to import (the CUDA probe imports its module
    first): the renderer and the dialect tables load when a kernel is rendered, and a kernel
    restored from the trace index needs neither."""
    code = textwrap.dedent("""
        import sys
        import cubepy.backends.cuda
        print(sorted(m for m in sys.modules if m.startswith("cubepy.backends.cstyle.")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=subprocess_env()).stdout.strip()
    # the fp flags and the builds' bookkeeping (`cstyle.builds`: the executable's base class)
    assert out == "['cubepy.backends.cstyle.builds', 'cubepy.backends.cstyle.flags']", out
