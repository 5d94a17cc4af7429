"""The CPU device itself: probe, options (threads), source forms, fast math, the disk cache, and its
out-of-bounds reports: the interpreter's exact message, for the lowest failing unit."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f16, f32, i8, i16, i32, i64, u16
from tests.kernels import saxpy, tree_sum


def test_probe_reports_real_properties():
    dev = cb.device("cpu", plane_dim=4, threads=3)
    p = dev.properties
    assert p.backend == "cpu" and p.plane_dim == 4 and p.compute_units == 3
    assert {"fp64", "fp16", "atomics", "plane_ops"} <= p.features and not p.supports("bf16")
    assert cb.device("cpu").properties.plane_dim in (4, 8, 16)
    assert cb.device("cpu").properties.compute_units == os.cpu_count()


@pytest.mark.parametrize("bad", [0, 3, 128, "8", True])
def test_bad_plane_dim(bad):
    with pytest.raises(cb.ArgumentValueError, match="plane_dim"):
        cb.device("cpu", plane_dim=bad)


def test_bad_options():
    with pytest.raises(cb.ArgumentValueError, match="threads"):
        cb.device("cpu", threads=0)
    with pytest.raises(cb.ArgumentValueError, match="unknown option"):
        cb.device("cpu", warp=3)


def test_source_forms():
    x = np.ones(64, np.float32)
    src = saxpy.source(x, x.copy(), 1.0, device="cpu", dim=64)
    assert "define void @saxpy_entry" in src and "noalias readonly" in src
    opt = saxpy.source(x, x.copy(), 1.0, device="cpu", dim=64, form="optimized")
    assert "define" in opt
    asm = saxpy.source(x, x.copy(), 1.0, device="cpu", dim=64, form="asm")
    assert "saxpy_entry" in asm


def test_the_cube_loop_steps_the_cube_position_without_dividing():
    # the position is divided out of the range's first cube once; in the loop it steps like an
    # odometer (a division a cube cost a 256-unit saxpy about 4% of its time, thirty-third session)
    x = np.ones(1024, np.float32)
    src = saxpy.source(x, x.copy(), 1.0, device="cpu", dim=256)
    body = src[src.index("cube_body"):src.index("define void @saxpy_entry")]
    assert "udiv" not in body and "urem" not in body
    assert "udiv" in src[:src.index("cube_body")]


@pytest.mark.parametrize("count", [(3, 5, 7), (1, 1, 9), (7, 1, 1), (2, 3, 1), (1, 4, 3), (5, 1, 3)])
def test_every_cube_sees_its_own_position_however_the_threads_split_the_grid(count):
    @cb.kernel
    def where(out: Mut[Array[i32]]):
        c = cb.CUBE_POS_X + cb.CUBE_COUNT_X * (cb.CUBE_POS_Y + cb.CUBE_COUNT_Y * cb.CUBE_POS_Z)
        if cb.UNIT_POS == 0:
            out[3 * c] = cb.CUBE_POS_X
            out[3 * c + 1] = cb.CUBE_POS_Y
            out[3 * c + 2] = cb.CUBE_POS_Z

    n = count[0] * count[1] * count[2]
    want = np.array([(x, y, z) for z in range(count[2]) for y in range(count[1]) for x in range(count[0])],
                    np.int32).ravel()
    for threads in (1, 2, 3, 5):          # ranges that start and end inside a row or a plane
        out = np.full(3 * n, -7, np.int32)
        where[count, (4, 2, 1)](out, device=cb.device("cpu", threads=threads))
        np.testing.assert_array_equal(out, want)


def test_fastmath_flags():
    @cb.kernel(fastmath="algebraic")
    def fm(x: cb.Array[cb.f32], y: cb.Mut[cb.Array[cb.f32]]):
        i = cb.ABSOLUTE_POS
        y[i] = x[i] * 2.0 + y[i]

    x = np.ones(64, np.float32)
    src = fm.source(x, x.copy(), device="cpu", dim=64)
    assert "fmul reassoc contract arcp afn" in src and "nnan" not in src and "ninf" not in src
    y = np.ones(64, np.float32)
    fm[1, 64](x, y, device="cpu")
    assert (y == 3).all()
    plain = saxpy.source(x, x.copy(), 1.0, device="cpu", dim=64)
    assert "reassoc" not in plain


def test_shared_memory_limit_and_divergent_sync_are_errors():
    @cb.kernel
    def big(x: cb.Mut[cb.Array[cb.f32]]):
        sm = cb.SharedMemory(cb.f32, 65536)
        sm[cb.UNIT_POS_X] = 1.0
        x[0] = sm[0]

    with pytest.raises(cb.ArgumentValueError):
        big[1, 32](np.zeros(1, np.float32), device="cpu")

    @cb.kernel
    def divergent(x: cb.Mut[cb.Array[cb.f32]]):
        if x[cb.UNIT_POS_X] > 0:
            cb.sync_cube()

    with pytest.raises(cb.DivergenceError):
        divergent[1, 32](np.zeros(32, np.float32), device="cpu")


SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np
    import cubepy as cb
    from cubepy import f32, Array, Mut
    from cubepy.backends import cpu

    @cb.kernel
    def add_one(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = x[i] + 1.0

    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    add_one[2, 64](x, y, device="cpu")
    assert (y == x + 1).all()
    print(json.dumps(cpu.stats))
''')


def _run_script(tmp_path: Path, cache: Path) -> dict:
    script = tmp_path / "second.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, CUBEPY_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_disk_cache_second_process_compiles_nothing(tmp_path):
    cache = tmp_path / "cache"
    first = _run_script(tmp_path, cache)
    assert first["compiles"] == 1 and first["disk_writes"] == 1
    second = _run_script(tmp_path, cache)
    assert second["compiles"] == 0 and second["disk_hits"] == 1


def test_corrupt_cache_entry_is_recompiled(tmp_path):
    cache = tmp_path / "cache"
    _run_script(tmp_path, cache)
    entries = list(cache.rglob("*.o"))
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:100] + b"garbage")
    again = _run_script(tmp_path, cache)
    assert again["compiles"] == 1 and again["corrupt"] == 1
    assert _run_script(tmp_path, cache)["compiles"] == 0


def test_in_process_cache_key_is_stable():
    from cubepy.backends import cpu

    x = np.ones(256, np.float32)
    before = dict(cpu.stats)
    tree_sum[1, 256](x, np.zeros(1, np.float32), np.int32(128), device=cb.device("cpu", plane_dim=2))
    after = dict(cpu.stats)
    assert after["compiles"] + after["disk_hits"] == before["compiles"] + before["disk_hits"] + 1


def test_a_lower_llvm_optimization_level_is_a_device_option_with_the_same_results():
    x = np.arange(1000, dtype=np.float32)
    fast = cb.device("cpu", opt_level=1)
    assert "LLVM -O1" in fast.properties.name and cb.device("cpu").properties.name != fast.properties.name
    y1, y3 = np.ones(1000, np.float32), np.ones(1000, np.float32)
    saxpy.launch(4, 256, x, y1, 2.0, device=fast)
    saxpy.launch(4, 256, x, y3, 2.0, device="cpu")
    np.testing.assert_array_equal(y1, y3)
    with pytest.raises(cb.ArgumentValueError, match="opt_level must be 0, 1, 2 or 3"):
        cb.device("cpu", opt_level=5)


def test_array_addresses_are_read_right_for_every_kind_of_array(rng):
    from cubepy.backends.cpu import data_pointer

    readonly = rng.random(64).astype(np.float32)
    readonly.flags.writeable = False
    arrays = [rng.random(64).astype(np.float32), readonly, np.zeros(0, np.float32), np.arange(12, dtype=np.int8)[3:],
              np.ones(5, np.float16), np.ones(5, bool)]
    for a in arrays:
        assert data_pointer(a) == a.ctypes.data
    # the warm path reads a read-only input and a view's own address, launch after launch
    x = readonly[8:]
    for _ in range(3):
        out = np.full(56, -1.0, np.float32)
        saxpy[1, 64](x, out, 2.0, device="cpu")
        np.testing.assert_array_equal(out, np.float32(2.0) * x - 1.0)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_saxpy_on_any_number_of_threads(rng, threads):
    n = 1 << 18
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = y.copy()
    saxpy[n // 64 + 1, 64](x, out, 3.0, device=cb.device("cpu", threads=threads))
    np.testing.assert_allclose(out, 3 * x + y, rtol=1e-6)


@cb.kernel
def oob(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    y[i] = x[i + 1]


def test_out_of_bounds_message_is_the_interpreters():
    msgs = []
    for dev in ("cpu", "interp"):
        with pytest.raises(cb.OutOfBoundsError) as e:
            oob[1, 16](np.ones(16, np.float32), np.zeros(16, np.float32), device=dev)
        msgs.append(str(e.value))
        assert e.value.kernel == "oob" and e.value.loc is not None
    assert msgs[0] == msgs[1]
    assert "index (16,) is out of bounds for array 'x' of shape (16,) (unit (15, 0, 0) of cube (0, 0, 0))" in msgs[0]


def test_oob_records_are_cleared_between_launches():
    """A unit loop writes a bounds record only for a failing unit and the report clears them: a
    clean launch after a failing one must not raise, and a later failure reports its own unit."""
    @cb.kernel
    def shifted(x: Array[f32], y: Mut[Array[f32]], k: i32):
        i = cb.ABSOLUTE_POS
        y[i] = x[i + k]

    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    for k, bad_unit in ((10, 54), (0, None), (3, 61), (0, None), (3, 61)):
        if bad_unit is None:
            shifted[1, 64](x, y, np.int32(k), device="cpu")
            np.testing.assert_array_equal(y, x)
        else:
            with pytest.raises(cb.OutOfBoundsError) as e:
                shifted[1, 64](x, y, np.int32(k), device="cpu")
            assert f"unit ({bad_unit}, 0, 0)" in str(e.value)


AVX2_SCRIPT = textwrap.dedent('''
    import json, re, sys
    import numpy as np
    import cubepy as cb
    from tests.kernels import saxpy, tree_sum

    dev = cb.device("cpu")
    rng = np.random.default_rng(int(sys.argv[1]))
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    want = y + 2 * x
    saxpy[4, 256](x, y, 2.0, device=dev)
    ok = bool(np.array_equal(y, want))
    compiled = saxpy.compile(x, y, 2.0, dim=256, device=dev)
    asm = compiled.source("asm")
    print(json.dumps({"name": dev.properties.name, "plane": dev.properties.plane_dim, "ok": ok,
                      "ymm": len(re.findall("ymm", asm)), "zmm": len(re.findall("zmm", asm)),
                      "features": sorted(dev.properties.features)}))
''')


def test_avx2_code_on_any_avx2_host(tmp_path, rng):
    """CUBEPY_CPU_ISA=avx2 compiles for the host without AVX-512 (what an AVX2 machine runs): plane
    size 8, 256-bit vectors only, the same answers; on this project's AVX-512 machines it is how
    the AVX2 code is tested and measured."""
    from cubepy.backends.cpu import jit

    if "+avx2" not in jit.host()["features"].split(","):
        pytest.skip("this CPU has no AVX2")
    script = tmp_path / "avx2.py"
    script.write_text(AVX2_SCRIPT)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, CUBEPY_CPU_ISA="avx2", CUBEPY_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(script), str(rng.integers(1 << 30))], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["ok"] and found["plane"] == 8 and "AVX-512 off" in found["name"]
    assert found["ymm"] > 0 and found["zmm"] == 0 and "avx512f" not in found["features"]
    bad = subprocess.run([sys.executable, "-c", "import cubepy as cb; cb.device('cpu').require()"],
                         env=dict(env, CUBEPY_CPU_ISA="avx3"), capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "CUBEPY_CPU_ISA='avx3': use native or avx2" in bad.stderr


def test_the_instruction_set_is_a_device_option_too(rng):
    """``cb.device("cpu", isa="avx2")`` gives AVX2 code in a process whose default is native: its
    own target machine and disk-cache entries, plane size 8, 256-bit registers only, the same
    answers; an unknown isa names the choices."""
    from cubepy.backends.cpu import jit

    if "+avx2" not in jit.features("native").split(","):
        pytest.skip("this CPU has no AVX2")
    dev = cb.device("cpu", isa="avx2")
    assert dev.properties.plane_dim == 8 and "avx512f" not in dev.properties.features
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    want = y + 2 * x
    saxpy[4, 256](x, y, 2.0, device=dev)
    np.testing.assert_array_equal(y, want)
    asm = saxpy.compile(x, y, 2.0, dim=256, device=dev).source("asm")
    assert "ymm" in asm and "zmm" not in asm
    with pytest.raises(ValueError, match="isa must be one of native, avx2, got .sse."):
        cb.device("cpu", isa="sse")


def test_a_cubes_unit_loop_stays_a_loop_in_the_vector_code():
    """The loop over a 256-unit cube's units carries an unroll count of 4, so its vector code is
    a loop, not one block per cube (as a block, saxpy ran 1.13x numba on a Sapphire Rapids host):
    the vector multiplies in the code cover fewer units than the cube has."""
    x = np.ones(1 << 16, np.float32)
    compiled = cb.kernel(checked=False)(saxpy.fn).compile(x, x.copy(), 2.0, dim=256, device="cpu")
    assert '!{!"llvm.loop.unroll.count", i32 4}' in compiled.source("source")
    asm = compiled.source("asm")
    lanes = {"xmm": 4, "ymm": 8, "zmm": 16}
    covered = sum(lanes[reg] for reg in re.findall(r"vmulps\s[^\n]*?%([xyz]mm)\d+\n", asm))
    assert 0 < covered < 256, covered


def test_the_branch_to_a_cubes_checked_copy_is_weighted_as_cold():
    """Checks decided once per cube branch to the per-unit checked copy only when the cube may
    fail one: the branch carries branch weights for the fast way, so LLVM lays the fast way out
    straight and keeps its registers (unweighted, the checked triad ran 1.09x numba against the
    unchecked one's 1.02x on a Sapphire Rapids host)."""
    from tests.kernels import triad

    x = np.ones(1 << 16, np.float32)
    source = triad.compile(x, x.copy(), x.copy(), 2.0, dim=256, device="cpu").source("source")
    weights = re.search(r'^(!\d+) = !\{!"branch_weights", i32 (\d+), i32 1\}$', source, re.M)
    assert weights and int(weights[2]) >= 1000, source[-800:]
    assert re.search(rf"br i1 %t\d+, label %cif_then\d+, label %cif_else\d+, !prof {weights[1]}$", source, re.M)


def test_a_cube_of_several_rows_is_vectorized_along_its_rows(rng):
    """A cube of (32, 4, 2) units runs as a loop over its rows around a loop over a row's units,
    so saxpy indexed by ABSOLUTE_POS_X/Y/Z is vector code (one flat loop over the 256 units took
    each position apart per unit and stayed scalar); the answers are the same."""
    from tests.kernels import saxpy3

    x, y = rng.standard_normal(4096).astype(np.float32), rng.standard_normal(4096).astype(np.float32)
    optimized = saxpy3.compile(x, y, 2.0, 0, dim=(32, 4, 2), device="cpu").source("optimized")
    assert re.search(r"fmul <\d+ x float>", optimized), optimized
    want = y + 2 * x
    saxpy3[(4, 2, 2), (32, 4, 2)](x, y, 2.0, 0, device="cpu")
    np.testing.assert_array_equal(y, want)


@cb.kernel
def long_chain(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        s = x[i]
        for k in cb.unroll(range(150)):
            s = s * f32(1.001) + f32(k)
        y[i] = s


def test_a_long_unit_loop_body_is_left_to_llvms_own_unrolling(rng):
    """The unroll count goes only on small unit loop bodies (`cube.SMALL_BODY_LINES`): on a long
    one it forced an unroll LLVM did not choose (MATVEC_3D_STENCIL 9% slower)."""
    from cubepy.backends.cpu.cube import SMALL_BODY_LINES

    x = rng.standard_normal(1024).astype(np.float32)
    y = np.full_like(x, np.nan)                       # poisoned
    lines = long_chain.source(x, y, device="cpu", dim=256).splitlines()
    heads = {line[:-1]: n for n, line in enumerate(lines) if re.fullmatch(r"u_head\d+:", line)}
    loops = [(n - heads[m[1]], "!llvm.loop" in line) for n, line in enumerate(lines)
             if (m := re.match(r"\s*br label %(u_head\d+)", line)) and n > heads[m[1]]]     # back edges
    assert any(size > SMALL_BODY_LINES for size, _ in loops), loops
    assert all(not hinted for size, hinted in loops if size > SMALL_BODY_LINES), loops
    long_chain[4, 256](x, y, device="cpu")
    want = x.copy()
    for k in range(150):
        want = want * np.float32(1.001) + np.float32(k)
    np.testing.assert_array_equal(y, want)


@cb.kernel
def half_to_ints(x: Array[f16], o8: Mut[Array[i8]], o16: Mut[Array[i16]], o32: Mut[Array[i32]],
                 o64: Mut[Array[i64]], ou16: Mut[Array[u16]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        o8[i] = i8(x[i])
        o16[i] = i16(x[i])
        o32[i] = i32(x[i])
        o64[i] = i64(x[i])
        ou16[i] = u16(x[i])


def test_a_half_precision_nan_converts_to_zero_in_every_integer_type(rng):
    """f16 -> integer goes through f32 (exact): LLVM 20 with AVX512-FP16 gave -32768 for
    fptosi.sat of a NaN to i16. The IR shows the widening on any host; the values are checked
    on this one (the conformance suite checks them at every plane size)."""
    x = np.array([np.nan, -np.nan, 1.5, -2.5, np.inf, -np.inf, 65504, -65504], np.float16)
    x = np.concatenate([x, (rng.standard_normal(56) * 300).astype(np.float16)])
    outs = [np.full(len(x), 77, t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint16)]   # poisoned
    source = half_to_ints.source(x, *outs, device="cpu", dim=32)
    assert "fptosi.sat.i16.f32" in source and ".f16(" not in source, source
    half_to_ints[2, 32](x, *outs, device="cpu")
    for o in outs:
        lo, hi = int(np.iinfo(o.dtype).min), int(np.iinfo(o.dtype).max)
        want = [0 if np.isnan(v) else hi if v >= hi else lo if v <= lo else int(v) for v in x.astype(np.float64)]
        np.testing.assert_array_equal(o, np.array(want, o.dtype), err_msg=str(o.dtype))


def test_masked_memory_intrinsics_take_the_alignment_in_the_form_of_the_llvm_release(monkeypatch):
    from cubepy.backends.cpu import llvmtext

    monkeypatch.setattr(llvmtext, "_llvm_major", lambda: 22)
    assert llvmtext.masked_pointer("<16 x ptr>", "%t1", 4) == [("<16 x ptr> align 4", "%t1")]
    monkeypatch.setattr(llvmtext, "_llvm_major", lambda: 20)
    assert llvmtext.masked_pointer("ptr", "%t1", 8) == [("ptr", "%t1"), ("i32", "8")]
