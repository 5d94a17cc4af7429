"""The kernels the benchmarks time (tests/kernels.py) compute what they claim, checked and
unchecked, on every device: a benchmark figure is always the figure of a correct kernel."""

import numpy as np
import pytest

import cubepy as cb
from tests.conftest import poisoned
from tests.kernels import (
    copy,
    copy_unchecked,
    cube_sum,
    plane_sum,
    poly,
    poly_unchecked,
    reduce_chunks,
    reduce_plane,
    reduce_sum,
    saxpy,
    saxpy3,
    saxpy_unchecked,
    scale,
    scatter,
    stream_triad,
    stream_triad_unchecked,
    triad,
    triad_unchecked,
)


def both(checked, unchecked):
    return pytest.mark.parametrize("kernel", [checked, unchecked], ids=["checked", "unchecked"])


def _cubes(n, dim=256):
    return -(-n // dim)


@both(saxpy, saxpy_unchecked)
def test_saxpy_is_a_times_x_plus_y(dev, rng, kernel):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = y.copy()
    kernel.launch(_cubes(n), 256, x, out, 2.0, device=dev)
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)


@both(saxpy, saxpy_unchecked)
def test_saxpy_on_lines_of_four(dev, rng, kernel):
    n = 4 * 600
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = y.copy()
    kernel.launch(_cubes(n // 4), 256, cb.lines(x, 4), cb.lines(out, 4), 2.0, device=dev)
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)


def test_saxpy_on_a_3d_grid_covers_every_element_once(dev, rng):
    n = 4000                                # the grid has 4096 units: the last 96 write nothing
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = y.copy()
    saxpy3.launch((4, 2, 2), (32, 4, 2), x, out, 2.0, 0, device=dev)
    np.testing.assert_array_equal(out, np.float32(2.0) * x + y)


@both(triad, triad_unchecked)
def test_triad_is_x_plus_a_times_y(dev, rng, kernel):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z = poisoned(n, np.float32)
    kernel.launch(_cubes(n), 256, x, y, z, 2.0, device=dev)
    np.testing.assert_array_equal(z, x + np.float32(2.0) * y)


@both(stream_triad, stream_triad_unchecked)
def test_stream_triad_on_lines_of_four(dev, rng, kernel):
    n = 4 * 600
    b, c = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    a = poisoned(n, np.float32)
    kernel.launch(_cubes(n // 4), 256, cb.lines(a, 4), cb.lines(b, 4), cb.lines(c, 4), 2.0, device=dev)
    np.testing.assert_array_equal(a, b + np.float32(2.0) * c)


@both(copy, copy_unchecked)
def test_copy_on_lines_of_four(dev, rng, kernel):
    n = 4 * 600
    x = rng.standard_normal(n).astype(np.float32)
    y = poisoned(n, np.float32)
    kernel.launch(_cubes(n // 4), 256, cb.lines(x, 4), cb.lines(y, 4), device=dev)
    np.testing.assert_array_equal(y, x)


def test_scale(dev, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    scale.launch(_cubes(n), 256, x, out, 2.0, device=dev)
    np.testing.assert_array_equal(out, x * np.float32(2.0))


def test_scatter_through_a_permutation(dev, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    perm = rng.permutation(n).astype(np.int32)
    y = poisoned(n, np.float32)
    scatter.launch(_cubes(n), 256, x, perm, y, device=dev)
    want = np.empty_like(x)
    want[perm] = x
    np.testing.assert_array_equal(y, want)


@both(poly, poly_unchecked)
def test_poly_is_horner_in_f32(dev, rng, kernel):
    n, iters = 1000, 64
    x = rng.random(n, dtype=np.float32)
    y = poisoned(n, np.float32)
    kernel.launch(_cubes(n), 256, x, y, iters, device=dev)
    want = np.zeros(n, np.float32)
    for _ in range(iters):
        want = want * x + np.float32(0.5)
    np.testing.assert_array_equal(y, want)


def _in_order(values: np.ndarray) -> np.ndarray:
    """Left-to-right f32 sums of the rows of ``values`` (the order each kernel adds in)."""
    acc = np.zeros(values.shape[0], np.float32)
    for k in range(values.shape[1]):
        acc += values[:, k]
    return acc


def test_reduce_sum_gives_each_cube_its_grid_stride_partial_sum(dev, rng):
    n, cubes = 5000, 3
    stride = cubes * 256
    x = rng.random(n, dtype=np.float32)
    out = poisoned(cubes, np.float32)
    reduce_sum.launch(cubes, 256, x, out, stride, device=dev)
    padded = np.zeros(-(-n // stride) * stride, np.float32)
    padded[:n] = x
    per_unit = _in_order(padded.reshape(-1, stride).T)                 # unit u adds x[u], x[u + stride], ...
    np.testing.assert_array_equal(out, _in_order(per_unit.reshape(cubes, 256)))


def test_reduce_chunks_gives_each_cube_its_chunked_partial_sum(dev, rng):
    n, cubes = 5000, 3
    chunk = -(-n // (cubes * 256))
    x = rng.random(n, dtype=np.float32)
    out = poisoned(cubes, np.float32)
    reduce_chunks.launch(cubes, 256, x, out, chunk, device=dev)
    padded = np.zeros(cubes * 256 * chunk, np.float32)
    padded[:n] = x
    per_unit = _in_order(padded.reshape(cubes * 256, chunk))          # unit u adds its chunk in order
    np.testing.assert_array_equal(out, _in_order(per_unit.reshape(cubes, 256)))


def test_reduce_plane_adds_every_element_once(dev, rng):
    n, cubes = 5000, 3
    x = rng.random(n, dtype=np.float32)
    total = np.zeros(1, np.float32)
    reduce_plane.launch(cubes, 256, x, total, cubes * 256, device=dev)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_cube_sum_of_lines_adds_every_element_once(dev, rng):
    n, cubes = 4 * 3000, 3
    x = rng.random(n, dtype=np.float32)
    total = np.zeros(1, np.float32)
    cube_sum.launch(cubes, 256, cb.lines(x, 4), total, 256, device=dev)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_plane_sum_of_lines_adds_every_element_once(dev, rng):
    n, cubes = 4 * 3000, 3
    x = rng.random(n, dtype=np.float32)
    total = np.zeros(1, np.float32)
    plane_sum.launch(cubes, 256, cb.lines(x, 4), total, device=dev)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5)
