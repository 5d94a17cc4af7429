"""Running one random program: its arguments, a launch on a device, and the comparison of two runs.

Every device is compared with the interpreter at the device's own plane size. Integers, bools and
IEEE-exact float results must agree bit for bit (any NaN equals any NaN; -0.0 is not +0.0); the
slots the generator marked approximate (transcendental functions) agree within a tolerance.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import traceback
from dataclasses import dataclass, field

import numpy as np

import cubepy as cb

from .program import Program

_MODULES = tempfile.mkdtemp(prefix="cubepy-fuzz-")
_loaded = 0
TOLERANCE = {"float16": (2e-3, 2e-3), "float32": (2e-5, 1e-6), "float64": (1e-12, 1e-13)}


def load(program: Program, source: str | None = None):
    """The program's kernel: its source written to a module file (cubepy reads kernels' source)."""
    global _loaded
    _loaded += 1
    path = os.path.join(_MODULES, f"fuzz_{program.seed}_{_loaded}.py")
    with open(path, "w") as f:
        f.write(source or program.source())
    spec = importlib.util.spec_from_file_location(f"fuzz_{program.seed}_{_loaded}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kern


def _values(rng: np.random.Generator, dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(n) < 0.5
    if dtype.kind == "f":
        v = rng.standard_normal(n) * rng.choice([1.0, 10.0, 1000.0], n)
        special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 65504.0, 1e-8])
        pick = rng.random(n) < 0.1
        v[pick] = rng.choice(special, pick.sum())
        with np.errstate(over="ignore"):
            return v.astype(dtype)
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
    small = rng.random(n) < 0.5
    v[small] = rng.integers(max(info.min, -20), min(info.max, 20), small.sum(), endpoint=True).astype(dtype)
    return v


def poison(dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "f":
        return np.full(n, 12345.0, dtype)
    if dtype.kind == "b":
        return np.ones(n, bool)
    return np.full(n, 0x5A, dtype)


def arguments(program: Program) -> list:
    """Fresh arguments, the same for every device (drawn from the program's seed)."""
    rng = np.random.default_rng([program.seed, 17])
    args = []
    for p in program.params:
        dtype = np.dtype(_NUMPY.get(p.dtype, "int32"))
        if p.kind == "array":
            args.append(_values(rng, dtype, p.length))
        elif p.kind == "lines":
            args.append(cb.lines(_values(rng, dtype, p.length * p.width), p.width))
        elif p.kind == "out":
            args.append(poison(dtype, p.length))
        elif p.kind == "outlines":
            args.append(cb.lines(poison(dtype, p.length * p.width), p.width))
        elif p.kind == "acc":
            args.append(_values(rng, dtype, p.length) if dtype.kind != "f" else
                        np.round(rng.standard_normal(p.length) * 4).astype(dtype))
        elif p.kind == "scalar":
            if p.name == "nu":
                args.append(program.active)
            elif dtype.kind == "f":
                args.append(float(_values(rng, dtype, 1)[0]))
            elif dtype.kind == "b":
                args.append(bool(rng.random() < 0.5))
            else:
                args.append(int(_values(rng, dtype, 1)[0]))
        else:
            args.append(program.comptime)
    return args


_NUMPY = {"bool_": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
          "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16", "f32": "float32", "f64": "float64"}


def outputs(program: Program, args: list) -> dict[str, np.ndarray]:
    out = {}
    for p, a in zip(program.params, args):
        if p.kind in ("out", "outlines", "acc"):
            arr = a.array if hasattr(a, "array") else a
            out[p.name] = arr.copy()
    return out


@dataclass
class Run:
    """What one device did with a program: outputs, or the error it raised."""

    outputs: dict = field(default_factory=dict)
    error: str | None = None
    error_type: str | None = None
    skipped: str | None = None


# errors that say a device cannot run a kernel, not that it got it wrong
_UNSUPPORTED = ("has no fp16", "has no fp64", "not supported by the interpreter")


def execute(kernel, program: Program, device, races: bool = False) -> Run:
    args = arguments(program)
    try:
        kernel.launch(program.cube_count, program.cube_dim, *args, device=device, **({"races": True} if races else {}))
        device.synchronize()
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
        if any(s in str(e) for s in _UNSUPPORTED):
            return Run(skipped=text.splitlines()[0])
        if not isinstance(e, cb.CubeError):
            text += "\n" + traceback.format_exc()
        return Run(error=text, error_type=type(e).__name__)
    return Run(outputs(program, args))


def _other_poison(shape, dtype):
    """A second poison for the interpreter's fresh memory: a program whose results change with it
    reads memory it never wrote (the shrinker must not keep such a program)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, -7777.0, dtype)
    if dtype.kind == "b":
        return np.zeros(shape, dtype)
    return np.full(shape, 0x33, dtype)


def deterministic(kernel, program: Program, device) -> Run | None:
    """The interpreter's run (with race detection) if it does not depend on unwritten memory."""
    from cubepy.backends.interp import executor, memory

    first = execute(kernel, program, device, races=True)
    if first.error or first.skipped:
        return first
    saved = executor.poison, memory.poison
    executor.poison = memory.poison = _other_poison
    try:
        second = execute(kernel, program, device)
    finally:
        executor.poison, memory.poison = saved
    if second.error or compare(program, first, second) is not None:
        return None
    return first


def compare(program: Program, ref: Run, got: Run) -> str | None:
    """None when ``got`` agrees with the reference ``ref``, else what differs (first few values)."""
    for name, want in ref.outputs.items():
        have = got.outputs.get(name)
        if have is None or have.shape != want.shape:
            return f"{name}: missing or of shape {None if have is None else have.shape}, want {want.shape}"
        if name.startswith("out_") and not name.startswith("out_lines"):
            w, h = want.reshape(-1, program.slots), have.reshape(-1, program.slots)
            approx = np.zeros(program.slots, bool)
            for (out, j) in program.approx:
                if out == name:
                    approx[j] = True
            bad = ~_equal(w, h, np.broadcast_to(approx, w.shape))
        else:
            bad = ~_equal(want, have, np.zeros(want.shape, bool))
        if bad.any():
            where = np.argwhere(bad)[:4]
            shown = ", ".join(f"[{', '.join(map(str, ix))}] want {_show(want, ix, program, name)} "
                              f"got {_show(have, ix, program, name)}" for ix in where)
            return f"{name}: {int(bad.sum())} differ: {shown}"
    return None


def _show(a, ix, program, name):
    if name.startswith("out_") and not name.startswith("out_lines"):
        return repr(a.reshape(-1, program.slots)[tuple(ix)])
    return repr(a[tuple(ix)])


def _equal(want: np.ndarray, have: np.ndarray, approx: np.ndarray) -> np.ndarray:
    if want.dtype.kind != "f":
        return want == have
    with np.errstate(invalid="ignore", over="ignore"):
        both_nan = np.isnan(want) & np.isnan(have)
        same = (want == have) & (np.signbit(want) == np.signbit(have))
        rtol, atol = TOLERANCE[want.dtype.name]
        w64, h64 = want.astype(np.float64), have.astype(np.float64)
        near = np.abs(w64 - h64) <= atol + rtol * np.maximum(np.abs(w64), np.abs(h64))
    return both_nan | same | (approx & near)
