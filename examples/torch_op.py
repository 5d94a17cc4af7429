"""RMSNorm as a PyTorch op written in cubepy, forward and backward, trained under torch.compile.

`cubepy.torch.op` turns a function that allocates outputs and launches cubepy kernels into a
torch custom op; its fake implementation (what torch.compile traces with) is derived from the
body. The backward is another cubepy op, registered with `register_autograd`. A small model with
this RMSNorm trains a few steps under `torch.compile(fullgraph=True)`, next to the same model with
RMSNorm written in plain torch; both must end with the same weights.
"""

import torch

import cubepy as cb
import cubepy.torch
from cubepy import Array, Comptime, Mut, f32

UNITS = 64      # units per cube: one cube per row, a row reduced in shared memory


@cb.func
def cube_sum(scratch, value, units):
    """The sum of ``value`` over the cube; every unit gets it."""
    unit = cb.UNIT_POS
    scratch[unit] = value
    cb.sync_cube()
    step = units // 2
    while step > 0:
        if unit < step:
            scratch[unit] = scratch[unit] + scratch[unit + step]
        cb.sync_cube()
        step //= 2
    total = scratch[0]
    cb.sync_cube()
    return total


@cb.kernel
def rmsnorm_forward(x: Array[f32], w: Array[f32], y: Mut[Array[f32]], rstd: Mut[Array[f32]], eps: f32,
                    units: Comptime[int]):
    scratch = cb.SharedMemory(f32, units)
    row, cols = cb.CUBE_POS, x.shape[1]
    squares = 0.0
    for c in range(cb.UNIT_POS, cols, units):
        squares += x[row, c] * x[row, c]
    r = cb.rsqrt(cube_sum(scratch, squares, units) / cols + eps)
    for c in range(cb.UNIT_POS, cols, units):
        y[row, c] = x[row, c] * r * w[c]
    if cb.UNIT_POS == 0:
        rstd[row] = r


@cb.kernel
def rmsnorm_backward_x(x: Array[f32], w: Array[f32], dy: Array[f32], rstd: Array[f32], dx: Mut[Array[f32]],
                       units: Comptime[int]):
    """dx_i = r * w_i * dy_i - r^3 * x_i * sum_j(w_j * dy_j * x_j) / cols, per row."""
    scratch = cb.SharedMemory(f32, units)
    row, cols = cb.CUBE_POS, x.shape[1]
    r = rstd[row]
    partial = 0.0
    for c in range(cb.UNIT_POS, cols, units):
        partial += w[c] * dy[row, c] * x[row, c]
    s = cube_sum(scratch, partial, units) * r * r * r / cols
    for c in range(cb.UNIT_POS, cols, units):
        dx[row, c] = r * w[c] * dy[row, c] - x[row, c] * s


@cb.kernel
def rmsnorm_backward_w(x: Array[f32], dy: Array[f32], rstd: Array[f32], dw: Mut[Array[f32]]):
    """dw_c = sum over rows of dy * x * r: one unit per column."""
    c = cb.ABSOLUTE_POS
    if c < len(dw):
        total = 0.0
        for row in range(x.shape[0]):
            total += dy[row, c] * x[row, c] * rstd[row]
        dw[c] = total


@cubepy.torch.op("cubepy_examples::rmsnorm", mutates_args=())
def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    rows = x.contiguous().view(-1, x.shape[-1])
    y = torch.empty_like(rows)
    rstd = torch.empty(rows.shape[0], dtype=x.dtype, device=x.device)
    rmsnorm_forward[rows.shape[0], UNITS](rows, weight.contiguous(), y, rstd, eps, UNITS)
    return y.view(x.shape), rstd


@cubepy.torch.op("cubepy_examples::rmsnorm_backward", mutates_args=())
def rmsnorm_backward(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                     rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows, grads = x.contiguous().view(-1, x.shape[-1]), dy.contiguous().view(-1, x.shape[-1])
    dx, dw = torch.empty_like(rows), torch.empty_like(weight)
    rmsnorm_backward_x[rows.shape[0], UNITS](rows, weight.contiguous(), grads, rstd, dx, UNITS)
    rmsnorm_backward_w[(weight.numel() + 127) // 128, 128](rows, grads, rstd, dw)
    return dx.view(x.shape), dw


def _save(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = rmsnorm_backward(dy, x, weight, rstd)
    return dx, dw, None


rmsnorm.register_autograd(_backward, setup_context=_save)


class RMSNorm(torch.nn.Module):
    def __init__(self, features: int, eps: float = 1e-6, cubepy_kernels: bool = True):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(features))
        self.eps, self.cubepy_kernels = eps, cubepy_kernels

    def forward(self, x):
        if self.cubepy_kernels:
            return rmsnorm(x, self.weight, self.eps)[0]
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def model(cubepy_kernels: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 96), RMSNorm(96, cubepy_kernels=cubepy_kernels),
                               torch.nn.GELU(), torch.nn.Linear(96, 1))


def train(net: torch.nn.Module, data, steps: int) -> list[float]:
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    step = torch.compile(lambda x, t: torch.nn.functional.mse_loss(net(x), t), fullgraph=True)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step(*data)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() and cb.device("cuda").available else [])
    for where in devices:
        generator = torch.Generator().manual_seed(1)
        x = torch.randn(256, 16, generator=generator).to(where)
        target = x[:, :1].sin().to(where)
        ours, plain = model(True).to(where), model(False).to(where)
        ours_losses = train(ours, (x, target), steps=8)
        plain_losses = train(plain, (x, target), steps=8)
        torch.testing.assert_close(torch.tensor(ours_losses), torch.tensor(plain_losses), rtol=1e-4, atol=1e-6)
        for a, b in zip(ours.parameters(), plain.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
        assert ours_losses[-1] < ours_losses[0]
        print(f"torch_op ok on {where}: loss {ours_losses[0]:.4f} -> {ours_losses[-1]:.4f} in 8 compiled steps, "
              "same as plain torch")


if __name__ == "__main__":
    main()
