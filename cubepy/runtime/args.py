"""Launch arguments: checked against the kernel's signature, specialized, and bound.

Every error here names the kernel, the parameter, the value and the fix.
"""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, ArgumentValueError
from ..frontend.spec import ParamSpec
from ..ir.types import ARRAY_MAX, DType, dtype_from_numpy
from ..lang.region import Partitioning
from ..lang.types import ArraySpec, ComptimeSpec, LinesArg, RegionSpec
from .device_arrays import QUICK_FACTS, DeviceArray, NotContiguous, describer, host_view
from .inline_arrays import by_value_kind, inline_capacity, place_inline, quick_bucket


@dataclass(frozen=True)
class Signature:
    """A kernel's parameters and their annotations, read once."""

    names: tuple[str, ...]
    annotations: tuple[Any, ...]
    defaults: tuple[Any, ...]
    comptime: tuple[bool, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "comptime", tuple(isinstance(a, ComptimeSpec) for a in self.annotations))


_EMPTY = inspect.Parameter.empty


def read_signature(fn, kernel_name: str) -> Signature:
    try:
        sig = inspect.signature(fn, eval_str=True)
    except NameError as e:
        raise ArgumentTypeError(f"cannot read the parameter annotations: {e}", kernel_name) from None
    names, annotations, defaults = [], [], []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ArgumentTypeError(f"kernels take named parameters, not *{p.name}", kernel_name)
        ann = p.annotation
        if ann is _EMPTY:
            raise ArgumentTypeError(f"parameter '{p.name}' needs a type annotation: Array[f32], "
                                    f"Mut[Array[f32]], f32, Comptime[int] or Region[f32, Linear1D]", kernel_name)
        from ..lang.types import Array

        if ann is Array:
            ann = ArraySpec(None)
        if not isinstance(ann, (ArraySpec, ComptimeSpec, RegionSpec, DType)):
            raise ArgumentTypeError(f"parameter '{p.name}' has annotation {ann!r}, which is not a cubepy type",
                                    kernel_name)
        names.append(p.name)
        annotations.append(ann)
        defaults.append(p.default)
    return Signature(tuple(names), tuple(annotations), tuple(defaults))


@dataclass
class BoundArgs:
    specs: tuple[ParamSpec, ...]
    values: list          # host values, aligned with specs (None for comptime)


def bind_arguments(sig: Signature, args: tuple, kwargs: dict, kernel_name: str, inline_bytes: int = 0) -> BoundArgs:
    """Check each argument against its parameter and build the specialization's ParamSpecs
    (small read-only host arrays by value where the device allows ``inline_bytes``)."""
    values = match_arguments(sig, args, kwargs, kernel_name)
    specs, host = [], []
    for name, ann, value in zip(sig.names, sig.annotations, values):
        if isinstance(ann, ComptimeSpec):
            if isinstance(value, np.generic):           # a NumPy int is the Python int it holds
                value = value.item()
            _check_comptime(kernel_name, name, ann, value)
            specs.append(ParamSpec(name, "comptime", value=value))
            host.append(None)
        elif isinstance(ann, DType):
            in_memory = _scalar_in_device_memory(kernel_name, name, ann, value)
            if in_memory is not None:
                specs.append(ParamSpec(name, "scalar_ref", ann))
                host.append(in_memory)
            else:
                specs.append(ParamSpec(name, "scalar", ann))
                host.append(_scalar(kernel_name, name, ann, value))
        else:
            mutable = isinstance(ann, RegionSpec) or ann.mutable
            array, width = _array(kernel_name, name, ann, value, mutable)
            ndim = array.ndim - (1 if width > 1 else 0)
            if isinstance(ann, RegionSpec):
                strategy = ann.strategy
                if not isinstance(strategy, Partitioning):
                    raise ArgumentTypeError(f"parameter '{name}': {strategy!r} is not a partitioning strategy",
                                            kernel_name)
                specs.append(ParamSpec(name, "region", dtype_from_numpy(array.dtype), width, ndim, True,
                                       strategy=strategy))
            else:
                specs.append(ParamSpec(name, "array", dtype_from_numpy(array.dtype), width, ndim, mutable))
            host.append(array)
    _check_aliasing(kernel_name, sig.names, specs, host)
    return BoundArgs(place_inline(tuple(specs), host, inline_bytes), host)


