"""PyTorch: tensors as arguments on every device, launches under torch.compile, cubepy.torch.op."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import subprocess_env

torch = pytest.importorskip("torch")

from cubepy.autotune import autotune  # noqa: E402

import cubepy as cb  # noqa: E402
import cubepy.torch  # noqa: E402
from cubepy import Array, Mut, f64  # noqa: E402
from tests.kernels import saxpy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CUDA = torch.cuda.is_available() and any(d.backend_name == "cuda" and d.available for d in cb.devices())


@cb.kernel
def scale64(x: Array[f64], out: Mut[Array[f64]], factor: f64):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = x[i] * x[i] * factor


def cubes(n: int, units: int = 64) -> int:
    return (n + units - 1) // units


@cubepy.torch.op("cubepy_tests::square_scale", mutates_args=())
def square_scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    scale64[cubes(x.numel()), 64](x.contiguous(), out, factor)
    return out


@cb.kernel
def times_scaled(x: Array[f64], g: Array[f64], out: Mut[Array[f64]], factor: f64):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        out[i] = g[i] * x[i] * factor


@cubepy.torch.op("cubepy_tests::square_scale_backward", mutates_args=())
def square_scale_backward(grad: torch.Tensor, x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    times_scaled[cubes(x.numel()), 64](x.contiguous(), grad.contiguous(), out, 2.0 * factor)   # d(f x^2) = 2 f x
    return out


def _save(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.factor = inputs[1]


def _backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return square_scale_backward(grad, x, ctx.factor), None


square_scale.register_autograd(_backward, setup_context=_save)


# --- tensors as arguments ---------------------------------------------------------------------

def test_cpu_tensors_are_used_in_place_on_every_device(dev, rng):
    x = torch.from_numpy(rng.standard_normal(1000).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(1000).astype(np.float32))
    expected = 2 * x + y
    saxpy[cubes(1000, 256), 256](x, y, 2.0, device=dev)
    dev.synchronize()
    torch.testing.assert_close(y, expected, rtol=0, atol=0)


def test_cpu_tensors_take_the_warm_path():
    dev = cb.device("cpu")
    launcher = saxpy[4, 256]
    x, y = torch.ones(1000), torch.ones(1000)
    launcher(x, y, 2.0, device=dev)
    assert launcher.warm_path is not None
    assert launcher.warm_path((x, y, 2.0)) is True               # the warm path takes tensors


def test_a_tensor_that_requires_grad_is_read_but_not_written_while_autograd_records():
    dev = cb.device("cpu")
    x = torch.rand(300, requires_grad=True)
    y = torch.zeros(300)
    saxpy[2, 256](x, y, 3.0, device=dev)
    torch.testing.assert_close(y, 3 * x.detach())
    with pytest.raises(ValueError, match="parameter 'y' is a tensor that requires grad") as info:
        saxpy[2, 256](y, x, 3.0, device=dev)
    assert info.value.loc.filename == __file__
    with torch.no_grad():
        saxpy[2, 256](y, x, 1.0, device=dev)


@pytest.mark.parametrize("where", ["cpu", "cuda"])
def test_a_parameter_is_read_as_the_tensor_it_is(where):
    # nn.Parameter is a subclass of torch.Tensor; a CUDA one that requires grad refuses
    # __cuda_array_interface__, which the generic reader asked (examples/torch_op.py on the H200)
    if where == "cuda" and not CUDA:
        pytest.skip("needs a CUDA GPU with CuPy")
    dev = cb.device(where)
    x = torch.nn.Parameter(torch.rand(300, device=where))
    y = torch.ones(300, device=where)
    launcher = saxpy[2, 256]
    for _ in range(2):                  # the full path, then the warm one
        launcher(x, y, 2.0, device=dev)
    dev.synchronize()
    torch.testing.assert_close(y, 1 + 4 * x.detach())


def test_bad_tensors_get_clear_errors_naming_the_parameter():
    dev = cb.device("cpu")
    y = torch.zeros(100)
    with pytest.raises(ValueError, match="parameter 'x' is not C-contiguous.*x.contiguous\\(\\)"):
        saxpy[1, 256](torch.zeros(200)[::2], y, 1.0, device=dev)
    with pytest.raises(TypeError, match="expects Array\\[f32\\].*float64.*\\.to\\(torch.float32\\)"):
        saxpy[1, 256](torch.zeros(100, dtype=torch.float64), y, 1.0, device=dev)
    with pytest.raises(ValueError, match="parameter 'x' is a tensor on device 'meta'"):
        saxpy[1, 256](torch.zeros(100, device="meta"), y, 1.0, device=dev)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU with CuPy")
def test_a_cuda_tensor_on_a_host_device_is_refused_naming_both():
    with pytest.raises(TypeError, match="parameter 'y' is an array in cuda device memory, which device 'cpu'"):
        saxpy[1, 256](torch.zeros(100), torch.zeros(100, device="cuda"), 1.0, device=cb.device("cpu"))


def test_autotune_keys_on_tensor_shapes_and_dtypes():
    x, y = torch.ones(512), torch.zeros(512)
    tuned = autotune(saxpy, lambda args, dim: cubes(args[0].numel(), dim[0]), dims=[64, 128], reps=1, rounds=1)
    tuned(x, y, 2.0, device="cpu")
    torch.testing.assert_close(y, torch.full((512,), 2.0))
    assert tuned.best(x, y, 2.0, device="cpu").dim in ((64, 1, 1), (128, 1, 1))


# --- torch.compile ----------------------------------------------------------------------------

def add_one_after_saxpy(x, y):
    z = y * 1.0
    saxpy[cubes(x.numel(), 256), 256](x, z, 2.0)
    return z + 1


def test_a_plain_launch_under_torch_compile_is_one_graph_break():
    x, y = torch.rand(500), torch.rand(500)
    with cb.use_device("cpu"):
        explained = torch._dynamo.explain(add_one_after_saxpy)(x, y)
        assert (explained.graph_count, explained.graph_break_count) == (2, 1)
        assert "cubepy launch" in str(explained.break_reasons[0].reason)
        for backend in ("eager", "aot_eager", "inductor"):
            torch._dynamo.reset()
            compiled = torch.compile(add_one_after_saxpy, backend=backend)
            torch.testing.assert_close(compiled(x, y), 2 * x + y + 1)


def test_launches_break_the_graph_whatever_the_import_order():
    # cubepy (and a kernel) before torch: cubepy cannot see torch yet, and torch._dynamo loads later
    program = textwrap.dedent("""
        import cubepy as cb
        from tests.kernels import saxpy
        import torch
        def f(x, y):
            z = y * 1.0
            saxpy[2, 256](x, z, 2.0)
            return z + 1
        x, y = torch.rand(500), torch.rand(500)
        with cb.use_device("cpu"):
            out = torch.compile(f)(x, y)
            e = torch._dynamo.explain(f)(x, y)
        assert torch.allclose(out, 2 * x + y + 1)
        print("graphs", e.graph_count, e.graph_break_count)
    """)
    env = subprocess_env()
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "graphs 2 1" in run.stdout


def test_importing_cubepy_and_torch_does_not_load_dynamo():
    program = "import cubepy, torch, sys; print('torch._dynamo' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "False", run.stderr


# --- cubepy.torch.op --------------------------------------------------------------------------

def test_an_op_runs_eagerly_and_under_torch_compile_fullgraph():
    x = torch.randn(333, dtype=torch.float64)
    torch.testing.assert_close(square_scale(x, 3.0), 3 * x * x)
    for backend in ("eager", "inductor"):
        torch._dynamo.reset()
        fn = torch.compile(lambda v: square_scale(v, 2.0).sin() + 1, fullgraph=True, backend=backend)
        torch.testing.assert_close(fn(x), (2 * x * x).sin() + 1)


def test_the_derived_fake_gives_the_outputs_shapes_without_launching():
    from torch._subclasses.fake_tensor import FakeTensorMode

    before = scale64.trace_count
    with FakeTensorMode():
        out = square_scale(torch.empty(7, 5, dtype=torch.float64), 1.0)
    assert out.shape == (7, 5) and out.dtype == torch.float64
    assert scale64.trace_count == before                 # nothing was compiled or launched


def test_an_op_passes_opcheck_with_and_without_grad():
    x = torch.randn(64, dtype=torch.float64)
    torch.library.opcheck(square_scale, (x, 1.5))
    torch.library.opcheck(square_scale, (x.clone().requires_grad_(), 1.5))


def test_the_backward_is_a_cubepy_op_and_gradcheck_passes():
    x = torch.randn(40, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: square_scale(v, 1.7), (x,))
    y = square_scale(x, 2.0).sum()
    y.backward()
    torch.testing.assert_close(x.grad, 4 * x.detach())


def test_a_body_that_needs_data_on_the_host_asks_for_a_hand_written_fake():
    @cubepy.torch.op("cubepy_tests::data_dependent", mutates_args=())
    def data_dependent(x: torch.Tensor) -> torch.Tensor:
        n = int(x.sum().item())
        return torch.zeros(n)

    with pytest.raises(Exception, match="cannot run on fake tensors.*register_fake"):
        torch.compile(lambda v: data_dependent(v), fullgraph=True)(torch.ones(3))

    @data_dependent.register_fake
    def _(x):
        return x.new_empty(torch.library.get_ctx().new_dynamic_size())

    torch._dynamo.reset()
    assert data_dependent(torch.ones(3)).shape == (3,)


def test_an_op_that_writes_its_argument_declares_it():
    @cubepy.torch.op("cubepy_tests::saxpy_", mutates_args=("y",))
    def saxpy_(x: torch.Tensor, y: torch.Tensor, a: float) -> None:
        saxpy[cubes(x.numel(), 256), 256](x, y, a)

    x, y = torch.rand(300), torch.rand(300)
    expected = 3 * x + y
    torch.compile(lambda x, y: saxpy_(x, y, 3.0), fullgraph=True)(x, y)
    torch.testing.assert_close(y, expected)
    torch.library.opcheck(saxpy_, (x, y.clone(), 3.0))


def test_ops_run_on_the_device_of_their_tensors():
    assert cubepy.torch.device_of(torch.ones(1)).host_memory
    with cb.use_device("interp"):
        assert cubepy.torch.device_of(torch.ones(1)).backend_name == "interp"


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU with CuPy")
def test_cuda_tensors_in_an_op_under_compile_run_on_torchs_current_stream():
    x = torch.randn(4096, dtype=torch.float64, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = torch.compile(lambda v: square_scale(v, 2.0) + 1, fullgraph=True)(x)
    stream.synchronize()
    torch.testing.assert_close(out, 2 * x * x + 1)
    torch.library.opcheck(square_scale, (x, 1.5))
    xg = x[:64].clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda v: square_scale(v, 1.3), (xg,))


@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU with CuPy")
def test_cuda_tensor_launches_take_the_direct_warm_path():
    x, y = torch.ones(1 << 16, device="cuda"), torch.ones(1 << 16, device="cuda")
    launcher = saxpy[256, 256]
    for _ in range(3):
        launcher(x, y, 2.0, device=cb.device("cuda"))
    assert hasattr(launcher.warm_path, "source")
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.full_like(y, 7.0))
