"""Integer values as linear forms: a sum of terms (structural keys of values, with coefficients)
plus a constant, read through ``add``, ``sub`` and ``neg``.

Integer arithmetic wraps, and wrapping addition is exact modulo ``2**bits``; so two values of one
type whose forms differ only in the constant differ by exactly that constant modulo ``2**bits``,
whatever order their ops ran in. Bounds tests use this to test a group of neighbours (``x[i - 1]``,
``x[i]``, ``x[i + 1]``) with one compare (`cubepy.ir.run_checks`). Terms are compared by structure
(a parameter, a shape, a cast of the same term), so values computed twice from the same inputs
(``i + jp`` in two statements) have the same form.
"""

from __future__ import annotations

from .nodes import Const, Op, Value
from .opcodes import PURE

Form = tuple[tuple, int]          # (sorted ((term key, coefficient), ...), constant)


class LinearForms:
    """The forms of the values defined by ``defs`` (value id -> its op)."""

    def __init__(self, defs: dict[int, Op]):
        self.defs = defs
        self._forms: dict[int, Form] = {}
        self._keys: dict[int, tuple] = {}

    def of(self, v) -> Form:
        if isinstance(v, Const):
            return (), int(v.value)
        form = self._forms.get(v.id)
        if form is None:
            op = self.defs.get(v.id)
            code = op.opcode if op is not None else None
            if code in ("add", "sub") and op.args[0].type == op.args[1].type == v.type:
                (ta, ca), (tb, cb) = self.of(op.args[0]), self.of(op.args[1])
                sign = 1 if code == "add" else -1
                form = _sum(ta, tb, sign), ca + sign * cb
            elif code == "neg" and op.args[0].type == v.type:
                terms, c = self.of(op.args[0])
                form = tuple((k, -n) for k, n in terms), -c
            else:
                form = ((self.key(v), 1),), 0
            self._forms[v.id] = form
        return form

    def key(self, v) -> tuple:
        """A structural key: equal for values computed by the same pure ops from the same inputs."""
        if isinstance(v, Const):
            return ("const", str(v.type), v.value)
        key = self._keys.get(v.id)
        if key is None:
            op = self.defs.get(v.id)
            if op is None:
                key = ("value", v.id)
            elif op.opcode == "param":
                key = ("param", op.attrs["index"])
            elif op.opcode == "shape":
                key = ("shape", op.args[0].id, op.attrs["dim"])
            elif op.opcode == "builtin":
                key = ("builtin", op.attrs["name"])
            elif op.opcode in PURE and not op.blocks:
                key = (op.opcode, str(v.type), tuple(self.key(a) if isinstance(a, Value) else a for a in op.args),
                       tuple(sorted((k, str(x)) for k, x in op.attrs.items())))
            else:
                key = ("value", v.id)
            self._keys[v.id] = key
        return key


def _sum(a: tuple, b: tuple, sign: int) -> tuple:
    out: dict = dict(a)
    for k, n in b:
        out[k] = out.get(k, 0) + sign * n
    return tuple(sorted(((k, n) for k, n in out.items() if n), key=repr))