# Parameter kinds bound as arrays (a scalar_ref is a one-element array in device memory).
ARRAY_KINDS = ("array", "region", "scalar_ref")


def _scalar_in_device_memory(kernel_name: str, name: str, dtype: DType, value) -> DeviceArray | None:
    """A scalar given as a device array (a 0-d CUDA tensor, XLA's 0-d buffer): checked and
    returned as a one-element array the kernel reads, so the host never waits for its value."""
    if value.__class__ in (int, float, bool) or isinstance(value, (np.generic, np.ndarray)):
        return None
    describe = describer(value)
    if describe is None:
        return None
    try:
        array = describe(value)
    except ValueError:
        return None
    if array is None:
        return None
    if array.size != 1 or np.dtype(array.dtype) != np.dtype(dtype.numpy_name):
        raise ArgumentTypeError(f"parameter '{name}' expects a {dtype} scalar; a scalar in device memory must be "
                                f"one element of {dtype}, got {array.size} of {array.dtype}", kernel_name)
    return array.reshape(1)

def quick_key(comptime: tuple[bool, ...], args: tuple) -> tuple | None:
    """A cheap key of what the arguments' types specialize, for the launch-plan cache; None when
    an argument is of a kind only the full check understands (then no plan is used)."""
    if len(args) != len(comptime):
        return None
    key = []
    for is_comptime, a in zip(comptime, args):
        cls = a.__class__
        if is_comptime:
            if cls not in (int, float, bool, str) and not _hashable(a):
                return None                    # the full check names the parameter and the problem
            key.append((cls, a))
        elif cls is np.ndarray:
            flags = a.flags
            key.append((a.dtype, a.ndim, flags.writeable, flags.c_contiguous, quick_bucket(a)))
        elif cls is LinesArg:
            arr = a.array
            inner = arr.__class__
            if inner is np.ndarray:
                key.append((a.width, arr.dtype, arr.ndim, arr.flags.writeable, arr.flags.c_contiguous))
            else:
                facts = QUICK_FACTS[inner](arr) if inner in QUICK_FACTS else None
                if facts is None:
                    return None
                key.append((a.width, inner, facts))
        elif cls in (float, int, bool) or isinstance(a, np.generic):
            key.append(cls)
        else:
            facts = QUICK_FACTS[cls](a) if cls in QUICK_FACTS else None
            if facts is None:
                return None
            key.append((cls, facts))
    return tuple(key)


def make_binder(sig: Signature, specs: tuple[ParamSpec, ...], kernel_name: str, example: list,
                check_device: Callable[[str, DeviceArray], None] | None = None, inline_bytes: int = 0):
    """A function binding arguments of the same kinds as ``example``, which passed
    `bind_arguments`: it returns None when an argument's kind differs (class, dtype, rank, flags,
    Line width, Comptime value, the capacity of an array passed by value: what `quick_key` looks
    at), and otherwise re-checks only what depends on values (sizes, ranges, aliasing) and
    returns the host values."""
    steps, guards = [], []
    for spec, value in zip(specs, example):
        guards.append(_kind_guard(spec, value))
        if spec.kind == "comptime":
            steps.append(None)
        elif spec.kind == "scalar":
            if spec.dtype.is_float:
                steps.append(_float_step(kernel_name, spec.name, spec.dtype))
            else:
                steps.append(lambda v, d=spec.dtype, n=spec.name: _scalar(kernel_name, n, d, v))
        elif spec.kind == "scalar_ref":
            steps.append(lambda v, n=spec.name, d=spec.dtype: _scalar_in_device_memory(kernel_name, n, d, v))
        else:
            steps.append(_array_step(kernel_name, spec.name, value, spec.mutable, check_device))
    steps, guards, count = tuple(steps), tuple(guards), len(specs)
    arrays = [i for i, s in enumerate(specs) if s.kind in ARRAY_KINDS]
    pairs = tuple((i, j) for i in arrays if specs[i].mutable for j in arrays if j != i)
    # the arguments whose capacity by value the specialization holds (0 included: too large, or
    # given in device memory), checked on the host array the argument binds to
    capacities = tuple((i, specs[i].inline) for i in arrays if inline_bytes and by_value_kind(specs[i]))

    def bind(args: tuple) -> list | None:
        if len(args) != count:
            return None
        for guard, value in zip(guards, args):
            if not guard(value):
                return None
        host = [None if step is None else step(value) for step, value in zip(steps, args)]
        for i, capacity in capacities:
            a = host[i]
            if a.__class__ is np.ndarray and inline_capacity(a, inline_bytes) != capacity:
                return None
        for i, j in pairs:
            a, b = host[i], host[j]
            if a.nbytes and b.nbytes and _overlap(a, b):
                _check_aliasing(kernel_name, sig.names, specs, host)
        return host
    return bind


