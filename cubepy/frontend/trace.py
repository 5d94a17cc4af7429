"""Entry point of the frontend: a Python function and a specialization -> a checked IR kernel."""

from __future__ import annotations

from ..errors import CubeIndexError, CubeSyntaxError, CubeTypeError, CubeValueError
from ..ir.builder import Builder
from ..ir.nodes import Block, Buffer, Const, Kernel, ScalarParam
from ..ir.pipeline import PIPELINE, Options
from ..ir.types import INDEX, INDEX_MAX, Type, wide_index_dtype
from . import dependencies
from .codegen import CodeGen, Frame, FuncReturn, KernelReturn, Retrace
from .operators import Ops, is_number, is_traced
from .source import FunctionSource, function_source
from .spec import KernelSpec
from .values import ArrayRef, RegionRef, Sym, unwrap

_MAX_RETRACES = 16


class Tracer(CodeGen):
    """The state of one trace: the kernel under construction and where we are in the source."""

    def __init__(self, source: FunctionSource, spec: KernelSpec, name: str, widen: dict):
        self.spec = spec
        self.kernel = Kernel(name, checked=spec.checked, fastmath=spec.fastmath, cube_dim=spec.cube_dim,
                             plane_dim=spec.plane_dim, units_bound=spec.units_bound)
        self.builder = Builder(self.kernel)
        self.ops = Ops(self)
        self.widen = widen
        self.var_keys: dict[int, tuple] = {}
        self.frames = [Frame(source, {}, 0)]
        self.traced_depth = 0
        self.pending_name: str | None = None
        self.entry = Block()
        self.entry_values: dict[str, object] = {}
        self.dim_values: set[int] = set()      # ids of values computed from cube extents alone
        self.kernel.loc = source.loc(source.tree)

    # --- context services used by codegen and intrinsics ------------------------------------
    def error(self, cls, message: str):
        raise cls(message, self.kernel.name, self.builder.loc)

    def set_loc(self, node) -> None:
        self.builder.loc = self.frame.source.loc(node)

    def entry_cached(self, key: str, compute):
        """A value computed once at kernel entry (it dominates every use)."""
        if key not in self.entry_values:
            with self.builder.at(self.entry):
                self.entry_values[key] = compute()
        return self.entry_values[key]

    def dim_value(self, value):
        """Mark ``value`` as computed from cube extents alone (shape-generic traces)."""
        if is_traced(value):
            self.dim_values.add(value.id)
        return value

    def entry_builtin(self, name: str, implicit: bool = False):
        """The ``builtin`` op of ``name`` at kernel entry; ``implicit``: read for a linear position
        (`cubepy.frontend.intrinsics.builtin_value`), an op of its own."""
        if implicit:
            return self.entry_cached(f"{name}:implicit", lambda: self.builder.op("builtin", (), Type(INDEX), name=name,
                                                                                   implicit=True))
        return self.entry_cached(name, lambda: self.builder.op("builtin", (), Type(INDEX), name=name))

    def require_mutable(self, array: ArrayRef, what: str) -> None:
        buf = array.buffer
        if not buf.mutable:
            t = f"Array[{buf.type.dtype}]"
            self.error(CubeTypeError, f"{what} writes to the read-only array parameter '{array.name}'; "
                       f"declare it as Mut[{t}] to write to it")

    def index_values(self, array: ArrayRef, index) -> list:
        """The IR indices of an access. In checked mode an index keeps its full width (an i64 stays
        i64) so that the bounds check compares the true value; the check narrows it to i32 only
        once it is known to be in bounds (`cubepy.ir.passes.lower_bounds_checks`)."""
        indices = index if isinstance(index, tuple) else (index,)
        ndim = len(array.shape)
        if len(indices) != ndim:
            self.error(CubeIndexError, f"array '{array.name}' has {ndim} dimension{'s' if ndim != 1 else ''} "
                       f"but is indexed with {len(indices)}")
        out = []
        for dim, i in enumerate(indices):
            if is_number(i):
                if isinstance(i, float) or isinstance(i, bool):
                    self.error(CubeTypeError, f"array '{array.name}' index must be an integer, got {i!r}")
                if i < 0:
                    self.error(CubeIndexError, f"negative index {i} into array '{array.name}': cubepy does not "
                               f"wrap negative indices; write len({array.name}) - {-i}")
                extent = array.shape[dim]
                if isinstance(extent, int) and i >= extent:
                    self.error(CubeIndexError, f"index {i} is out of bounds for '{array.name}' with static "
                               f"shape {array.shape}")
                if i > INDEX_MAX:
                    self.error(CubeIndexError, f"index {i} into array '{array.name}' can never be in bounds: "
                               f"arrays hold at most {INDEX_MAX} elements per dimension")
            elif not is_traced(i):
                self.error(CubeTypeError, f"array '{array.name}' index must be an integer, got {type(i).__name__}")
            elif not i.type.dtype.is_int or i.type.width != 1:
                self.error(CubeTypeError, f"array '{array.name}' index must be an integer scalar, got {i.type}")
            out.append(self.index_operand(i))
        return out

    def index_operand(self, i):
        """An index as the access takes it: i32, or (checked mode) the wider type it needs."""
        if self.spec.checked and is_traced(i):
            return self.ops.cast(i, wide_index_dtype(i.type.dtype))
        return self.ops.cast(i, INDEX)

    def region_global_index(self, region: RegionRef, indices):
        """``part.global_index(j, ...)``: where the unit's local index ``j`` of its part lies in
        the whole array (one i32 per dimension; a tuple for 2-D parts). Checked mode reports a
        local index outside the part, as an access of the part would."""
        ops, b = self.ops, self.builder
        indices = tuple(indices)
        if len(indices) != len(region.parts):
            self.error(CubeIndexError, f"region '{region.param}' has {len(region.parts)} dimension(s); "
                       f"global_index takes {len(region.parts)} local index(es), got {len(indices)}")
        local = [ops.cast(self._int_operand(i, f"region '{region.param}' index"), INDEX) for i in indices]
        if self.spec.checked:
            ok = True
            for j, (_, _, length) in zip(local, region.parts):
                inside = ops.binary("and", ops.compare("ge", j, 0), ops.compare("lt", j, length))
                ok = inside if ok is True else ops.binary("and", ok, inside)
            if ok is not True:
                then_block, else_block = Block(), Block()
                b.op("if", (ok,), blocks=(then_block, else_block))
                with b.at(else_block):
                    b.op("report_oob", (*local, *(length for _, _, length in region.parts)),
                         array=region.param)
        at = tuple(ops.binary("add", base, ops.binary("mul", j, step))
                   for j, (base, step, _) in zip(local, region.parts))
        return at[0] if len(at) == 1 else at

    def region_access(self, region: RegionRef, index, value):
        ops, b = self.ops, self.builder
        indices = index if isinstance(index, tuple) else (index,)
        if len(indices) != len(region.parts):
            self.error(CubeIndexError, f"region '{region.param}' has {len(region.parts)} dimension(s) but is "
                       f"indexed with {len(indices)}")
        local = [self._int_operand(i, f"region '{region.param}' index") for i in indices]
        buf = region.array.buffer
        if value is not None:
            value = ops.coerce(value, buf.type, f"region '{region.param}'")

        def global_index(narrow):
            return tuple(ops.binary("add", base, ops.binary("mul", j, step))
                         for j, (base, step, _) in zip(narrow, region.parts))
        if not self.spec.checked:
            at = global_index([ops.cast(j, INDEX) for j in local])
            if value is None:
                return b.op("load", (buf, *at), buf.type, checked=False, array=region.param)
            b.op("store", (buf, *at, value), checked=False, array=region.param)
            return None
        # compare each index at its full width with the part's length, narrow it once inside
        local = [ops.lift(ops.cast(j, wide_index_dtype(j.type.dtype)) if is_traced(j) else ops.lift(j, Type(INDEX)))
                 for j in local]
        ok = True
        for j, (_, _, length) in zip(local, region.parts):
            inside = ops.compare("lt", j, ops.cast(length, j.type.dtype))
            if j.type.dtype.is_signed:
                inside = ops.binary("and", ops.compare("ge", j, 0), inside)
            ok = inside if ok is True else ops.binary("and", ok, inside)
        then_block, else_block = Block(), Block()
        result = b.new_var(f"{region.param}_elem", buf.type) if value is None else None
        b.op("if", (ok,), blocks=(then_block, else_block))
        with b.at(then_block):
            at = global_index([ops.cast(j, INDEX) for j in local])
            if value is None:
                b.store_var(result, b.op("load", (buf, *at), buf.type, checked=True, array=region.param))
            else:
                b.op("store", (buf, *at, value), checked=True, array=region.param)
        with b.at(else_block):
            b.op("report_oob", (*local, *(ops.lift(p[2]) for p in region.parts)),
                 array=f"{region.param} (this unit's region part)")
            if value is None:
                b.store_var(result, ops.coerce(0, buf.type, "region element"))
        return b.load_var(result) if value is None else None

    def inline(self, func, args, kwargs):
        """Trace a @cb.func body in place with its parameters bound to ``args``."""
        import inspect

        source = function_source(func.fn)
        try:
            bound = inspect.signature(func.fn).bind(*args, **kwargs)
        except TypeError as e:
            self.error(CubeTypeError, f"calling @cb.func '{func.fn.__name__}': {e}")
        bound.apply_defaults()
        if len(self.frames) > 32:
            self.error(CubeValueError, f"@cb.func '{func.fn.__name__}' recursed more than 32 levels deep")
        recorder = dependencies.current()
        frame = Frame(source, dict(bound.arguments), self.traced_depth,
                      recorder.path_of(func) if recorder is not None else None)
        self.frames.append(frame)
        saved_loc = self.builder.loc
        try:
            self.visit_block(source.tree.body)
            return None
        except FuncReturn as r:
            return r.value
        finally:
            self.frames.pop()
            self.builder.loc = saved_loc

    # --- the kernel ---------------------------------------------------------------------------
    def bind_params(self) -> None:
        scope = self.frame.scope
        for p in self.spec.params:
            # param_index is the position among the runtime parameters (Comptime ones are baked in)
            position = len(self.kernel.params)
            if p.kind in ("array", "region"):
                buf = Buffer(p.name, "global", Type(p.dtype, p.width), p.ndim, p.mutable, None, position,
                             inline=p.inline)
                self.kernel.params.append(buf)
                shape = tuple(self.entry_cached(f"shape:{p.name}:{d}", lambda d=d, buf=buf: self.builder.op(
                    "shape", (buf,), Type(INDEX), dim=d)) for d in range(p.ndim))
                array = ArrayRef(buf, shape, p.name)
                scope[p.name] = array if p.kind == "array" else self.make_region(array, p)
            elif p.kind == "scalar_ref":
                # A scalar in device memory (a one-element array the runtime checked): loaded once.
                buf = Buffer(p.name, "global", Type(p.dtype), 1, False, None, position)
                self.kernel.params.append(buf)
                scope[p.name] = self.entry_cached(f"param:{p.name}", lambda buf=buf: self.builder.op(
                    "load", (buf, Const(0, Type(INDEX))), buf.type, checked=False, array=buf.name))
            elif p.kind == "scalar":
                param = ScalarParam(p.name, Type(p.dtype), position)
                self.kernel.params.append(param)
                scope[p.name] = self.entry_cached(f"param:{p.name}", lambda param=param, i=position: self.builder.op(
                    "param", (), param.type, index=i, name=param.name))
            else:  # comptime: baked in, not a runtime parameter
                scope[p.name] = p.value

    def make_region(self, array: ArrayRef, p) -> RegionRef:
        strategy = p.strategy
        if getattr(strategy, "ndim", 1) != p.ndim:
            self.error(CubeTypeError, f"region '{p.name}': strategy {type(strategy).__name__} partitions "
                       f"{strategy.ndim}-D arrays but the argument has {p.ndim} dimension(s)")

        def compute():
            topo = _Topology(self)
            shape = tuple(Sym(s, self.ops) for s in array.shape)
            parts = strategy.part(shape, topo)
            return [tuple(self.ops.cast(unwrap(v), INDEX) for v in triple) for triple in parts]
        parts = self.entry_cached(f"region:{p.name}", compute)
        return RegionRef(array, parts, p.name)

    def run(self) -> Kernel:
        tree = self.frame.source.tree
        self.set_loc(tree)
        self.bind_params()
        try:
            self.visit_block(tree.body)
        except KernelReturn:
            pass
        except FuncReturn:  # pragma: no cover - a return outside a func is caught in stmt_Return
            self.error(CubeSyntaxError, "return outside a function")
        self.kernel.body.ops = self.entry.ops + self.kernel.body.ops
        return self.kernel


