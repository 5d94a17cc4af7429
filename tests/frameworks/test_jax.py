"""JAX: cubepy kernels under jax.jit, jax.vmap and jax.grad, through XLA's FFI and pure_callback."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import cubepy as cb  # noqa: E402
import cubepy.jax  # noqa: E402
from cubepy import Array, Comptime, Mut, f32, i32  # noqa: E402
from tests.kernels import scale  # noqa: E402

METHODS = ("ffi", "callback")


@cb.kernel
def accumulate(x: Array[f32], y: Mut[Array[f32]], a: f32, times: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        for _ in cb.unroll(range(times)):
            y[i] = y[i] + a * x[i]


@cb.kernel
def partial_write(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x) // 2:
        out[i] = x[i]


@cb.kernel
def gather(idx: Array[i32], x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(idx):
        out[i] = x[idx[i]]


def cubes(shape, units=64):
    return (shape[0] + units - 1) // units


@pytest.fixture
def x(rng):
    return jnp.asarray(rng.standard_normal(1000).astype(np.float32))


@pytest.mark.parametrize("method", METHODS)
def test_a_kernel_is_a_jax_function_eagerly_and_under_jit(method, x):
    f = cubepy.jax.jax_kernel(scale, outputs=("out",), count=cubes, dim=64, method=method)
    np.testing.assert_array_equal(f(x, 3.0), np.asarray(x) * np.float32(3.0))
    traces = []

    @jax.jit
    def g(v, a):
        traces.append(1)
        return f(v, a) + 1

    for a in (2.0, 5.0, 2.0):
        np.testing.assert_allclose(g(x, a), np.asarray(x) * a + 1, rtol=1e-6)
    assert len(traces) == 1                      # traced once, not per call or per scalar value


@cb.kernel
def scale_and_print(x: Array[f32], out: Mut[Array[f32]], factor: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * factor
        if i < 3:
            print(f"out[{i}] = {out[i]}")


@pytest.mark.parametrize("method", METHODS)
def test_a_kernel_that_prints_prints_each_call_under_jit(method, x, capsys):
    f = jax.jit(cubepy.jax.jax_kernel(scale_and_print, outputs=("out",), count=cubes, dim=64, method=method))
    want = np.asarray(x) * np.float32(2.0)
    for _ in range(2):
        np.testing.assert_array_equal(f(x, 2.0), want)
    jax.effects_barrier()
    # an f-string shows str(value) (Python's rule for an empty spec; NumPy's float32.__format__ differs)
    assert capsys.readouterr().out.splitlines() == [f"out[{i}] = {str(want[i])}" for i in range(3)] * 2


@pytest.mark.parametrize("method", METHODS)
def test_vmap_runs_the_kernel_per_batch_element(method, x):
    f = cubepy.jax.jax_kernel(scale, outputs=("out",), count=cubes, dim=64, method=method)
    batch = jnp.stack([x, -x, 2 * x])
    np.testing.assert_allclose(jax.jit(jax.vmap(lambda v: f(v, 2.0)))(batch), 2 * np.asarray(batch), rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_in_out_parameters_update_a_copy_and_comptime_values_are_static(method, x):
    f = cubepy.jax.jax_kernel(accumulate, outputs=(), in_out=("y",), count=lambda xs, ys: cubes(xs), dim=64,
                              method=method)
    y = jnp.ones_like(x)
    out = jax.jit(lambda v, w: f(v, w, 0.5, 3))(x, y)
    expected = np.ones(1000, np.float32)
    for _ in range(3):
        expected = expected + np.float32(0.5) * np.asarray(x)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(y, np.ones(1000, np.float32))          # the input itself is unchanged
    with pytest.raises(TypeError, match="Comptime parameter 'times' needs a Python value"):
        jax.jit(lambda v, w, t: f(v, w, 0.5, t))(x, y, 3)


@pytest.mark.parametrize("method", METHODS)
def test_outputs_start_as_zeros_where_the_kernel_does_not_write(method, x):
    f = cubepy.jax.jax_kernel(partial_write, outputs=("out",), count=cubes, dim=64, method=method)
    for _ in range(2):                                   # a reused buffer must not leak the last call's data
        out = np.asarray(jax.jit(f)(x + 1))
        np.testing.assert_array_equal(out[:500], np.asarray(x)[:500] + 1)
        np.testing.assert_array_equal(out[500:], 0)


@pytest.mark.parametrize("method", METHODS)
def test_grad_through_custom_vjp_with_a_backward_kernel(method, x):
    forward = cubepy.jax.jax_kernel(scale, outputs=("out",), count=cubes, dim=64, method=method)

    @jax.custom_vjp
    def f(v):
        return forward(v, 3.0)

    f.defvjp(lambda v: (forward(v, 3.0), None), lambda _, g: (forward(g, 3.0),))
    grad = jax.jit(jax.grad(lambda v: jnp.sum(f(v) * v)))(x)
    np.testing.assert_allclose(grad, 6 * np.asarray(x), rtol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_an_out_of_bounds_access_is_an_error_naming_the_kernel_and_array(method):
    f = cubepy.jax.jax_kernel(gather, outputs=("out",), count=lambda i, x: cubes(i), dim=64, method=method,
                              out_shapes={"out": jax.ShapeDtypeStruct((4,), jnp.float32)})
    with pytest.raises(Exception, match="kernel 'gather'.*array 'x'"):
        np.asarray(jax.jit(f)(jnp.array([0, 1, 9, 2], jnp.int32), jnp.ones(5, jnp.float32)))


def test_output_shapes_can_be_given_or_computed_from_the_inputs(x):
    f = cubepy.jax.jax_kernel(partial_write, outputs=("out",), count=cubes, dim=64,
                              out_shapes={"out": lambda shape: jax.ShapeDtypeStruct((shape[0] // 2,), jnp.float32)})
    np.testing.assert_array_equal(f(x[:200]), np.asarray(x)[:100])


def test_bad_requests_are_clear_errors():
    with pytest.raises(TypeError, match="'y' is not a Mut array parameter"):
        cubepy.jax.jax_kernel(scale, outputs=("y",), count=1, dim=64)
    with pytest.raises(TypeError, match="method must be 'ffi' or 'callback'"):
        cubepy.jax.jax_kernel(scale, count=1, dim=64, method="magic")
    f = cubepy.jax.jax_kernel(scale, count=1, dim=64)
    with pytest.raises(TypeError, match="missing input 'factor'"):
        f(jnp.ones(3))
    with pytest.raises(TypeError, match="takes a @cb.kernel"):
        cubepy.jax.jax_kernel(lambda x: x, count=1, dim=64)


def test_small_cpu_launches_run_natively_and_large_ones_through_the_threaded_launch(monkeypatch, rng):
    from cubepy.runtime.kernel import Launcher

    calls = []
    original = Launcher.__call__
    monkeypatch.setattr(Launcher, "__call__", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    f = cubepy.jax.jax_kernel(scale, outputs=("out",), count=cubes, dim=64, device="cpu")
    host = jax.devices("cpu")[0]
    with jax.default_device(host):
        small = jnp.asarray(rng.standard_normal(1000).astype(np.float32))
        np.testing.assert_array_equal(jax.jit(lambda v: f(v, 2.0))(small), 2 * np.asarray(small))
        assert not calls                                 # the native handler called the kernel itself
        large = jnp.asarray(rng.standard_normal(100_000).astype(np.float32))
        np.testing.assert_array_equal(jax.jit(lambda v: f(v, 2.0))(large), 2 * np.asarray(large))
        assert calls                                     # 1563 cubes: the Python handler's threaded launch


class _IRBackend(cb.runtime.backend.Backend):
    """A backend that only traces: it takes CUDA device arrays, so a scalar argument in device
    memory specializes as it does on cuda (scalar_ref)."""

    name = "ir"
    device_array_platforms = frozenset({"cuda"})

    def compile(self, kernel, properties):
        return None


def test_the_native_cuda_handler_is_valid_code_without_a_gpu():
    """Without a GPU, the CUDA handler's IR is built and compiled (not run) against fake addresses."""
    from types import SimpleNamespace

    from cubepy.backends.cstyle import CUDA, render
    from cubepy.backends.cuda.xla_ffi import DRIVER_FUNCTIONS, build_handler

    from cubepy.runtime.device_arrays import DeviceArray

    ir_device = cb.Device("ir", {}, cb.device("interp").properties, _IRBackend())
    x = DeviceArray(None, 1 << 32, (8,), np.dtype(np.float32), True, "cuda")
    out = DeviceArray(None, 2 << 32, (8,), np.dtype(np.float32), False, "cuda")
    factor = DeviceArray(None, 3 << 32, (), np.dtype(np.float32), True, "cuda")
    fake = {name: 0x1000 + 8 * k for k, name in enumerate(DRIVER_FUNCTIONS)}
    sources, ranks = {0: ("arg", 0), 1: ("ret", 0), 2: ("arg", 1)}, {0: 1, 1: 1, 2: 0}

    def executable(compiled):
        rendered = render(compiled.ir_module, CUDA)
        return SimpleNamespace(rendered=rendered, shape=rendered.one_cube,     # one build for every shape here
                               function=lambda shape: SimpleNamespace(ptr=0x1234),
                               error=SimpleNamespace(data=SimpleNamespace(ptr=0x5678)))
    by_address = scale.compile(x, out, factor, dim=64, device=ir_device)
    assert by_address.parameters[2].kind == "scalar_ref"
    handler = build_handler(executable(by_address), sources, ranks, [(0, 1, 4)], (1, 1, 1), (64, 1, 1),
                            lambda *a: None, fake)
    assert handler is not None and handler.address
    by_value = scale.compile(x, out, 2.0, dim=64, device=ir_device)
    assert build_handler(executable(by_value), sources, ranks, [(0, 1, 4)], (1, 1, 1), (64, 1, 1),
                         lambda *a: None, fake) is None
    # checked per launch, as on cuda: the handler cannot ask the host, so it answers no (the
    # kernel's cube test decides), and builds
    per_launch = cb.device("interp", checks_per_cube=True, checks_per_launch=True).properties
    launch_device = cb.Device("ir", {}, per_launch, _IRBackend())
    decided = scale.compile(x, out, factor, dim=64, device=launch_device)
    assert decided.ir_module.launch_test is not None
    assert "launch_ok" in [slot.kind for slot in executable(decided).rendered.args]
    handler = build_handler(executable(decided), sources, ranks, [(0, 1, 4)], (1, 1, 1), (64, 1, 1),
                            lambda *a: None, fake)
    assert handler is not None and handler.address
