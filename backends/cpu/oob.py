"""Out-of-bounds reports without a call in the unit loop (see DESIGN.md, "Bounds checks").

Inside a region every unit keeps a small record in registers: the site of its first bad access
(0 = none) and that access's indices (and any extent that is not cube-invariant). The else
branch of a bounds check only updates the record with selects, so LLVM can still if-convert and
vectorize the unit loop (and a gang updates the records of all its lanes at once). At the end of
each unit the record goes to a per-unit array (``%rec``, a noalias part of the workspace) and an
or-reduction tells whether any unit went out of bounds; only then, after the unit loop, a scan finds
the lowest such unit and reports its first bad access through the ``cmpxchg`` of the error word.

Record words are i32; an index wider than 32 bits (a checked access compares i64 and u64 indices
at their full width) takes two words, low then high, so the report shows the true value.
"""

from __future__ import annotations

from cubepy.ir.nodes import Const, Op, walk
from cubepy.ir.types import Type, i32, i64

from .common import MAX_OOB_DIMS
from .lanes import Lanes
from .llvmtext import const


def region_sites(ops: list[Op]) -> list[Op]:
    out = []
    for op in ops:
        if op.opcode == "report_oob":
            out.append(op)
        for b in op.blocks:
            out.extend(o for o in walk(b) if o.opcode == "report_oob")
    return out


