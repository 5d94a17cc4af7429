"""print(...) in kernels: the same lines on every device, in unit order, with a per-launch cap.

Expected lines are what Python's own print and f-strings give for the same values (NumPy
scalars of the kernel's types), sorted by cube, then unit, then program order. An f-string's
empty spec gives ``str(value)``, Python's rule (NumPy's ``float32.__format__`` prints the f64
expansion instead, so the expectations spell ``str`` out).
"""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Comptime, Mut, f32, f64, i8, i32, u64
from tests.conftest import poisoned, require_dtype


@cb.kernel
def show_values(x: Array[f32], d: Array[f64], s: Array[i8], w: Array[u64], y: Mut[Array[f32]], k: i32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i] * 2.0
        y[i] = v
        if s[i] > -20:
            print("unit", i, "x =", x[i], f"2x={v:.3f} d={d[i]} s={s[i]:+d} w={w[i]:x} big={x[i] > 0.5!r} x={x[i]}", k)


def _expected_show(x, d, s, w, k):
    out = []
    for i in range(len(x)):
        v = np.float32(x[i] * np.float32(2.0))
        if s[i] > -20:
            big = bool(x[i] > 0.5)
            text = f"2x={v:.3f} d={d[i]} s={s[i]:+d} w={w[i]:x} big={big!r} x={str(x[i])}"
            print_args = ("unit", i, "x =", x[i], text, k)
            out.append(" ".join(str(a) for a in print_args))
    return out


