"""Property test: random integer expressions, compiled as kernels on every backend, compute what
a wrapping i32 evaluation in NumPy computes (Python's // and %, shifts masked, x // 0 == 0)."""

import importlib.util
import itertools
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cubepy as cb
from tests.conftest import DEVICE_PARAMS, poisoned

BACKENDS = sorted({p.values[0][0] for p in DEVICE_PARAMS})
_counter = itertools.count()


def _wrap(x):
    return ((x + 2**31) % 2**32) - 2**31


def _floordiv(a, b):
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.floor_divide(a, safe))


def _mod(a, b):
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.mod(a, safe))


OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": _floordiv, "%": _mod, "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << (b & 31), ">>": lambda a, b: a >> (b & 31),
}

leaves = st.sampled_from(["a[i]", "b[i]", "3", "-7", "i"])


def _combine(children):
    binary = st.tuples(st.sampled_from(sorted(OPS)), children, children).map(
        lambda t: f"({t[1]} {t[0]} ({t[2]} & 31))" if t[0] in ("<<", ">>") else f"({t[1]} {t[0]} {t[2]})")
    calls = st.tuples(st.sampled_from(["cb.min", "cb.max"]), children, children).map(
        lambda t: f"{t[0]}({t[1]}, {t[2]})")
    select = st.tuples(children, children, children, children).map(
        lambda t: f"cb.select({t[0]} < {t[1]}, {t[2]}, {t[3]})")
    return st.one_of(binary, calls, select)


expressions = st.recursive(leaves, _combine, max_leaves=8)


def _reference(expr: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    env = {"a": a.astype(np.int64), "b": b.astype(np.int64), "i": np.arange(len(a), dtype=np.int64)}
    text = expr.replace("a[i]", "a").replace("b[i]", "b")
    # Evaluate with the same grouping, wrapping to i32 after every operation.
    import ast

    tree = ast.parse(text, mode="eval").body

    def ev(node):
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.Constant):
            return np.full(len(a), node.value, np.int64)
        if isinstance(node, ast.UnaryOp):
            return _wrap(-ev(node.operand))
        if isinstance(node, ast.BinOp):
            symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
                      ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
                      ast.RShift: ">>"}[type(node.op)]
            return _wrap(OPS[symbol](ev(node.left), ev(node.right)))
        if isinstance(node, ast.Call):
            name = node.func.attr
            if name == "select":
                cond, then, other = node.args
                return np.where(ev(cond.left) < ev(cond.comparators[0]), ev(then), ev(other))
            return (np.minimum if name == "min" else np.maximum)(*(ev(x) for x in node.args))
        raise AssertionError(ast.dump(node))
    return ev(tree).astype(np.int32)


def _kernel(expr: str, tmp_path):
    path = tmp_path / f"expr_kernel_{next(_counter)}.py"
    path.write_text(textwrap.dedent(f"""
        import cubepy as cb
        from cubepy import Array, Mut, i32

        def k(a: Array[i32], b: Array[i32], out: Mut[Array[i32]]):
            i = cb.ABSOLUTE_POS
            if i < len(a):
                out[i] = {expr}
    """))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cb.kernel(module.k)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions, seed=st.integers(0, 2**32 - 1))
def test_random_integer_expressions_match_wrapping_numpy(backend, tmp_path, expr, seed):
    rng = np.random.default_rng(seed)
    n = 70
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-40, 40, n).astype(np.int32)
    b[::9] = 0
    out = poisoned(n, np.int32)
    _kernel(expr, tmp_path).launch(1, 128, a, b, out, device=cb.device(backend))
    np.testing.assert_array_equal(out, _reference(expr, a, b), err_msg=expr)
