"""Plane ops: reductions, votes, shuffles and scans as preamble helpers, on hardware shuffles or emulated
through shared (local) memory (a mixin of `renderer._Renderer`; the WGSL renderer keeps the dispatch
and writes helpers of its own)."""

from __future__ import annotations

from cubepy.ir.nodes import Op
from cubepy.ir.opcodes import PLANE_COMBINE, PLANE_OPS, PLANE_REDUCE, PLANE_SHUFFLES, PLANE_SOURCE_LANE, PLANE_VOTES
from cubepy.ir.types import DType, Type, f32, i32, u32, u64


class PlaneOps:
    """The ``plane_*`` opcodes; the renderer provides P, units, mask_t, full_mask and the cb_lane state."""

    # --- plane ops ------------------------------------------------------------------------

    def _plane(self, op: Op) -> None:
        code = op.opcode
        if code == "plane_elect":
            self._define(op, lambda i: f"(cb_lane == {self._lit(0, i32)})")
            return
        x = op.args[0]
        dt = x.type.dtype
        extra = f"{self._arg(op.args[1])}, " if len(op.args) > 1 else ""
        native = self._subgroup_helper(code, dt)
        if native is not None:
            self._define(op, lambda i: f"{native}({extra}{self._arg(x, i)})")
            return
        helper = self._plane_helper(code, dt)
        tail = "cb_lane, cb_pmask" if self.d.plane_mode == "shuffle" else self.d.local_plane_args
        self._define(op, lambda i: f"{helper}({self._arg(x, i)}, {extra}{tail})")

    def _shfl(self, x: str, lane: str, dtype: DType) -> str:
        """Read ``x`` (of ``dtype``) from ``lane`` of the plane (shuffle mode); widened where needed."""
        d = self.d
        if dtype.name in d.shfl_dtypes:
            return d.shfl.format(mask="m", x=x, lane=lane, width=self.P)
        if dtype.is_float:
            return f"(({self._c(dtype)}){d.shfl.format(mask='m', x=f'((float){x})', lane=lane, width=self.P)})"
        return f"(({self._c(dtype)}){d.shfl.format(mask='m', x=f'((int){x})', lane=lane, width=self.P)})"

    def _subgroup_helper(self, code: str, dtype: DType) -> str | None:
        """A helper running ``code`` on the device's sub-group builtins, or None where the dialect
        lacks them or the type needs the emulation's exact semantics (bool sums count, f16 sums
        round in f16). Narrow integers widen to 32 bits: sums wrap the same way once narrowed back,
        minima and maxima are exact. Sub-group sizes are checked against the plane size at compile."""
        shuffle = code in PLANE_SHUFFLES
        if not on_sub_groups(code, dtype, self.d):
            return None
        native = self.d.subgroup_ops["plane_shuffle" if shuffle else code]
        name = f"cb_sg_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        extension, call = native
        self.needs.add(extension)
        self.needs.add("cl_khr_subgroups")
        ct, wide = self._c(dtype), self._c(_wide(dtype))
        fn = f"{self.d.device_fn} " if self.d.device_fn else ""
        if code in ("plane_all", "plane_any"):
            body = f"{fn}bool {name}(bool x) {{ return {call.format(x='(int)x')} != 0; }}"
        elif code == "plane_ballot":
            u64t = self._c(u64)
            body = (f"{fn}{u64t} {name}(bool x) {{\n  const uint4 b = {call.format(x='(int)x')};\n"
                    f"  return ({u64t})b.x | (({u64t})b.y << 32);\n}}")
        elif shuffle:
            back = "(y != 0)" if dtype.is_bool else f"({ct})y"
            read = call.format(x=f"({wide})x", lane="(uint)(ok ? s : lane)")
            body = (f"{fn}{ct} {name}(int a, {ct} x) {{\n"
                    f"  const int lane = (int)get_sub_group_local_id(), n = (int)get_sub_group_size();\n"
                    f"  const int s = {self._source_lane(code)};\n"
                    f"  const bool ok = s >= 0 && s < n;\n  const {wide} y = {read};\n"
                    f"  return ok ? {back} : x;\n}}")
        else:
            body = f"{fn}{ct} {name}({ct} x) {{ return ({ct}){call.format(x=f'({wide})x')}; }}"
        return self._helper(name, body)

    def _source_lane(self, code: str) -> str:
        """The lane a shuffle reads (`source_lane`); lane + a may overflow int, which C leaves
        undefined, so an offset past the plane reads no lane (-1)."""
        last = self._lit(self.P - 1, i32)
        lane = source_lane(code, last)
        if PLANE_SOURCE_LANE[code][0] in ("add", "sub"):
            return f"(a < -{last} || a > {last} ? -1 : {lane})"
        return lane

    def _plane_type(self, code: str, dtype: DType) -> str:
        """The type of the result of the plane op ``code`` on ``dtype``."""
        if code == "plane_ballot":
            return self._c(u64)
        return "bool" if code in ("plane_all", "plane_any") else self._c(dtype)

    def _plane_helper(self, code: str, dtype: DType) -> str:
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        d, P, M = self.d, self.P, self.mask_t
        ct, rt = self._c(dtype), self._plane_type(code, dtype)
        lane_arg = ", int a" if code in PLANE_SHUFFLES else ""
        src = self._source_lane(code) if code in PLANE_SHUFFLES else None
        combine = PLANE_COMBINE.get(code)
        zero = self._lit(0, dtype)
        if d.plane_mode == "shuffle":
            sig = f"{d.device_fn} {rt} {name}({ct} x{lane_arg}, int lane, {M} m)"
            if code in PLANE_REDUCE:
                y = self._shfl("x", "lane ^ d", dtype)
                yl = self._shfl("x", "l", dtype)
                body = (f"if (m == {self.full_mask}) {{\n"
                        f"    for (int d = {P // 2}; d > 0; d >>= 1) {{ const {ct} y = {y}; "
                        f"x = {self._binary(combine, dtype, 'x', 'y')}; }}\n    return x;\n  }}\n"
                        f"  {ct} acc = {self._shfl('x', '0', dtype)};\n"
                        + (f"  {d.no_unroll}\n" if d.no_unroll else "") +
                        f"  for (int l = 1; l < {P}; ++l) {{\n    const {ct} y = {yl};\n"
                        f"    if ((m >> l) & 1) acc = {self._binary(combine, dtype, 'acc', 'y')};\n  }}\n"
                        f"  return acc;")
            elif code in PLANE_VOTES:
                bal = f"(({M})({d.ballot.format(mask='m', pred='x')}) & m)"
                body = {"plane_all": f"return {bal} == m;", "plane_any": f"return {bal} != 0;",
                        "plane_ballot": f"return ({rt}){bal};"}[code]
            elif src is not None:
                y = self._shfl("x", "ok ? s : lane", dtype)
                body = (f"const int s = {src};\n  const bool ok = s >= 0 && s < {P} && ((m >> s) & 1);\n"
                        f"  const {ct} y = {y};\n  return ok ? y : x;")
            else:
                y = self._shfl("x", "lane >= d ? lane - d : lane", dtype)
                body = (f"for (int d = 1; d < {P}; d <<= 1) {{\n    const {ct} y = {y};\n"
                        f"    if (lane >= d && ((m >> (lane - d)) & 1)) x = {self._binary('add', dtype, 'x', 'y')};\n"
                        f"  }}\n")
                if code == "plane_inclusive_sum":
                    body += "  return x;"
                else:
                    body += f"  const {ct} y = {self._shfl('x', 'lane > 0 ? lane - 1 : 0', dtype)};\n" \
                            f"  return lane > 0 ? y : {zero};"
        else:   # emulated through shared (local) memory: every unit of the cube takes part
            st = self._c(self._storage(Type(dtype)).dtype)
            sig = f"{d.device_fn} {rt} {name}({ct} x{lane_arg}, int lin, {d.local_q}{self._c(u64)}* scratch)"
            ld = (lambda e: f"({e} != 0)") if dtype.is_bool else (lambda e: e)
            head = (f"{d.local_q}{st}* sh = ({d.local_q}{st}*)scratch;\n"
                    f"  const int lane = lin & {P - 1}, base = lin - lane;\n"
                    f"  const int n = {self.units} - base < {P} ? {self.units} - base : {P};\n"
                    f"  {d.local_barrier}\n  sh[lin] = ({st})x;\n  {d.local_barrier}\n  ")
            if code in PLANE_REDUCE:
                body = (f"{ct} acc = {ld('sh[base]')};\n"
                        f"  for (int l = 1; l < n; ++l) acc = "
                        f"{self._binary(combine, dtype, 'acc', ld('sh[base + l]'))};\n  return acc;")
            elif code in PLANE_VOTES:
                body = (f"{self._c(u64)} bits = 0;\n"
                        f"  for (int l = 0; l < n; ++l) if (sh[base + l]) bits |= ({self._c(u64)})1 << l;\n"
                        f"  return " + {"plane_all": f"bits == ((n == 64) ? ~({self._c(u64)})0 : "
                                                    f"((({self._c(u64)})1 << n) - 1));",
                                        "plane_any": "bits != 0;", "plane_ballot": "bits;"}[code])
            elif src is not None:
                body = (f"const int s = {src};\n"
                        f"  return (s >= 0 && s < n) ? {ld('sh[base + s]')} : x;")
            else:
                stop = "lane" if code == "plane_inclusive_sum" else "lane - 1"
                body = (f"{ct} acc = {zero};\n"
                        f"  for (int l = 0; l <= {stop}; ++l) acc = "
                        f"{self._binary('add', dtype, 'acc', ld('sh[base + l]'))};\n  return acc;")
            body = head + body
        return self._helper(name, f"{sig} {{\n  {body}\n}}")