class OobMixin:
    def _oob_recorded(self, op: Op) -> list[int]:
        """Positions of the report's args that each unit records (indices; extents unless invariant)."""
        nd = len(op.args) // 2
        return [j for j, a in enumerate(op.args)
                if j < nd or not (isinstance(a, Const) or a.id in self.invariant)]

    def _oob_words(self, op: Op) -> int:
        """i32 words a unit's record of this site needs: one per recorded value, two if 64-bit."""
        return sum(_words(op.args[j]) for j in self._oob_recorded(op))

    def _oob_layout_words(self) -> int:
        """i32 words per unit of the record arrays (0 when the kernel has no checks)."""
        sites = [op for op in walk(self.k.body) if op.opcode == "report_oob"]
        return 1 + max(self._oob_words(op) for op in sites) if sites else 0

    def _rec_ptr(self, word: int, u: str) -> str:
        base = self.fn.op(f"getelementptr i32, ptr %rec, i32 {word * self.Upad}")
        return self.fn.op(f"getelementptr i32, ptr {base}, i32 {u}")

    def _oob_region_begin(self, ops: list[Op], width: int = 1) -> None:
        """Set up the per-unit record of a region emitted ``width`` units at a time (a gang's: vectors)."""
        sites = region_sites(ops)
        if not sites:
            self.oob = None
            return
        fn, lanes = self.fn, Lanes(width)
        ty = lanes.vector("i32")
        nvals = max(self._oob_words(op) for op in sites)
        self.oob = {"ty": ty, "lanes": lanes, "site": fn.alloca(ty), "vals": [fn.alloca(ty) for _ in range(nvals)],
                    "any": fn.alloca("i32", 4), "sites": []}
        fn.emit(f"store i32 0, ptr {self.oob['any']}")

    def _oob_unit_begin(self) -> None:
        if self.oob:
            ty, zero = self.oob["ty"], self.oob["lanes"].zero
            for p in [self.oob["site"], *self.oob["vals"]]:
                self.fn.emit(f"store {ty} {zero}, ptr {p}")

    def _report_oob(self, op: Op) -> None:
        """The else branch of a bounds check: remember this access unless the unit has one already."""
        fn, rec = self.fn, self.oob
        nd = len(op.args) // 2
        site = len(self.oob_sites)
        unsigned = tuple(not a.type.dtype.is_signed for a in op.args[:nd])
        self.oob_sites.append((op.attrs.get("array", "?"), op.loc, nd, unsigned))
        rec["sites"].append((site, op))
        ty, lanes = rec["ty"], rec["lanes"]
        cty = lanes.vector("i1")
        cur = fn.op(f"load {ty}, ptr {rec['site']}")
        first = fn.op(f"icmp eq {ty} {cur}, {lanes.zero}")
        if self.mask is not None:
            first = fn.op(f"and {cty} {first}, {self.mask}")
        new_site = const(Type(i32, lanes.n), site + 1)
        fn.emit(f"store {ty} {fn.op(f'select {cty} {first}, {ty} {new_site}, {ty} {cur}')}, ptr {rec['site']}")
        words = []
        for j in self._oob_recorded(op):
            a, v = op.args[j], self._get(op.args[j])
            if _words(a) == 1:
                words.append(v)
                continue
            wide = lanes.vector("i64")
            words.append(fn.op(f"trunc {wide} {v} to {ty}"))
            high = fn.op(f"lshr {wide} {v}, {const(Type(i64, lanes.n), 32)}")
            words.append(fn.op(f"trunc {wide} {high} to {ty}"))
        for k, new in enumerate(words):
            old = fn.op(f"load {ty}, ptr {rec['vals'][k]}")
            fn.emit(f"store {ty} {fn.op(f'select {cty} {first}, {ty} {new}, {ty} {old}')}, ptr {rec['vals'][k]}")

    def _oob_unit_end(self, u: str) -> None:
        """Write this unit's (or gang's, from unit u) record to the arrays; any |= site."""
        rec = self.oob
        if not rec:
            return
        fn, ty, n = self.fn, rec["ty"], rec["lanes"].n
        s = fn.op(f"load {ty}, ptr {rec['site']}")
        if n == 1:
            # only a unit that went out of bounds writes its record (the site words are kept all
            # zero otherwise: the workspace starts zeroed and a scan clears them), so the
            # vectorized unit loop does masked stores that almost never touch memory
            put, skip = fn.label("oob_put"), fn.label("oob_kept")
            fn.cbr(fn.op(f"icmp ne i32 {s}, 0"), put, skip)
            fn.block(put)
        fn.emit(f"store {ty} {s}, ptr {self._rec_ptr(0, u)}, align 4")
        for k, p in enumerate(rec["vals"]):
            fn.emit(f"store {ty} {fn.op(f'load {ty}, ptr {p}')}, ptr {self._rec_ptr(1 + k, u)}, align 4")
        if n == 1:
            fn.br(skip)
            fn.block(skip)
        else:   # a gang wrote every lane's record: any lane's site counts
            s = self._call(f"llvm.vector.reduce.or.v{n}i32", "i32", [(ty, s)])
        cur = fn.op(f"load i32, ptr {rec['any']}")
        fn.emit(f"store i32 {fn.op(f'or i32 {cur}, {s}')}, ptr {rec['any']}")

    def _oob_region_end(self) -> None:
        """After the unit loop: if any unit went out of bounds, report the first one's first access."""
        rec = self.oob
        self.oob = None
        if not rec or not rec["sites"]:
            return
        fn = self.fn
        scan, done, clear_done = fn.label("oob_scan"), fn.label("oob_clear"), fn.label("oob_done")
        anyv = fn.op(f"load i32, ptr {rec['any']}")
        fn.cbr(fn.op(f"icmp ne i32 {anyv}, 0"), scan, clear_done)
        fn.block(scan)
        uvar, u, (head, _, nxt) = fn.loop_begin(("oob_head", "oob_test", "oob_next"), self.U, done=done)
        s = fn.op(f"load i32, ptr {self._rec_ptr(0, u)}, align 4")
        for site, op in rec["sites"]:
            hit, miss = fn.label("oob_hit"), fn.label("oob_miss")
            fn.cbr(fn.op(f"icmp eq i32 {s}, {site + 1}"), hit, miss)
            fn.block(hit)
            vals, word = {}, 1
            for j in self._oob_recorded(op):
                low = fn.op(f"load i32, ptr {self._rec_ptr(word, u)}, align 4")
                if _words(op.args[j]) == 1:
                    vals[j] = fn.op(f"sext i32 {low} to i64")
                else:
                    high = fn.op(f"load i32, ptr {self._rec_ptr(word + 1, u)}, align 4")
                    high = fn.op(f"shl i64 {fn.op(f'zext i32 {high} to i64')}, 32")
                    vals[j] = fn.op(f"or i64 {high}, {fn.op(f'zext i32 {low} to i64')}")
                word += _words(op.args[j])
            args = [vals[j] if j in vals else self._to_i64(self._get_cube(a), a) for j, a in enumerate(op.args)]
            self._oob_write(site, u, args)
            fn.br(done)
            fn.block(miss)
        fn.block(nxt)
        fn.loop_end(uvar, u, head, done)
        # back to all-zero site words (unit loops write a record only for a unit that failed)
        fn.emit(f"call void @llvm.memset.p0.i64(ptr align 4 %rec, i8 0, i64 {4 * self.Upad}, i1 false)")
        self.decls["memset"] = "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)"
        fn.br(clear_done)
        fn.block(clear_done)

    def _to_i64(self, v: str, a) -> str:
        return v if a.type.dtype.bits == 64 else self.fn.op(f"sext i32 {v} to i64")

    def _oob_write(self, site: int, u: str, args: list[str]) -> None:
        """The first report of the launch wins the error word and records the details (``args``
        are the report's indices and extents as i64)."""
        fn = self.fn
        nd = len(args) // 2
        pair = fn.op("cmpxchg ptr %err, i64 0, i64 1 monotonic monotonic")
        won = fn.op(f"extractvalue {{ i64, i1 }} {pair}, 1")
        put_l, cont = fn.label("oob_rec"), fn.label("oob_cont")
        fn.cbr(won, put_l, cont)
        fn.block(put_l)

        def put(word: int, val64: str) -> None:
            p = fn.op(f"getelementptr i64, ptr %err, i64 {word}")
            fn.emit(f"store i64 {val64}, ptr {p}, align 8")
        put(1, str(site))
        put(2, fn.op(f"zext i32 {u} to i64"))
        put(3, self.cube_lin)
        for j, v in enumerate(args):
            put(4 + j if j < nd else 4 + MAX_OOB_DIMS + (j - nd), v)
        fn.br(cont)
        fn.block(cont)


def _words(value) -> int:
    return 2 if value.type.dtype.bits == 64 else 1