class _Topology:
    """The traced topology values a partitioning strategy reads."""

    def __init__(self, tracer: Tracer):
        from .intrinsics import builtin_value

        ops = tracer.ops

        def sym(name):
            return Sym(builtin_value(tracer, name), ops)
        self.unit = sym("absolute_pos")
        self.units = Sym(ops.binary("mul", builtin_value(tracer, "cube_count"), builtin_value(tracer, "cube_dim")), ops)
        self.unit_x, self.unit_y = sym("unit_pos_x"), sym("unit_pos_y")
        self.cube_x, self.cube_y = sym("cube_pos_x"), sym("cube_pos_y")
        self.cube_dim_x, self.cube_dim_y = sym("cube_dim_x"), sym("cube_dim_y")
        self.cube_count_x, self.cube_count_y = sym("cube_count_x"), sym("cube_count_y")
        self._ops = ops

    def min(self, a, b):
        return Sym(self._ops.minmax("min", unwrap(a), unwrap(b)), self._ops)

    def max(self, a, b):
        return Sym(self._ops.minmax("max", unwrap(a), unwrap(b)), self._ops)


def trace_kernel(fn, spec: KernelSpec, name: str | None = None) -> Kernel:
    """Trace ``fn`` for ``spec`` into IR and run the compile pipeline on it (`cubepy.ir.pipeline`):
    verified, uniformity checked, bounds checks lowered, its analyses stored for the backend."""
    source = function_source(fn)
    name = name or fn.__name__
    widen: dict = {}
    for _ in range(_MAX_RETRACES):
        try:
            kernel = Tracer(source, spec, name, widen).run()
            break
        except Retrace:
            continue
    else:  # pragma: no cover - widening is monotone, so this needs absurd code
        raise CubeTypeError("variable types did not settle after widening", name, None)
    return PIPELINE.run(kernel, Options(checks_per_cube=spec.checks_per_cube, guards_per_cube=spec.guards_per_cube,
                                        checks_per_run=spec.checks_per_run,
                                        checks_per_launch=spec.checks_per_launch,
                                        versions_barriers=spec.versions_barriers,
                                        inline_array_bytes=spec.inline_array_bytes))