def test_print_gives_python_text_for_every_dtype_in_unit_order(dev, rng, capsys):
    require_dtype(dev, np.float64)
    n = 200
    x = rng.random(n, dtype=np.float32)
    x[:3] = [np.nan, -0.0, np.inf]
    d = rng.standard_normal(n)
    s = rng.integers(-128, 128, n).astype(np.int8)
    w = rng.integers(0, 2**64, n, dtype=np.uint64)
    y = poisoned(n, np.float32)
    k = int(rng.integers(-1000, 1000))
    show_values[(n + 63) // 64, 64](x, d, s, w, y, k, device=dev)
    lines = capsys.readouterr().out.splitlines()
    assert lines == _expected_show(x, d, s, w, k)
    np.testing.assert_array_equal(y, x * np.float32(2.0))


@cb.kernel
def show_loop(x: Array[i32], out: Mut[Array[i32]], reps: Comptime[int]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        total = 0
        for r in range(x[i] % reps):
            total += r
            print(f"{cb.CUBE_POS_X},{cb.CUBE_POS_Y} u{cb.UNIT_POS} r{r} t{total}")
        out[i] = total


def test_lines_sort_by_cube_then_unit_then_program_order_on_a_2d_grid(dev, rng, capsys):
    count, dim, reps = (3, 2), (16, 4), 4
    n = count[0] * count[1] * dim[0] * dim[1]
    x = rng.integers(0, 1000, n).astype(np.int32)
    out = poisoned(n, np.int32)
    show_loop[count, dim](x, out, reps, device=dev)
    lines = capsys.readouterr().out.splitlines()
    want = []
    for cy in range(count[1]):
        for cx in range(count[0]):
            for u in range(dim[0] * dim[1]):
                ux, uy = u % dim[0], u // dim[0]
                i = (cx * dim[0] + ux) + (cy * dim[1] + uy) * count[0] * dim[0]
                total = 0
                for r in range(x[i] % reps):
                    total += r
                    want.append(f"{cx},{cy} u{u} r{r} t{total}")
    assert lines == want


@cb.kernel
def show_lines(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        v = x[i] + 1.0
        out[i] = v
        print(i, v, f"{v:.2f}", sep=" | ", end=" .\n")


def test_a_line_prints_as_a_list_and_sep_end_apply(dev, rng, capsys):
    x = rng.random(40, dtype=np.float32)
    out = poisoned(40, np.float32)
    show_lines[1, 10](cb.lines(x, 4), cb.lines(out, 4), device=dev)
    lines = capsys.readouterr().out.splitlines()
    v = (x + np.float32(1.0)).reshape(10, 4)
    want = [f"{i} | [{', '.join(str(a) for a in v[i])}] | [{', '.join(f'{a:.2f}' for a in v[i])}] ." for i in range(10)]
    assert lines == want
    np.testing.assert_array_equal(out, x + np.float32(1.0))


@cb.kernel
def show_every_unit(x: Array[i32]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        print(x[i])


def test_a_launch_keeps_at_most_the_limit_and_says_how_many_it_left_out(dev, rng, capsys, monkeypatch):
    monkeypatch.setenv("CUBEPY_PRINT_LIMIT", "7")
    x = rng.integers(-10**6, 10**6, 100).astype(np.int32)
    show_every_unit[4, 32](x, device=dev)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert lines[-1] == "[cubepy] kernel 'show_every_unit': 93 more printed lines of this launch are not shown " \
        "(at most 7 per launch; set CUBEPY_PRINT_LIMIT to keep more)"
    kept = [int(v) for v in lines[:-1]]
    positions = [int(np.flatnonzero(x == v)[0]) for v in kept]
    assert positions == sorted(positions)     # whichever units arrived first, shown in unit order


def test_a_second_launch_prints_again_through_the_warm_path(dev, rng, capsys):
    x = rng.integers(-100, 100, 20).astype(np.int32)
    launch = show_every_unit[1, 32]
    launch(x, device=dev)
    launch(x[::-1].copy(), device=dev)
    compiled = show_every_unit.compile(x, dim=32, device=dev)
    assert compiled.prints
    compiled[1](x)
    lines = [int(v) for v in capsys.readouterr().out.split()]
    assert lines == list(x) + list(x[::-1]) + list(x)


@cb.func
def report(tag, v):
    print(f"{tag}: {v}")
    return v


@cb.kernel
def show_plane(x: Array[f32], out: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    t = cb.plane_sum(x[i])
    if cb.UNIT_POS_PLANE == 0:
        out[i // cb.PLANE_DIM] = report("plane", t)


def test_print_in_a_func_beside_plane_ops(dev, rng, capsys):
    p = dev.properties.plane_dim
    x = rng.integers(-50, 50, 4 * p).astype(np.float32)
    out = poisoned(4, np.float32)
    show_plane[4, p](x, out, device=dev)
    sums = x.reshape(4, p).sum(axis=1, dtype=np.float32)
    assert capsys.readouterr().out.splitlines() == [f"plane: {s}" for s in sums]
    np.testing.assert_array_equal(out, sums)


def test_cubepy_print_0_compiles_prints_out(dev, rng, capsys, monkeypatch):
    monkeypatch.setenv("CUBEPY_PRINT", "0")      # read when a kernel is first specialized
    quiet = cb.kernel(show_values.__wrapped__)
    x = rng.random(64, dtype=np.float32)
    d, s = rng.standard_normal(64), rng.integers(0, 100, 64).astype(np.int8)
    w = rng.integers(0, 2**63, 64, dtype=np.uint64)
    y = poisoned(64, np.float32)
    quiet[1, 64](x, d, s, w, y, 3, device=dev)
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(y, x * np.float32(2.0))
    compiled = quiet.compile(x, d, s, w, y, 3, dim=64, device=dev)
    assert not compiled.prints and "cubepy_print" not in compiled.ir


@cb.kernel
def show_then_overrun(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    print("at", i)
    y[i] = x[i]


def test_a_launch_that_reports_an_out_of_bounds_access_still_prints(dev, rng, capsys):
    x, y = rng.random(40, dtype=np.float32), poisoned(40, np.float32)
    with pytest.raises(cb.OutOfBoundsError, match="show_then_overrun"):
        show_then_overrun[2, 32](x, y, device=dev)
    assert capsys.readouterr().out.splitlines() == [f"at {i}" for i in range(64)]
