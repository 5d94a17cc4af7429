"""The compile pipeline: named stages in a fixed order, analyses stored with the IR."""

import numpy as np
import pytest

import cubepy as cb
from cubepy import Array, Mut, f32
from cubepy.ir.builder import Builder
from cubepy.ir.nodes import Buffer, Const, Kernel
from cubepy.ir.pipeline import PIPELINE, Options, Pipeline, Stage, analysis
from cubepy.ir.types import Type, i32
from cubepy.ir.uniformity import UNIFORM, VARYING

I32, F32 = Type(i32), Type(f32)


def _kernel():
    k = Kernel("k")
    x = Buffer("x", "global", F32, 1, True, None, 0)
    k.params.append(x)
    b = Builder(k)
    u = b.op("builtin", (), I32, name="unit_pos_x")
    c = b.op("builtin", (), I32, name="cube_pos_x")
    b.op("store", (x, u, Const(1.0, F32)), checked=True)
    b.op("store", (x, c, Const(2.0, F32)), checked=True)
    return k, u, c


def test_the_stages_run_in_this_order():
    assert PIPELINE.names() == ("verify", "check_uniformity", "flatten_short_circuits", "prove_in_bounds",
                                "check_per_cube", "check_per_run", "lower_bounds_checks", "eliminate_dead_code",
                                "place_inline_arrays", "verify_lowered", "uniformity")


def test_the_uniformity_of_the_final_ir_is_stored_with_the_kernel():
    k, u, c = _kernel()
    PIPELINE.run(k)
    levels = analysis(k, "uniformity")
    assert levels[u.id] == VARYING and levels[c.id] == UNIFORM


def test_a_transform_drops_the_analyses_stored_before_it():
    k, _, _ = _kernel()
    seen = []
    pipeline = PIPELINE.extended(Stage("look", lambda k, o: seen.append(dict(k.analyses)), "check"))
    pipeline = pipeline.extended(Stage("rewrite", lambda k, o: None, "transform"), after="look")
    pipeline.run(k)
    assert "uniformity" in seen[0]
    with pytest.raises(LookupError, match="kernel 'k' has no stored 'uniformity' analysis"):
        analysis(k, "uniformity")


def test_check_per_cube_runs_only_where_the_device_asks_for_it():
    ran = []
    stage = PIPELINE["check_per_cube"]
    spy = Pipeline([Stage("check_per_cube", lambda k, o: ran.append(o), "transform", when=stage.when)])
    spy.run(_kernel()[0], Options())
    assert ran == []
    spy.run(_kernel()[0], Options(checks_per_cube=True))
    assert len(ran) == 1


def test_check_per_run_runs_only_where_the_device_asks_for_it_and_only_on_checked_kernels():
    ran = []
    spy = Pipeline([Stage("check_per_run", lambda k, o: ran.append(o), "transform",
                          when=PIPELINE["check_per_run"].when)])
    spy.run(_kernel()[0], Options())
    unchecked = _kernel()[0]
    unchecked.checked = False
    spy.run(unchecked, Options(checks_per_run=True))
    assert ran == []
    spy.run(_kernel()[0], Options(checks_per_run=True))
    assert len(ran) == 1


def test_a_backend_stage_goes_after_the_stage_it_names():
    extra = Stage("hoist", lambda k, o: None, "transform")
    names = PIPELINE.extended(extra, after="eliminate_dead_code").names()
    assert names[names.index("eliminate_dead_code") + 1] == "hoist"


def test_stage_names_are_unique_and_kinds_known():
    with pytest.raises(ValueError, match="repeated: verify"):
        PIPELINE.extended(Stage("verify", lambda k, o: None, "check"))
    with pytest.raises(ValueError, match="kind must be one of"):
        Stage("x", lambda k, o: None, "optimize")
    with pytest.raises(KeyError, match="no stage 'nope'"):
        PIPELINE["nope"]


@cb.kernel
def _double(x: Array[f32], y: Mut[Array[f32]]):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = x[i] * 2


def test_a_traced_kernel_comes_out_of_the_pipeline_with_its_analyses():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    compiled = _double.compile(x, y, dim=8, count=1, device="interp")
    compiled(x, y)
    assert (y == 2 * x).all()
    levels = analysis(compiled.ir_module, "uniformity")
    assert VARYING in levels.values() and UNIFORM in levels.values()
