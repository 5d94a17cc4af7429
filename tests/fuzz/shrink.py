"""Minimizing a failing program: greedy edits of the tree, kept while the same failure remains.

An edit is kept when the interpreter still runs the smaller program (checked with race
detection, so that dropping a ``sync_cube()`` cannot turn a failure into a data race) and the
target still fails the same way (``mismatch`` or ``error``, and for errors the same exception
type; a ``crash``, a device compiler that kills the process, is tried in a child process that
must die by a signal again). Edits, from coarse to fine: drop a statement, replace an ``if``/loop by its body, drop an
``else``, replace an expression by one of its operands of the same type or by a literal, drop
unused helpers and shared arrays.
"""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import replace

from .program import E, Program, S

CRASH_TIMEOUT_S = 300           # one child's run of a candidate that may crash the device's compiler


def _blocks(program: Program):
    """Every statement list of the program (mutable, in place), outermost first."""
    out = [program.body, program.prologue]

    def walk(block):
        for s in block:
            for b in (s.body, s.orelse):
                if b:
                    out.append(b)
                    walk(b)
    walk(program.body)
    for f in program.funcs:
        out.append(f.body)
    return out


def candidates(program: Program):
    """Smaller variants of ``program``, coarse edits first."""
    for bi in range(len(_blocks(program))):
        n = len(_blocks(program)[bi])
        for si in reversed(range(n)):
            p = program.copy()
            block = _blocks(p)[bi]
            if si >= len(block):
                continue
            s = block[si]
            # drop the statement
            q = p.copy()
            del _blocks(q)[bi][si]
            yield q
            if s.kind in ("if", "for", "while"):
                q = p.copy()
                target = _blocks(q)[bi]
                inner = target[si].body + target[si].orelse
                if s.kind in ("for", "while"):
                    inner = [x for x in target[si].body if x.kind not in ("break", "continue")]
                target[si:si + 1] = [x.copy() for x in inner]
                yield q
            if s.kind == "if" and s.orelse:
                q = p.copy()
                _blocks(q)[bi][si].orelse = []
                yield q
    # simplify expressions
    for bi in range(len(_blocks(program))):
        for si in range(len(_blocks(program)[bi])):
            s = _blocks(program)[bi][si]
            for field in ("value", "cond", "index", "bound"):
                e = getattr(s, field)
                if e is None:
                    continue
                for smaller in _smaller(e):
                    q = program.copy()
                    setattr(_blocks(q)[bi][si], field, smaller)
                    yield q
    if program.funcs:
        q = program.copy()
        q.funcs = q.funcs[:-1]
        yield q


def _smaller(e: E):
    """Expressions of e's type that are smaller: its operands, a literal, then smaller operands."""
    for a in e.args:
        if a.dtype == e.dtype and a.width == e.width:
            yield a
    if e.args and e.width == 1 and e.dtype != "bool_" and e.op != "lit":
        yield E(f"{e.dtype}(1)", e.dtype, uniform=True, op="lit", value=1)
    for i, a in enumerate(e.args):
        for sm in _smaller(a):
            yield replace(e, args=e.args[:i] + (sm,) + e.args[i + 1:])


def shrink(program: Program, still_fails, budget: int = 400) -> Program:
    """The smallest variant found for which ``still_fails(candidate)`` holds (at most ``budget`` tries)."""
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for cand in candidates(program):
            tries += 1
            if tries > budget:
                break
            if cand.size() > program.size() or (cand.size() == program.size() and _weight(cand) >= _weight(program)):
                continue
            if still_fails(cand):
                program = cand
                improved = True
                break
    return program


def _weight(program: Program) -> int:
    total = 0

    def walk(block):
        nonlocal total
        for s in block:
            for e in (s.value, s.cond, s.index, s.bound):
                if e is not None:
                    total += e.size()
            walk(s.body)
            walk(s.orelse)
    walk(program.body)
    for f in program.funcs:
        walk(f.body)
        total += f.result.size()
    return total + 10 * program.size()


def same_failure(program_target: str, reference_status: tuple):
    """A predicate for `shrink`: the candidate fails on the target as the original did."""
    from .campaign import device
    from .run import compare, deterministic, execute, load

    status, detail = reference_status
    error_type = detail.split(":", 1)[0] if status == "error" else None

    def still_fails(candidate: Program) -> bool:
        try:
            kernel = load(candidate)
        except Exception:
            return False
        dev = device(program_target)           # probing a device is safe; compiling for it may crash
        ref = deterministic(kernel, candidate, device(f"interp-p{dev.properties.plane_dim}"))
        if ref is None or ref.error or ref.skipped:
            return False
        if status == "crash":
            return crashes(candidate, program_target)
        got = execute(kernel, candidate, dev)
        if status == "mismatch":
            return not got.error and not got.skipped and compare(candidate, ref, got) is not None
        return bool(got.error) and got.error.split(":", 1)[0] == error_type
    return still_fails


def crashes(program: Program, target: str) -> bool:
    """Whether running ``program`` on ``target`` kills a fresh process by a signal (a segfault or
    an abort in the device's compiler), within `CRASH_TIMEOUT_S`."""
    child = mp.get_context("spawn").Process(target=_run_on, args=(program, target), daemon=True)
    child.start()
    child.join(CRASH_TIMEOUT_S)
    if child.is_alive():
        child.kill()
        child.join()
        return False
    return child.exitcode is not None and child.exitcode < 0


def _run_on(program: Program, target: str) -> None:
    import warnings

    from .campaign import device
    from .run import execute, load

    warnings.simplefilter("ignore")
    execute(load(program), program, device(target))


__all__ = ["candidates", "crashes", "same_failure", "shrink", "S"]
