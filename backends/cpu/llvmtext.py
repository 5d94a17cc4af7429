"""LLVM IR text helpers: types, constants, a function emitter that tracks basic blocks."""

from __future__ import annotations

import functools
import struct

import numpy as np

from cubepy.ir.types import DType, Type

_FLOAT = {16: "half", 32: "float", 64: "double"}
_MANGLE = {"half": "f16", "float": "f32", "double": "f64", "bfloat": "bf16"}


@functools.cache
def _llvm_major() -> int:
    from . import jit

    return jit.llvm.llvm_version_info[0] if jit.llvm is not None else 0


_SCALAR_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2, "float": 4,
                 "double": 8, "ptr": 8}


@functools.cache
def abi_align(ty: str) -> int:
    """The ABI alignment in bytes that LLVM's x86-64 data layout gives a first-class type: a
    scalar's own size, a vector's size rounded up to a power of two, an array its element's."""
    ty = ty.strip()
    if ty.startswith("[") and ty.endswith("]"):
        return abi_align(ty[1:-1].split(" x ", 1)[1])
    if ty.startswith("<") and ty.endswith(">"):
        count, elem = ty[1:-1].split(" x ", 1)
        bits = 1 if elem.strip() == "i1" else 8 * _SCALAR_BYTES[elem.strip()]
        size = max(1, -(-int(count) * bits // 8))
        return 1 << (size - 1).bit_length()
    return _SCALAR_BYTES.get(ty, 16)


def masked_pointer(ptr_type: str, ptr: str, align: int) -> list[tuple[str, str]]:
    """The pointer operand(s) of ``llvm.masked.{load,store,gather,scatter}``: LLVM 22 takes the
    alignment as the pointer's ``align`` attribute, earlier releases as an ``i32`` after it."""
    if _llvm_major() >= 22:
        return [(f"{ptr_type} align {align}", ptr)]
    return [(ptr_type, ptr), ("i32", str(align))]


def scalar_type(d: DType, mem: bool = False) -> str:
    """The LLVM type of one element: bool is i1 in registers and i8 in memory."""
    if d.is_bool:
        return "i8" if mem else "i1"
    if d.is_float:
        return "bfloat" if d.name == "bf16" else _FLOAT[d.bits]
    return f"i{d.bits}"


def ltype(t: Type, mem: bool = False) -> str:
    s = scalar_type(t.dtype, mem)
    return s if t.width == 1 else f"<{t.width} x {s}>"


def mangle(t: Type, mem: bool = False) -> str:
    """Intrinsic name suffix: f32, v4f32, i32, v8i16."""
    s = scalar_type(t.dtype, mem)
    s = _MANGLE.get(s, s)
    return s if t.width == 1 else f"v{t.width}{s}"


def scalar_const(value, d: DType) -> str:
    if d.is_bool:
        return "true" if bool(value) else "false"
    if d.is_int:
        v = int(value) & ((1 << d.bits) - 1)
        if v >= 1 << (d.bits - 1):
            v -= 1 << d.bits
        return str(v)
    v = float(value)
    if d.bits == 16:
        bits = int(np.array(v, np.float16).view(np.uint16))
        return f"0xH{bits:04X}"
    if d.bits == 32:
        v = float(np.float32(v))
    return f"0x{struct.unpack('<Q', struct.pack('<d', v))[0]:016X}"


def const(t: Type, value) -> str:
    """An LLVM constant of type ``t`` (a Line from one value, repeated, or from a sequence)."""
    if t.width == 1:
        if isinstance(value, (list, tuple, np.ndarray)):
            value = list(np.ravel(value))[0]
        return scalar_const(value, t.dtype)
    vals = list(np.ravel(value)) if isinstance(value, (list, tuple, np.ndarray)) else [value] * t.width
    if len(vals) == 1:
        vals = vals * t.width
    s = scalar_type(t.dtype)
    return "<" + ", ".join(f"{s} {scalar_const(v, t.dtype)}" for v in vals) + ">"


class Fn:
    """One LLVM function body under construction.

    ``block(label)`` starts a basic block (falling through from the previous one when it has no
    terminator yet); code emitted after a terminator lands in a fresh unreachable block.
    """

    def __init__(self):
        self.lines: list[str] = []
        self.allocas: list[str] = []
        self.n = 0
        self.terminated = False

    def tmp(self) -> str:
        self.n += 1
        return f"%t{self.n}"

    def label(self, hint: str) -> str:
        self.n += 1
        return f"{hint}{self.n}"

    def emit(self, text: str) -> None:
        if self.terminated:
            self.lines.append(f"{self.label('dead')}:")
            self.terminated = False
        self.lines.append("  " + text)

    def op(self, text: str) -> str:
        t = self.tmp()
        self.emit(f"{t} = {text}")
        return t

    def br(self, label: str, loop_md: str | None = None) -> None:
        """Jump to ``label``; ``loop_md`` (a metadata node, ``!N``) marks a loop's back edge."""
        self.emit(f"br label %{label}" + (f", !llvm.loop {loop_md}" if loop_md else ""))
        self.terminated = True

    def cbr(self, cond: str, a: str, b: str, prof: str | None = None) -> None:
        """Branch on ``cond``; ``prof`` (a metadata node, ``!N``) weighs the two ways."""
        self.emit(f"br i1 {cond}, label %{a}, label %{b}" + (f", !prof {prof}" if prof else ""))
        self.terminated = True

    def block(self, label: str) -> None:
        if not self.terminated:
            self.emit(f"br label %{label}")
        self.lines.append(f"{label}:")
        self.terminated = False

    def alloca(self, ty: str, align: int = 16) -> str:
        """A stack slot of at least ``align`` bytes' alignment and never less than ``ty``'s ABI
        alignment: a load or store written without ``align`` assumes the ABI alignment (256
        bytes for ``<64 x i32>``), and LLVM -O0 keeps such slots in memory and moves them with
        aligned instructions (a slot of 16 faulted)."""
        t = self.tmp()
        self.allocas.append(f"  {t} = alloca {ty}, align {max(align, abi_align(ty))}")
        return t

    def loop_begin(self, labels: tuple[str, ...], stop: str, ty: str = "i32", start: str = "0",
                   done: str | None = None) -> tuple[str, str, list[str]]:
        """Open a counted loop ``for (i = start; i < stop; i += step)`` (signed) with a counter in
        memory: makes the labels named by ``labels`` (the head, the body, then any the caller
        branches to; the last one is the exit unless ``done`` is given), tests, and enters the
        body. Returns (counter, i, labels); `loop_end` closes the loop."""
        counter = self.alloca(ty, 8 if ty == "i64" else 4)
        self.emit(f"store {ty} {start}, ptr {counter}")
        made = [self.label(x) for x in labels]
        self.block(made[0])
        i = self.op(f"load {ty}, ptr {counter}")
        self.cbr(self.op(f"icmp slt {ty} {i}, {stop}"), made[1], done or made[-1])
        self.block(made[1])
        return counter, i, made

    def loop_end(self, counter: str, i: str, head: str, done: str, step=1, ty: str = "i32",
                 loop_md: str | None = None) -> None:
        """Close a loop of `loop_begin`: ``i += step``, back to ``head``, go on at ``done``;
        ``loop_md`` (a metadata node, ``!N``) is the back edge's ``!llvm.loop``."""
        self.emit(f"store {ty} {self.op(f'add {ty} {i}, {step}')}, ptr {counter}")
        self.br(head, loop_md)
        self.block(done)

    def body(self) -> str:
        if not self.terminated:
            self.emit("ret void")
        return "\n".join(["entry:"] + self.allocas + self.lines)