def on_sub_groups(code: str, dtype: DType, dialect) -> bool:
    """Whether the plane op ``code`` on ``dtype`` runs on the dialect's sub-group builtins (else,
    in "local" mode, it is emulated through local memory between two work-group barriers)."""
    shuffle = code in PLANE_SHUFFLES
    if dialect.subgroup_ops.get("plane_shuffle" if shuffle else code) is None:
        return False
    if dtype.is_bool and code not in PLANE_VOTES and not shuffle:
        return False
    return not (dtype.name in ("f16", "bf16") and not shuffle)


def uses_barrier(op: Op, dialect) -> bool:
    """Whether ``op`` is a cube-wide barrier in this dialect: ``sync_cube``, or a plane op emulated
    through local memory."""
    if op.opcode == "sync_cube":
        return True
    if op.opcode not in PLANE_OPS or dialect.plane_mode == "shuffle" or op.opcode == "plane_elect":
        return False
    return not on_sub_groups(op.opcode, op.args[0].type.dtype, dialect)


_OPERATOR = {"and": "&", "xor": "^", "sub": "-", "add": "+"}


def source_lane(code: str, last: str) -> str:
    """The expression of the lane a shuffle reads (`PLANE_SOURCE_LANE`), over the helper's ``lane``
    and ``a`` and the literal ``last`` (the plane's last lane), for every form of the helpers."""
    inst, left, right = PLANE_SOURCE_LANE[code]
    operand = {"a": "a", "lane": "lane", "last": last}
    return f"{operand[left]} {_OPERATOR[inst]} {operand[right]}"


def _wide(dtype: DType) -> DType:
    """The type a sub-group builtin takes for ``dtype``: 32 bits at least; bool as int, f16 as f32."""
    if dtype.is_bool:
        return i32
    if dtype.is_float:
        return f32 if dtype.bits < 32 else dtype
    if dtype.bits >= 32:
        return dtype
    return i32 if dtype.is_signed else u32


__all__ = ["PlaneOps", "on_sub_groups", "source_lane", "uses_barrier"]
