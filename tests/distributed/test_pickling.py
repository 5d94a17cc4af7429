"""Kernels pickle: by value (their source) from scripts, notebooks and functions, by reference from
modules; another process rebuilds them and gets the same answer."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cubepy as cb
from tests.kernels import saxpy

cloudpickle = pytest.importorskip("cloudpickle", exc_type=ModuleNotFoundError)
ROOT = Path(__file__).resolve().parents[2]

# A script whose kernels live in __main__ (so they pickle by value): every kind of parameter, a
# @cb.func helper, a closure, a global constant. It pickles each before and after a launch and
# writes the bytes and the in-process results.
SCRIPT = textwrap.dedent('''
    import pickle, sys
    import cloudpickle
    import numpy as np
    import cubepy as cb
    from cubepy import Array, Comptime, Linear1D, Mut, Region, f32, i32

    OFFSET = 0.5
    x = "a global that a kernel's parameter shadows: never captured"

    @cb.func
    def blend(a, b):
        return 0.25 * a + 0.75 * b

    @cb.kernel
    def lines_comptime(x: Array[f32], y: Mut[Array[f32]], times: Comptime[int]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            v = x[i]
            for _ in cb.unroll(range(times)):
                v = blend(v, v + OFFSET)
            y[i] = v

    @cb.kernel(checked=False)
    def regions(src: Array[i32], part: Region[i32, Linear1D]):
        for j in range(len(part)):
            part[j] = j * 3 + 1

    def make(factor):
        @cb.kernel
        def scaled(x: Array[f32], y: Mut[Array[f32]]):
            i = cb.ABSOLUTE_POS
            if i < len(x):
                y[i] = x[i] * factor
        return scaled

    closure = make(3.0)
    data = np.arange(64, dtype=np.float32)

    def run(k):
        if k is regions:
            out = np.zeros(256, np.int32)
            k[2, 32](np.zeros(1, np.int32), out)
            return out
        y = np.zeros(64, np.float32)
        if k is lines_comptime:
            k[1, 32](cb.lines(data, 4), cb.lines(y, 4), 3)
        else:
            k[2, 32](data, y)
        return y

    out = {}
    for name, k in (("lines_comptime", lines_comptime), ("regions", regions), ("closure", closure)):
        before = (pickle.dumps(k), cloudpickle.dumps(k))
        result = run(k)
        after = (pickle.dumps(k), cloudpickle.dumps(k))
        out[name] = (result, before, after)
    sys.stdout.buffer.write(pickle.dumps(out))
''')

LOADER = textwrap.dedent('''
    import pickle, sys
    import numpy as np
    import cubepy as cb
    blob = pickle.loads(sys.stdin.buffer.read())
    results = {}
    for name, (expected, before, after) in blob.items():
        for data in (*before, *after):
            k = pickle.loads(data)
            if name == "regions":
                out = np.zeros(256, np.int32)
                k[2, 32](np.zeros(1, np.int32), out)
            else:
                x, out = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
                if name == "lines_comptime":
                    k[1, 32](cb.lines(x, 4), cb.lines(out, 4), 3)
                else:
                    k[2, 32](x, out)
            np.testing.assert_array_equal(out, expected)
        results[name] = "same"
    print(results)
''')


def _python(code: str, stdin: bytes | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, cwd=cwd, timeout=300)


def test_kernels_of_a_script_pickle_by_value_and_run_the_same_in_another_process(tmp_path):
    script = tmp_path / "kernels_script.py"
    script.write_text(SCRIPT)
    made = subprocess.run([sys.executable, str(script)], capture_output=True, cwd=tmp_path, timeout=300)
    assert made.returncode == 0, made.stderr.decode()[-3000:]
    loaded = _python(LOADER, made.stdout, cwd=tmp_path)       # another folder: the script is not importable
    assert loaded.returncode == 0, loaded.stderr.decode()[-3000:]
    assert "{'lines_comptime': 'same', 'regions': 'same', 'closure': 'same'}" in loaded.stdout.decode()


def test_a_kernel_of_a_module_pickles_by_reference():
    data = pickle.dumps(saxpy)
    assert b"tests.kernels" in data and b"def saxpy" not in data
    assert pickle.loads(data) is saxpy
    assert cloudpickle.loads(cloudpickle.dumps(saxpy)) is saxpy


def test_a_kernel_unpickled_twice_in_a_process_is_one_object_and_compiles_once():
    from cubepy.runtime import pickling
    from tests.distributed.by_value import by_value_kernel

    recipe = by_value_kernel.__reduce__()[1][0]
    first, second = pickling.by_value(recipe), pickling.by_value(recipe)
    assert first is second
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    first[1, 32](x, y, device="interp")
    second[1, 32](x, y, device="interp")
    assert first.trace_count == 1


def test_captured_names_are_the_sources_free_names_only():
    from tests.distributed.by_value import by_value_kernel

    recipe = by_value_kernel.__reduce__()[1][0]
    assert set(recipe.names) == {"cb", "Array", "Mut", "f32", "SCALE"}          # not its parameter 'x'
    assert recipe.names["SCALE"] == 2.0


def test_unpickling_a_kernel_its_module_lacks_names_the_kernel():
    from cubepy.runtime.pickling import by_reference

    with pytest.raises(cb.CubeError, match="cannot unpickle cubepy kernel 'gone': tests.kernels.gone is not "
                                           "importable here"):
        by_reference("tests.kernels", "gone", "kernel")


def test_a_kernel_without_source_cannot_pickle_and_says_why():
    namespace = {}
    exec(compile("import cubepy as cb\n@cb.kernel\ndef nowhere(x: cb.Array[cb.f32]):\n    pass\n", "<typed>", "exec"),
         namespace)
    with pytest.raises(pickle.PicklingError, match="cubepy kernel 'nowhere' has no source text to pickle"):
        pickle.dumps(namespace["nowhere"])