def _kind_guard(spec: ParamSpec, example):
    """A predicate: does a value have the same kind as ``example`` (as far as the checks of
    `bind_arguments` and the specialization depend on it)?"""
    cls = example.__class__
    if spec.kind == "comptime":
        return lambda v: v.__class__ is cls and v == example
    if spec.kind == "scalar":
        return lambda v: v.__class__ is cls
    width = example.width if cls is LinesArg else 0
    inner = example.array if width else example
    inner_cls = inner.__class__
    if inner_cls is np.ndarray:
        dtype, ndim, mutable = inner.dtype, inner.ndim, spec.mutable

        def array_guard(a):
            if a.__class__ is not np.ndarray or a.dtype is not dtype or a.ndim != ndim:
                return False
            flags = a.flags
            return flags.c_contiguous and (flags.writeable or not mutable)
    else:
        facts, expected = QUICK_FACTS.get(inner_cls), None
        if facts is None:
            return lambda v: False          # no cheap test: always take the full check
        expected = facts(inner)

        def array_guard(a):
            return a.__class__ is inner_cls and facts(a) == expected
    if not width:
        return array_guard
    return lambda v: v.__class__ is LinesArg and v.width == width and array_guard(v.array)


def _array_step(kernel_name: str, name: str, example, mutable: bool,
                check_device: Callable[[str, DeviceArray], None] | None = None):
    """Bind one array argument of the example's kind: unwrap Lines, describe device arrays (and
    `check_device` them: the launch's GPU), check the length limit and the Lines width against
    this launch's shape."""
    width = example.width if example.__class__ is LinesArg else 0
    inner = example.array if width else example
    describe = None if inner.__class__ is np.ndarray else describer(inner)

    def step(value):
        array = value.array if width else value
        if describe is not None:    # a device array, or None for an instance in host memory
            try:
                described = describe(array)
                array = host_view(array, mutable) if described is None else described
            except ValueError as e:
                raise ArgumentValueError(f"parameter '{name}' {e}", kernel_name) from None
            if check_device is not None and described is not None:
                check_device(name, described)
        shape = array.shape
        if array.size > ARRAY_MAX or (not array.size and any(s > ARRAY_MAX for s in shape)):
            raise ArgumentValueError(f"parameter '{name}' has {array.size} elements; kernels index with i32, so "
                                     f"at most {ARRAY_MAX} (split the array, e.g. with cubepy.dask)", kernel_name)
        if width > 1:
            last = shape[-1]
            if last % width:
                raise ArgumentValueError(f"parameter '{name}': cb.lines width {width} does not divide the last "
                                         f"dimension {last}", kernel_name)
            array = array.reshape(*shape[:-1], last // width, width)
        return array
    return step


def match_arguments(sig: Signature, args: tuple, kwargs: dict, kernel_name: str) -> list:
    """The arguments in parameter order: positional, then by name, then defaults."""
    if len(args) > len(sig.names):
        raise ArgumentTypeError(f"takes {len(sig.names)} arguments ({', '.join(sig.names)}) but "
                                f"{len(args)} were given", kernel_name)
    values = list(args)
    unknown = [k for k in kwargs if k not in sig.names]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, sig.names[len(args):], n=1)
            hints.append(f"'{k}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        raise ArgumentTypeError(f"unexpected argument{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; the "
                                f"parameters are {', '.join(sig.names)}", kernel_name)
    for name, default in zip(sig.names[len(args):], sig.defaults[len(args):]):
        if name in kwargs:
            values.append(kwargs.pop(name))
        elif default is not _EMPTY:
            values.append(default)
        else:
            raise ArgumentTypeError(f"missing argument for parameter '{name}'", kernel_name)
    if kwargs:
        given = ", ".join(f"'{k}'" for k in kwargs)
        raise ArgumentTypeError(f"argument {given} given by position and by name", kernel_name)
    return values


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _check_comptime(kernel_name, name, ann, value):
    if not _hashable(value):
        hint = (" (a NumPy array: pass a Python number, or an Array parameter)" if isinstance(value, np.ndarray)
                else " (pass a tuple)" if isinstance(value, list) else "")
        raise ArgumentTypeError(f"Comptime parameter '{name}' needs a hashable value such as an int, got "
                                f"{type(value).__name__}{hint}", kernel_name)
    if ann.pytype in (int, float, bool) and not isinstance(value, ann.pytype):
        if not (ann.pytype is float and isinstance(value, int)):
            raise ArgumentTypeError(f"Comptime[{ann.pytype.__name__}] parameter '{name}' got "
                                    f"{type(value).__name__} {value!r}", kernel_name)


# the smallest magnitude that rounds to infinity in each float type (halfway past the largest finite)
_OVERFLOW = {"f16": 65520.0, "f32": 2.0**128 - 2.0**103}


def _float_step(kernel_name: str, name: str, dtype: DType):
    """The warm path's conversion of a float scalar: a Python float in range converts directly;
    anything else takes `_scalar`'s checks."""
    np_type = np.dtype(dtype.numpy_name).type
    limit = _OVERFLOW.get(dtype.name, float("inf"))

    def step(v):
        if v.__class__ is float and -limit < v < limit:
            return np_type(v)
        return _scalar(kernel_name, name, dtype, v)
    return step


def _scalar(kernel_name, name, dtype: DType, value):
    if isinstance(value, np.generic) or isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise ArgumentTypeError(f"parameter '{name}' expects a {dtype} scalar, got {type(value).__name__}",
                                kernel_name)
    if isinstance(value, float) and not dtype.is_float:
        raise ArgumentTypeError(f"parameter '{name}' expects {dtype}, got the float {value!r}; "
                                f"pass an int", kernel_name)
    np_type = np.dtype(dtype.numpy_name)
    if dtype.is_int:
        info = np.iinfo(np_type)
        if not info.min <= value <= info.max:
            raise ArgumentValueError(f"parameter '{name}' is {dtype}, whose range is [{info.min}, {info.max}]; "
                                     f"got {value}", kernel_name)
    if dtype.is_float:
        # a finite value that the type cannot hold would silently become inf (inf and nan pass)
        try:
            as_float = float(value)
        except OverflowError:
            as_float = float("inf") if value > 0 else float("-inf")
        limit = _OVERFLOW.get(dtype.name, float("inf"))
        explicit = isinstance(value, float) and not math.isfinite(value)
        if not explicit and not -limit < as_float < limit:
            shown = repr(value) if isinstance(value, float) or abs(value) < 10**30 else \
                f"an integer of {len(str(abs(value)))} digits"
            raise ArgumentValueError(f"parameter '{name}' is {dtype}, whose largest finite value is "
                                     f"{float(np.finfo(np_type).max):g}; got {shown}, which would become inf; pass "
                                     f"a value in range or declare the parameter f64", kernel_name)
        return np_type.type(as_float)
    return np_type.type(value)


def _array(kernel_name, name, ann, value, mutable):
    checked = _checked_array(kernel_name, name, ann, value.array if value.__class__ is LinesArg else value, mutable)
    example = LinesArg(checked, value.width) if value.__class__ is LinesArg else checked
    return (_array_step(kernel_name, name, example, mutable)(example),
            value.width if value.__class__ is LinesArg else 1)


def _checked_array(kernel_name, name, ann, value, mutable):
    describe = describer(value)
    if describe is not None:
        try:
            array = describe(value)
        except NotContiguous as e:
            raise ArgumentValueError(f"parameter '{name}' is a device array that is not C-contiguous ({e}); "
                                     "pass a contiguous copy", kernel_name) from None
        except ValueError as e:
            raise ArgumentValueError(f"parameter '{name}' {e}", kernel_name) from None
        if array is not None:       # None: this instance of a device array type is in host memory
            return _check_array_facts(kernel_name, name, ann, array, mutable, array.readonly, value)
        try:
            array = host_view(value, mutable)
        except NotContiguous as e:
            raise ArgumentValueError(f"parameter '{name}' is not C-contiguous ({e}); pass a contiguous copy "
                                     f"({name}.contiguous() or np.ascontiguousarray({name}))", kernel_name) from None
        except ValueError as e:
            raise ArgumentValueError(f"parameter '{name}' {e}", kernel_name) from None
        return _check_array_facts(kernel_name, name, ann, array, mutable, not array.flags.writeable, value)
    if isinstance(value, (list, tuple)) or np.isscalar(value) or value is None:
        raise ArgumentTypeError(f"parameter '{name}' expects an array (NumPy, or anything with "
                                f"__array_interface__ / __array__), got {type(value).__name__}", kernel_name)
    try:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    except Exception as e:
        raise ArgumentTypeError(f"parameter '{name}' expects an array; converting {type(value).__name__} "
                                f"failed: {e}", kernel_name) from None
    if not array.flags.c_contiguous:
        raise ArgumentValueError(f"parameter '{name}' is not C-contiguous (strides {array.strides}); "
                                 f"pass np.ascontiguousarray({name})", kernel_name)
    return _check_array_facts(kernel_name, name, ann, array, mutable, not array.flags.writeable, value)


def _check_array_facts(kernel_name, name, ann, array, mutable, readonly, given):
    dtype = dtype_from_numpy(array.dtype)
    if dtype is None:
        raise ArgumentTypeError(f"parameter '{name}': arrays of {array.dtype} are not supported", kernel_name)
    want = ann.dtype
    if want is not None and want != dtype:
        raise ArgumentTypeError(f"parameter '{name}' expects {ann!r} but got an array of {array.dtype}; "
                                f"convert it with {_conversion(given, want)}", kernel_name)
    if array.ndim == 0:
        raise ArgumentTypeError(f"parameter '{name}' expects an array, got a 0-d array", kernel_name)
    if mutable and readonly:
        if type(given).__name__ == "Resident":
            fix = "make the handle with cb.preload_mut(...), which kernels may write"
        else:
            fix = "pass a writable copy (array.copy())"
        raise ArgumentValueError(f"parameter '{name}' is Mut but the array passed is read-only; {fix}", kernel_name)
    return array


_CONVERSIONS = {"torch": ".to(torch.{})", "cupy": ".astype(cupy.{})", "jax": ".astype(jnp.{})",
                "jaxlib": ".astype(jnp.{})"}


def _conversion(value, dtype: DType) -> str:
    """How to convert ``value``'s array type to ``dtype``, in its own library's words."""
    library = value.__class__.__module__.partition(".")[0]
    return _CONVERSIONS.get(library, ".astype(np.{})").format(dtype.numpy_name)


def _overlap(a, b) -> bool:
    a_device, b_device = isinstance(a, DeviceArray), isinstance(b, DeviceArray)
    if a_device and b_device:
        return a.overlaps(b)
    if a_device or b_device:      # host memory and device memory never overlap
        return False
    return np.may_share_memory(a, b)


def _check_aliasing(kernel_name, names, specs, host) -> None:
    # Arguments are C-contiguous, so overlapping byte bounds (what may_share_memory compares,
    # in C and cheaply) is the same as sharing memory.
    arrays = [(n, s, a) for n, s, a in zip(names, specs, host) if a is not None and s.kind in ARRAY_KINDS]
    for i, (name_a, spec_a, a) in enumerate(arrays):
        if not spec_a.mutable or a.nbytes == 0:
            continue
        for j, (name_b, _, b) in enumerate(arrays):
            if i == j or b.nbytes == 0:
                continue
            if _overlap(a, b):
                raise ArgumentValueError(
                    f"Mut argument '{name_a}' overlaps argument '{name_b}' in memory; a written array must not "
                    f"alias any other argument (pass a copy, e.g. {name_b}.copy())", kernel_name)
