"""The warm launch path: what a launch costs once its compiled kernel exists.

A warm launch repeats a launcher's previous launch with arguments of the same kinds (classes,
dtypes, ranks, Lines widths, Comptime values). Two forms:

- direct: when every array argument is a device array whose type has a raw reader
  (``register_device_array(raw=...)``) and the backend offers a `DirectLauncher`, the warm path is
  one Python function generated for the compiled kernel and launch shape. It checks the kinds,
  re-checks what depends on values (element counts, Lines widths, alignment, aliasing) and hands
  the backend its argument slots, building no intermediate objects.
- generic: the compiled kernel's binder, then the backend's ``launch``.

Either returns False when anything differs, including an argument that would fail a check: the
launch then takes the full path, which raises the error with its full message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir.types import ARRAY_MAX
from ..lang.types import LinesArg
from .device_arrays import OWNERS, RAW_READERS
from .inline_arrays import inline_capacity
from .launch_checks import launch_check

if TYPE_CHECKING:
    from .compiled import CompiledKernel

WarmPath = Callable[[tuple], bool]


def generic_warm_path(compiled: CompiledKernel, count: tuple, dim: tuple) -> WarmPath:
    """Bind through the compiled kernel's binder and launch through the backend's ``launch``."""
    bind, run = compiled.bind, compiled.run

    def warm(args: tuple) -> bool:
        values = bind(args)
        if values is None:
            return False
        run(count, dim, values)
        return True
    return warm


def empty_warm_path(compiled: CompiledKernel) -> WarmPath:
    """A launch of zero cubes: the binder's checks, then nothing."""
    bind = compiled.bind

    def warm(args: tuple) -> bool:
        return bind(args) is not None
    return warm


def direct_warm_path(compiled: CompiledKernel, count: tuple, dim: tuple) -> WarmPath | None:
    """The generated warm path of ``compiled`` at this launch shape, or None when an argument's kind
    or the backend rules it out."""
    backend = compiled.device.backend
    launcher = backend.direct_launcher(compiled.executable, compiled.ir_module, compiled.device.properties, count,
                                       dim, compiled.options)
    if launcher is None:
        return None
    writer = _Writer(backend, compiled.parameters, compiled.classes, compiled.device.index,
                     compiled.device.properties.inline_array_bytes, compiled.order)
    if not writer.arguments():
        return None
    exprs = [writer.launch_ok(compiled.ir_module, count, dim) if slot[0] == "launch_ok" else
             writer.slot(compiled.order[slot[1]], slot) for slot in launcher.slots]
    if None in exprs:
        return None
    writer.line(f"return submit({', '.join(exprs)})")
    return writer.build(launcher.submit)


