"""SiLU (x * sigmoid(x)) as a JAX function written in cubepy, with its gradient, under jit and vmap.

`cubepy.jax.jax_kernel` makes a kernel a JAX function; `jax.custom_vjp` pairs the forward kernel
with a backward kernel, so `jax.grad` differentiates through it. The results are checked against
the same function written in jax.numpy.
"""

import jax
import jax.numpy as jnp
import numpy as np

import cubepy as cb
import cubepy.jax
from cubepy import Array, Mut, f32

UNITS = 256


@cb.kernel
def silu_forward(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        y[i] = v / (1.0 + cb.exp(-v))


@cb.kernel
def silu_backward(x: Array[f32], dy: Array[f32], dx: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        s = 1.0 / (1.0 + cb.exp(-v))
        dx[i] = dy[i] * (s + v * s * (1.0 - s))


def cubes(shape):
    return (shape[0] + UNITS - 1) // UNITS


forward = cubepy.jax.jax_kernel(silu_forward, outputs=("y",), count=cubes, dim=UNITS)
backward = cubepy.jax.jax_kernel(silu_backward, outputs=("dx",), count=lambda x, dy: cubes(x), dim=UNITS)


@jax.custom_vjp
def silu(x):
    return forward(x)


silu.defvjp(lambda x: (forward(x), x), lambda x, dy: (backward(x, dy),))


def reference(x):
    return x * jax.nn.sigmoid(x)


def main():
    x = jnp.asarray(np.random.default_rng(0).standard_normal(10_000, dtype=np.float32) * 4)
    loss = jax.jit(lambda x: jnp.sum(silu(x) ** 2))
    grad = jax.jit(jax.grad(lambda x: jnp.sum(silu(x) ** 2)))
    np.testing.assert_allclose(loss(x), jnp.sum(reference(x) ** 2), rtol=1e-5)
    np.testing.assert_allclose(grad(x), jax.grad(lambda x: jnp.sum(reference(x) ** 2))(x), rtol=1e-4, atol=1e-5)
    batch = jnp.stack([x[:1000], -x[:1000], 2 * x[:1000]])
    np.testing.assert_allclose(jax.jit(jax.vmap(silu))(batch), reference(batch), rtol=1e-5, atol=1e-6)
    print(f"jax_op ok on {jax.devices()[0].platform}: silu and its gradient under jit and vmap match jax.numpy")


if __name__ == "__main__":
    main()
