"""Plane ops in WGSL on the subgroup builtins (``subgroupShuffle``, ``subgroupBallot``), with the same
algorithms as the C backends' warp shuffles: butterflies for whole planes, lane loops under the
mask of a partial one, so that float min/max keep their NaN rule and f16 sums round as f16 (a mixin
of `wgsl.WgslRenderer`).

The backend uses them only where subgroups are planes: the adapter's subgroup size is the plane
size and subgroups are runs of consecutive units (probed). At plane size 1 (no subgroups) every
op is its value alone.
"""

from __future__ import annotations

from cubepy.ir.nodes import PLANE_REDUCE, Op
from cubepy.ir.types import DType

from ..cstyle.plane import _SOURCE_LANE

_COMBINE = {"plane_sum": "add", "plane_prod": "mul", "plane_min": "min", "plane_max": "max",
            "plane_inclusive_sum": "add", "plane_exclusive_sum": "add"}


class WgslPlane:
    """The ``plane_*`` opcodes; the renderer provides P, units, mask_t, full_mask and cb_lane/cb_pmask."""

    def _plane(self, op: Op) -> None:
        code = op.opcode
        if code == "plane_elect":
            self._define(op, lambda i: "(cb_lane == 0i)")
            return
        x = op.args[0]
        extra = f"{self._arg(op.args[1])}, " if len(op.args) > 1 else ""
        helper = self._plane_helper(code, x.type.dtype)
        self._define(op, lambda i: f"{helper}({self._arg(x, i)}, {extra}cb_lane, cb_pmask)")

    def _shfl(self, x: str, lane: str, dtype: DType) -> str:
        """``x`` (of ``dtype``) of ``lane`` of the plane; 64-bit values as two words."""
        if self.P == 1:
            return x
        at = f"u32({lane})"
        if dtype.is_bool:
            return f"(subgroupShuffle(select(0u, 1u, {x}), {at}) != 0u)"
        if dtype.name == "f16":
            return f"f16(subgroupShuffle(f32({x}), {at}))"
        if dtype.bits == 64:
            return f"{self._shfl64_helper(dtype)}({x}, {at})"
        return f"subgroupShuffle({x}, {at})"

    def _shfl64_helper(self, dtype: DType) -> str:
        t = self._c(dtype)
        bits = "bitcast<u64>(x)" if dtype.is_float else "u64(x)"
        back = "bitcast<f64>(w)" if dtype.is_float else f"{t}(w)"
        body = (f"let b = {bits};\n  let w = (u64(subgroupShuffle(u32(b >> 32u), l)) << 32u) | "
                f"u64(subgroupShuffle(u32(b & 0xfffffffflu), l));\n  return {back};")
        return self._fn_helper(f"cb_shfl_{dtype.name}", f"x: {t}, l: u32", t, body)

    def _ballot(self, pred: str) -> str:
        """The mask (of mask_t) of the lanes whose ``pred`` is true."""
        if self.P == 1:
            return f"select(0u, 1u, {pred})"
        if self.P <= 32:
            return f"subgroupBallot({pred}).x"
        body = "let b = subgroupBallot(p);\n  return u64(b.x) | (u64(b.y) << 32u);"
        return f"{self._fn_helper('cb_ballot64', 'p: bool', 'u64', body)}({pred})"

    def _bit(self, m: str, lane: str) -> str:
        return f"((({m}) >> u32({lane})) & {self._lit(1, self.mask_dtype)}) != {self._lit(0, self.mask_dtype)}"

    def _plane_helper(self, code: str, dtype: DType) -> str:
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        P, M, full = self.P, self.mask_t, self.full_mask
        t = self._c(dtype)
        result = "u64" if code == "plane_ballot" else "bool" if code in ("plane_all", "plane_any") else t
        lane_arg = "a: i32, " if code in _SOURCE_LANE else ""
        params = f"x_in: {t}, {lane_arg}lane: i32, m: {M}"
        combine = _COMBINE.get(code)
        zero = self._lit(0, dtype)
        if code in PLANE_REDUCE:
            body = (f"var x = x_in;\n  if (m == {full}) {{\n"
                    f"    for (var d: i32 = {P // 2}i; d > 0i; d = d >> 1u) {{\n"
                    f"      let y = {self._shfl('x', 'lane ^ d', dtype)};\n"
                    f"      x = {self._binary(combine, dtype, 'x', 'y')};\n    }}\n    return x;\n  }}\n"
                    f"  var acc = {self._shfl('x', '0i', dtype)};\n"
                    f"  for (var l: i32 = 1i; l < {P}i; l = l + 1i) {{\n"
                    f"    let y = {self._shfl('x', 'l', dtype)};\n"
                    f"    if {self._bit('m', 'l')} {{ acc = {self._binary(combine, dtype, 'acc', 'y')}; }}\n  }}\n"
                    f"  return acc;")
        elif code in ("plane_all", "plane_any", "plane_ballot"):
            bits = f"({self._ballot('x_in')} & m)"
            body = {"plane_all": f"return {bits} == m;", "plane_any": f"return {bits} != {self._lit(0, self.mask_dtype)};",
                    "plane_ballot": f"return u64{bits};"}[code]
        elif code in _SOURCE_LANE:
            src = _SOURCE_LANE[code].format(last=f"{P - 1}i")
            body = (f"let s = {src};\n  let ok = s >= 0i && s < {P}i && {self._bit('m', 's')};\n"
                    f"  let y = {self._shfl('x_in', 'select(lane, s, ok)', dtype)};\n  return select(x_in, y, ok);")
        else:
            body = (f"var x = x_in;\n  for (var d: i32 = 1i; d < {P}i; d = d << 1u) {{\n"
                    f"    let y = {self._shfl('x', 'select(lane, lane - d, lane >= d)', dtype)};\n"
                    f"    if (lane >= d && {self._bit('m', 'lane - d')}) {{ x = {self._binary('add', dtype, 'x', 'y')}; }}\n"
                    f"  }}\n")
            if code == "plane_inclusive_sum":
                body += "  return x;"
            else:
                body += (f"  let y = {self._shfl('x', 'select(0i, lane - 1i, lane > 0i)', dtype)};\n"
                         f"  return select({zero}, y, lane > 0i);")
        return self._fn_helper(name, params, result, body)


__all__ = ["WgslPlane"]