class _Writer:
    """Writes the source of one direct warm path: ``warm(args) -> bool``."""

    def __init__(self, backend, specs: tuple, classes: tuple, device_index: int | None, inline_bytes: int = 0,
                 param_order: tuple = ()):
        self.platforms = backend.device_array_platforms
        self.param_order = param_order      # kernel parameter -> its argument
        self.specs, self.classes, self.device_index = specs, classes, device_index
        self.inline_bytes = inline_bytes
        self.by_value: set[int] = set()      # arguments given as host arrays the kernel may take by value
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {}

    def line(self, text: str) -> None:
        self.lines.append("    " + text)

    def constant(self, value: Any, hint: str) -> str:
        name = f"{hint}{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def arguments(self) -> bool:
        """Unpack and check every argument; False when one has no direct form."""
        count = len(self.specs)
        self.line(f"if len(args) != {count}:")
        self.line("    return False")
        if count:
            self.line(f"{', '.join(f'a{i}' for i in range(count))}, = args")
        arrays = []
        for i, (spec, (cls, inner)) in enumerate(zip(self.specs, self.classes)):
            klass = self.constant(cls, "K")
            if spec.kind == "comptime":
                value = self.constant(spec.value, "V")
                self._fail_if(f"a{i}.__class__ is not {klass} or a{i} != {value}")
            elif spec.kind == "scalar":
                if not (cls in (int, float, bool) or issubclass(cls, np.generic)):
                    return False
                self._fail_if(f"a{i}.__class__ is not {klass}")
            elif spec.kind == "scalar_ref":     # its one-element check lives in the binder
                return False
            elif spec.inline and cls is np.ndarray:
                self._by_value(i, spec)
            else:
                if not self._array(i, spec, cls, inner):
                    return False
                arrays.append(i)
        self._aliasing(arrays)
        return True

    def _array(self, i: int, spec, cls, inner) -> bool:
        entry = RAW_READERS.get(inner)
        if entry is None or (entry[0] is not None and entry[0] not in self.platforms):
            return False
        a = f"a{i}"
        if cls is LinesArg:
            self._fail_if(f"{a}.__class__ is not {self.constant(LinesArg, 'L')} or "
                          f"{a}.width != {self._width(i)}")
            self.line(f"b{i} = {a}.array")
            a = f"b{i}"
            self._fail_if(f"{a}.__class__ is not {self.constant(inner, 'K')}")
        else:
            self._fail_if(f"{a}.__class__ is not {self.constant(inner, 'K')}")
        dtype = self.constant(np.dtype(spec.dtype.numpy_name), "D")
        extra = "" if entry[0] is not None else f", {self.constant(self.platforms, 'P')}"
        self.line(f"t{i} = {self.constant(entry[1], 'R')}({a}{extra})")
        self._fail_if(f"t{i} is None")
        self.line(f"d{i}, s{i}, p{i}, c{i}, r{i}, g{i} = t{i}")
        fails = [f"d{i} is not {dtype} and d{i} != {dtype}", f"not c{i}", f"len(s{i}) != {spec.ndim}"]
        if self.device_index is not None:   # on another GPU: the full path says so
            fails.append(f"g{i} is not None and g{i} != {self.device_index}")
        if spec.mutable:
            fails.append(f"r{i}")
        self._fail_if(" or ".join(fails))
        self.line(f"n{i} = {' * '.join(f's{i}[{axis}]' for axis in range(spec.ndim))}")
        self._fail_if(f"n{i} > {ARRAY_MAX}")
        if spec.ndim > 1:     # an empty array may still have an axis too long to index
            self._fail_if(f"not n{i} and max(s{i}) > {ARRAY_MAX}")
        width = self._width(i)
        if width > 1:
            self._fail_if(f"s{i}[{spec.ndim - 1}] % {width}")
        return True

    def _by_value(self, i: int, spec) -> None:
        """A host array the specialization passes by value: a NumPy array of its dtype, rank and
        capacity (`cubepy.runtime.inline_arrays`), read-only, so never aliased."""
        a = f"a{i}"
        self._fail_if(f"{a}.__class__ is not {self.constant(np.ndarray, 'K')}")
        self.line(f"s{i} = {a}.shape")
        dtype = self.constant(np.dtype(spec.dtype.numpy_name), "D")
        capacity = self.constant(inline_capacity, "C")
        self._fail_if(f"{a}.dtype != {dtype} or len(s{i}) != {spec.ndim} or not {a}.flags.c_contiguous or "
                      f"{capacity}({a}, {self.inline_bytes}) != {spec.inline}")
        self.by_value.add(i)

    def _width(self, i: int) -> int:
        return self.specs[i].width if self.classes[i][0] is LinesArg else 1

    def _aliasing(self, arrays: list[int]) -> None:
        for x, i in enumerate(arrays):
            for j in arrays[x + 1:]:
                if self.specs[i].mutable or self.specs[j].mutable:
                    size_i, size_j = self.specs[i].dtype.itemsize, self.specs[j].dtype.itemsize
                    self._fail_if(f"n{i} and n{j} and p{i} < p{j} + {size_j} * n{j} and "
                                  f"p{j} < p{i} + {size_i} * n{i}")

    def slot(self, i: int, slot: tuple) -> str | None:
        """The expression of one backend slot for argument ``i``; None if it has none."""
        kind, spec = slot[0], self.specs[i]
        if kind == "inline":
            return f"a{i}.tobytes()" if i in self.by_value else None
        if i in self.by_value and kind != "extent":    # the kernel takes it by address after all
            return None
        if kind == "owner":         # the backend's own array (behind a Lines argument, a Resident)
            array = f"b{i}" if self.classes[i][0] is LinesArg else f"a{i}"
            found = OWNERS.get(self.classes[i][1])
            return array if found is None else f"{self.constant(found, 'O')}({array})"
        if kind == "pointer":
            if slot[2] > 1:
                self._fail_if(f"p{i} % {slot[2]}")
            return f"p{i}"
        if kind == "extent":
            axis, width = slot[2], self._width(i)
            if width > 1 and axis == spec.ndim - 1:
                return f"s{i}[{axis}] // {width}"
            return f"s{i}[{axis}]"
        if kind == "scalar":
            # The backend packs the value into its slot's C type, refusing (False) what does not
            # fit; a value for a type narrower than its slot is rounded to it first, as the binder does.
            if spec.dtype.is_bool:
                return f"(1 if a{i} else 0)"
            if spec.dtype.is_int or spec.dtype.bits >= 32:
                return f"a{i}"
            try:
                narrow = np.dtype(spec.dtype.numpy_name).type
            except TypeError:     # a type NumPy lacks (bfloat16)
                return None
            return f"{self.constant(narrow, 'T')}(a{i})"
        return None

    def launch_ok(self, kernel, count: tuple, dim: tuple) -> str:
        """The answer to the kernel's launch test (`cubepy.runtime.launch_checks`), the launch
        shape folded in, remembered per extents and scalars it reads."""
        check = launch_check(kernel)
        known = {("count", a): count[a] for a in range(3)} | {("dim", a): dim[a] for a in range(3)}
        _, answer = check.function(known)
        inputs = []
        for kind, param, *axis in (i for i in check.inputs if i not in known):
            i = self.param_order[param]
            if kind == "scalar":
                inputs.append(f"a{i}" if self.classes[i][0] is int else f"int(a{i})")
            elif self._width(i) > 1 and axis[0] == self.specs[i].ndim - 1:
                inputs.append(f"s{i}[{axis[0]}] // {self._width(i)}")
            elif self.specs[i].ndim == 1 and i not in self.by_value:
                inputs.append(f"n{i}")          # the element count, read already
            else:
                inputs.append(f"s{i}[{axis[0]}]")
        if not inputs:
            return "1" if answer() else "0"
        memo, function = self.constant({}, "M"), self.constant(answer, "F")
        self.line(f"key = ({', '.join(inputs)},)")
        self.line(f"ok = {memo}.get(key)")
        self.line("if ok is None:")
        self.line(f"    ok = {function}(*key)")
        self.line(f"    if len({memo}) < 256:")
        self.line(f"        {memo}[key] = ok")
        return "ok"

    def _fail_if(self, condition: str) -> None:
        self.line(f"if {condition}:")
        self.line("    return False")

    def build(self, submit: Callable[..., bool]) -> WarmPath:
        source = "def warm(args):\n" + "\n".join(self.lines) + "\n"
        namespace = dict(self.namespace, submit=submit)
        exec(compile(source, "<cubepy warm path>", "exec"), namespace)
        warm = namespace["warm"]
        warm.source, warm.direct = source, True
        return warm
