"""Linear forms of integer values (cubepy.ir.linear): what the bounds tests merge on."""

from cubepy.ir.linear import LinearForms
from cubepy.ir.nodes import Const, Op, Value
from cubepy.ir.types import Type, i32, i64

I32, I64 = Type(i32), Type(i64)


class _Ops:
    def __init__(self):
        self.defs = {}

    def op(self, code, *args, type_=I64, **attrs):
        v = Value(type_)
        self.defs[v.id] = Op(code, args, v, attrs)
        return v


def test_neighbours_differ_only_in_the_constant_whatever_the_order_of_their_ops():
    ops = _Ops()
    i = ops.op("load")
    jp = ops.op("cast", ops.op("param", type_=I32, index=3))
    jp_again = ops.op("cast", ops.op("param", type_=I32, index=3))      # read twice: the same term
    a = ops.op("sub", ops.op("add", i, jp), Const(1, I64))               # (i + jp) - 1
    b = ops.op("add", ops.op("add", i, Const(1, I64)), jp_again)         # (i + 1) + jp
    forms = LinearForms(ops.defs)
    (ta, ca), (tb, cb) = forms.of(a), forms.of(b)
    assert ta == tb and (ca, cb) == (-1, 1)
    assert forms.of(ops.op("neg", a))[1] == 1


def test_different_terms_and_values_outside_add_and_sub_stay_apart():
    ops = _Ops()
    i, k = ops.op("load"), ops.op("load")                  # two loads: two terms, even if equal at run time
    forms = LinearForms(ops.defs)
    assert forms.of(ops.op("add", i, Const(1, I64)))[0] != forms.of(ops.op("add", k, Const(1, I64)))[0]
    twice = ops.op("mul", i, Const(2, I64))
    assert forms.of(ops.op("add", twice, Const(3, I64))) == (((forms.key(twice), 1),), 3)
    assert forms.of(ops.op("sub", i, i)) == ((), 0)
    narrowed = ops.op("cast", ops.op("add", i, Const(1, I64)), type_=I32)   # a cast may wrap: a term
    assert forms.of(narrowed)[1] == 0
