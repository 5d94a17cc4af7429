"""The IR layer on its own: builder, printer, verifier, uniformity analysis and passes."""

import pytest

from cubepy.errors import DivergenceError
from cubepy.ir.builder import Builder
from cubepy.ir.nodes import OPCODES, Block, Buffer, Const, Kernel, walk
from cubepy.ir.passes import eliminate_dead_code, lower_bounds_checks
from cubepy.ir.printer import print_kernel
from cubepy.ir.types import Type, bool_, f32, i32
from cubepy.ir.uniformity import PLANE, UNIFORM, VARYING, analyze_uniformity
from cubepy.ir.verify import VerifyError, verify

I32, F32, BOOL = Type(i32), Type(f32), Type(bool_)


def _kernel():
    k = Kernel("k")
    x = Buffer("x", "global", F32, 1, True, None, 0)
    k.params.append(x)
    return k, Builder(k), x


def test_printer_shows_ops_types_and_nesting():
    k, b, x = _kernel()
    u = b.op("builtin", (), I32, name="unit_pos_x")
    cond = b.op("lt", (u, Const(4, I32)), BOOL)
    then = Block()
    b.op("if", (cond,), blocks=(then, Block()))
    with b.at(then):
        b.op("store", (x, u, Const(1.0, F32)), checked=True)
    text = print_kernel(k)
    assert "kernel k(@x: mut array1d<f32>)" in text
    assert "lt(%" in text and "then:" in text and "store(@x" in text


def test_verifier_rejects_use_before_definition_and_type_mismatch():
    k, b, x = _kernel()
    later = b.op("builtin", (), I32, name="unit_pos_x")
    k.body.ops.insert(0, k.body.ops.pop())   # keep it
    b.op("add", (later, Const(1, I32)), I32)
    verify(k)
    k.body.ops.reverse()
    with pytest.raises(VerifyError, match="used before it is defined"):
        verify(k)
    k2, b2, _ = _kernel()
    b2.op("add", (Const(1, I32), Const(1.0, F32)), I32)
    with pytest.raises(VerifyError, match="operand types differ"):
        verify(k2)


def test_verifier_rejects_break_outside_loops_and_unknown_opcodes():
    k, b, _ = _kernel()
    b.op("break")
    with pytest.raises(VerifyError, match="outside a loop"):
        verify(k)
    k2, b2, _ = _kernel()
    b2.op("teleport")
    with pytest.raises(VerifyError, match="unknown opcode"):
        verify(k2)


def test_uniformity_levels():
    k, b, x = _kernel()
    cube = b.op("builtin", (), I32, name="cube_pos_x")
    unit = b.op("builtin", (), I32, name="unit_pos_x")
    mixed = b.op("add", (cube, unit), I32)
    loaded = b.op("load", (x, cube), F32)
    psum = b.op("plane_sum", (loaded,), F32)
    levels = analyze_uniformity(k)
    assert levels[cube.id] == UNIFORM
    assert levels[unit.id] == VARYING and levels[mixed.id] == VARYING
    assert levels[loaded.id] == VARYING          # x is mutable: other units may write it
    assert levels[psum.id] == PLANE


def _loop_over_v():
    """A kernel with ``v = 0`` and then a ``for`` loop: its builder, v and the loop body."""
    k, b, _ = _kernel()
    v = b.new_var("v", I32)
    b.store_var(v, Const(0, I32))
    body = Block()
    b.op("for", (Const(0, I32), Const(4, I32), Const(1, I32)), blocks=(body,), var=b.new_var("c", I32))
    return k, b, v, body


def _sync_if_v_below_2(b, v):
    cond = b.op("lt", (b.load_var(v), Const(2, I32)), BOOL)
    then = Block([])
    b.op("if", (cond,), blocks=(then, Block()))
    with b.at(then):
        b.op("sync_cube")


def test_uniformity_follows_variables_through_loops():
    k, b, v, body = _loop_over_v()
    with b.at(body):
        b.store_var(v, b.op("builtin", (), I32, name="unit_pos_x"))
    _sync_if_v_below_2(b, v)                                    # after the loop
    with pytest.raises(DivergenceError, match="sync_cube"):
        analyze_uniformity(k)


def test_uniformity_sees_a_variable_made_varying_after_its_read_in_the_same_loop_body():
    """The read comes first in the body and sees v uniform; the store after it makes v varying
    for the next iteration, so the analysis must walk the loop again and refuse the sync."""
    k, b, v, body = _loop_over_v()
    with b.at(body):
        _sync_if_v_below_2(b, v)
        b.store_var(v, b.op("builtin", (), I32, name="unit_pos_x"))
    with pytest.raises(DivergenceError, match="sync_cube"):
        analyze_uniformity(k)


def test_bounds_check_lowering_guards_every_access_and_dce_removes_unused_values():
    k, b, x = _kernel()
    u = b.op("builtin", (), I32, name="unit_pos_x")
    loaded = b.op("load", (x, u), F32, checked=True)
    b.op("store", (x, u, loaded), checked=True)
    b.op("mul", (u, u), I32)   # unused
    lower_bounds_checks(k)
    eliminate_dead_code(k)
    verify(k)
    ops = list(walk(k.body))
    assert not any(op.attrs.get("checked") for op in ops)
    assert sum(op.opcode == "report_oob" for op in ops) == 2
    assert not any(op.opcode == "mul" for op in ops)


def test_every_opcode_is_documented():
    for name in ("load", "store", "atomic", "plane_ballot", "for", "loop", "report_oob", "param", "shape"):
        assert name in OPCODES and OPCODES[name]


def test_a_copied_kernel_is_deep_and_keeps_shared_values_shared():
    from cubepy.ir.nodes import copied

    k, b, x = _kernel()
    u = b.op("builtin", (), I32, name="unit_pos_x")
    b.op("store", (x, u, Const(1.0, F32)), checked=True)
    b.op("store", (x, u, Const(2.0, F32)), checked=True)
    for extra in ({}, {"unpicklable": lambda: 0}):       # the second one takes copy.deepcopy
        k.analyses.update(extra)
        c = copied(k)
        assert c is not k and print_kernel(c) == print_kernel(k)
        first, second = c.body.ops[-2], c.body.ops[-1]
        assert first.args[1] is second.args[1] is c.body.ops[-3].result      # one value, two uses
        assert first is not k.body.ops[-2] and c.params[0] is not k.params[0]
