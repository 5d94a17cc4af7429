"""Plane ops in WGSL on the subgroup builtins (``subgroupShuffle``, ``subgroupBallot``), with the same
algorithms as the C backends' warp shuffles: butterflies for whole planes, lane loops under the
mask of a partial one, so that float min/max keep their NaN rule and f16 sums round as f16 (a mixin
of `wgsl.WgslRenderer`).

The backend uses them only where subgroups are planes: the adapter's subgroup size is the plane
size and subgroups are runs of consecutive units (probed); elsewhere the helpers go through
workgroup memory (the dialect's "local" plane mode, `WGSL_EMULATED`). At plane size 1 (no
subgroups) every op is its value alone.
"""

from __future__ import annotations

from cubepy.ir.opcodes import PLANE_COMBINE, PLANE_REDUCE, PLANE_SHUFFLES, PLANE_VOTES
from cubepy.ir.types import DType, i32

from ..cstyle.plane import PlaneOps, source_lane


class WgslPlane(PlaneOps):
    """The helpers of the ``plane_*`` opcodes; the renderer provides P, units, mask_t, full_mask and
    cb_lane/cb_pmask, and the C-style renderer's `PlaneOps` the dispatch."""

    def _source_lane(self, code: str) -> str:
        """The lane a shuffle reads; WGSL's i32 arithmetic wraps, so lane + a needs no guard."""
        return source_lane(code, self._lit(self.P - 1, i32))

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
        if self.d.plane_mode == "local":
            return self._emulated_helper(code, dtype)
        name = f"cb_{code}_{dtype.name}"
        if name in self.helpers:
            return name
        P, M, full = self.P, self.mask_t, self.full_mask
        t, result = self._c(dtype), self._plane_type(code, dtype)
        lane_arg = "a: i32, " if code in PLANE_SHUFFLES else ""
        params = f"x_in: {t}, {lane_arg}lane: i32, m: {M}"
        combine = PLANE_COMBINE.get(code)
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
        elif code in PLANE_VOTES:
            bits = f"({self._ballot('x_in')} & m)"
            none = self._lit(0, self.mask_dtype)
            body = {"plane_all": f"return {bits} == m;", "plane_any": f"return {bits} != {none};",
                    "plane_ballot": f"return u64{bits};"}[code]
        elif code in PLANE_SHUFFLES:
            src = self._source_lane(code)
            body = (f"let s = {src};\n  let ok = s >= 0i && s < {P}i && {self._bit('m', 's')};\n"
                    f"  let y = {self._shfl('x_in', 'select(lane, s, ok)', dtype)};\n  return select(x_in, y, ok);")
        else:
            body = (f"var x = x_in;\n  for (var d: i32 = 1i; d < {P}i; d = d << 1u) {{\n"
                    f"    let y = {self._shfl('x', 'select(lane, lane - d, lane >= d)', dtype)};\n"
                    f"    if (lane >= d && {self._bit('m', 'lane - d')}) {{\n"
                    f"      x = {self._binary('add', dtype, 'x', 'y')};\n    }}\n"
                    f"  }}\n")
            if code == "plane_inclusive_sum":
                body += "  return x;"
            else:
                body += (f"  let y = {self._shfl('x', 'select(0i, lane - 1i, lane > 0i)', dtype)};\n"
                         f"  return select({zero}, y, lane > 0i);")
        return self._fn_helper(name, params, result, body)


    # --- emulated through workgroup memory ------------------------------------------------

    def _to_scratch(self, x: str, dtype: DType) -> str:
        """``x`` as the two words of a scratch slot."""
        if dtype.is_bool:
            return f"vec2<u32>(select(0u, 1u, {x}), 0u)"
        if dtype.bits == 64:
            bits = f"bitcast<u64>({x})" if dtype.is_float else f"u64({x})"
            return f"vec2<u32>(u32({bits} & 0xfffffffflu), u32({bits} >> 32u))"
        if dtype.is_float:
            return f"vec2<u32>(bitcast<u32>(f32({x})), 0u)"
        return f"vec2<u32>(bitcast<u32>({x}), 0u)"

    def _from_scratch(self, w: str, dtype: DType) -> str:
        if dtype.is_bool:
            return f"({w}.x != 0u)"
        if dtype.bits == 64:
            bits = f"((u64({w}.y) << 32u) | u64({w}.x))"
            return f"bitcast<f64>({bits})" if dtype.is_float else f"{self._c(dtype)}({bits})"
        if dtype.is_float:
            return self._down(f"bitcast<f32>({w}.x)", dtype)
        return f"bitcast<{self._c(dtype)}>({w}.x)"

    def _emulated_helper(self, code: str, dtype: DType) -> str:
        """A plane op through ``cb_scratch`` between two workgroup barriers: every unit of the
        cube must call it (the backend hoists barriers out of conditionals first)."""
        name = f"cb_{code}_{dtype.name}_local"
        if name in self.helpers:
            return name
        self.needs.add("scratch")
        P, t, result = self.P, self._c(dtype), self._plane_type(code, dtype)
        lane_arg = "a: i32, " if code in PLANE_SHUFFLES else ""

        def at(i: str) -> str:
            return self._from_scratch(f"cb_scratch[{i}]", dtype)
        head = (f"let lane = lin & {P - 1}i;\n  let base = lin - lane;\n  let n = min({self.units}i - base, {P}i);\n"
                f"  workgroupBarrier();\n  cb_scratch[lin] = {self._to_scratch('x', dtype)};\n"
                "  workgroupBarrier();\n  ")
        if code in PLANE_REDUCE:
            body = (f"var acc = {at('base')};\n  for (var l = 1i; l < n; l = l + 1i) {{ "
                    f"acc = {self._binary(PLANE_COMBINE[code], dtype, 'acc', at('base + l'))}; }}\n  return acc;")
        elif code in PLANE_VOTES:
            one, zero = self._lit(1, self.mask_dtype), self._lit(0, self.mask_dtype)
            every = f"select(({one} << u32(n)) - {one}, {self.full_mask}, n >= {P}i)"
            body = (f"var bits = {zero};\n  for (var l = 0i; l < n; l = l + 1i) {{ "
                    f"if (cb_scratch[base + l].x != 0u) {{ bits = bits | ({one} << u32(l)); }} }}\n  return "
                    + {"plane_all": f"bits == {every};", "plane_any": f"bits != {zero};",
                       "plane_ballot": "u64(bits);"}[code])
        elif code in PLANE_SHUFFLES:
            src = self._source_lane(code)
            body = (f"let s = {src};\n  let ok = s >= 0i && s < n;\n"
                    f"  return select(x, {at('base + clamp(s, 0i, n - 1i)')}, ok);")
        else:
            stop = "lane" if code == "plane_inclusive_sum" else "lane - 1i"
            body = (f"var acc = {self._lit(0, dtype)};\n  for (var l = 0i; l <= {stop}; l = l + 1i) {{ "
                    f"acc = {self._binary('add', dtype, 'acc', at('base + l'))}; }}\n  return acc;")
        return self._fn_helper(name, f"x: {t}, {lane_arg}lin: i32", result, head + body)


__all__ = ["WgslPlane"]
