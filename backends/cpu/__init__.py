"""The CPU backend: IR -> LLVM IR -> native code through llvmlite's MCJIT.

Cubes run in parallel on a thread pool (ctypes releases the GIL); the units of a cube run as
loops between barriers ("work-item loops"), which LLVM vectorizes. See DESIGN.md.

Options: ``cb.device("cpu", plane_dim=8, threads=4, opt_level=3)``. ``plane_dim`` is a power of two
from 1 to 64 (default: the host's SIMD width in f32 lanes); ``threads`` defaults to
``os.cpu_count()``; ``opt_level`` (LLVM's -O, default 3) trades speed for compile time (the
fuzzer compiles hundreds of kernels at -O1).
"""

from __future__ import annotations

import ctypes
import itertools
import math
import os
import pickle
import struct
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from cubepy.errors import ArgumentValueError, out_of_bounds
from cubepy.ir import pipeline
from cubepy.ir.nodes import Kernel
from cubepy.runtime.backend import Backend
from cubepy.runtime.properties import DeviceProperties

from .common import ERR_WORDS, MAX_OOB_DIMS, CpuCompileError, Layout

if TYPE_CHECKING:
    from . import jit

__all__ = ["BACKEND", "CpuBackend", "CpuCompileError", "Executable", "stats"]


def __getattr__(name: str):
    # llvmlite and the code generator load with the first probe, not with the module (the registry
    # imports every backend to order them)
    if name == "stats":
        from . import jit
        return jit.stats
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_SCALAR_FMT = {"bool_": "?7x", "i8": "b7x", "u8": "B7x", "i16": "h6x", "u16": "H6x", "i32": "i4x", "u32": "I4x",
               "i64": "q", "u64": "Q", "f16": "e6x", "f32": "f4x", "f64": "d"}
# launches with fewer units than this run on the calling thread only
SERIAL_UNITS = 1 << 15


class Executable:
    """One compiled specialization and its launch plan."""

    def __init__(self, kernel: Kernel, llvm_ir: str | None, layout: Layout, loaded: jit.Loaded, from_disk: bool,
                 key: str):
        self.kernel = kernel
        self.llvm_ir = llvm_ir          # None in an executable restored from a snapshot (made on demand)
        self.key = key                  # of its object code in the disk cache
        self.layout = layout
        self.loaded = loaded
        self.from_disk = from_disk
        self.fn = _ENTRY(loaded.address)
        fmt = "<"
        for slot in layout.slots:
            kind = slot[0]
            if kind == "scalar":
                fmt += _SCALAR_FMT[slot[2].name]
            elif kind in ("ptr", "err"):
                fmt += "Q"
            else:
                fmt += "q"
        self.struct = struct.Struct(fmt)
        self.nslots = len(layout.slots)
        self.has_oob = bool(layout.oob_sites)
        self.units = math.prod(kernel.cube_dim)
        self._tls = threading.local()
        self.fill = _filler(layout.slots)

    def buffers(self) -> tuple:
        """This thread's argument block and error record (kept between its launches, which finish
        before they return): ``(block, its address, record or None, its address or 0)``."""
        found = getattr(self._tls, "buffers", None)
        if found is None:
            block = ctypes.create_string_buffer(8 * self.nslots)
            err = (ctypes.c_int64 * ERR_WORDS)() if self.has_oob else None
            found = self._tls.buffers = (block, ctypes.addressof(block), err,
                                         ctypes.addressof(err) if err is not None else 0)
        return found

    def workspace(self) -> int:
        """This thread's workspace (64-byte aligned), kept between launches."""
        size = self.layout.ws_size
        if size == 0:
            return 0
        ws = getattr(self._tls, "ws", None)
        if ws is None:
            buf = np.zeros(size + 64, np.uint8)   # zero: the OOB site words must start clear
            addr = buf.ctypes.data
            self._tls.ws = ws = (buf, addr + (-addr) % 64)
        return ws[1]

    def run_range(self, block: int, first: int, last: int) -> None:
        self.fn(block, first, last, self.workspace())


def data_pointer(array: np.ndarray, _from_buffer=ctypes.c_char.from_buffer, _addressof=ctypes.addressof) -> int:
    """The address of a NumPy array's first element: through the buffer protocol where the array is
    writable and not empty (0.2 us), else through ``array.ctypes`` (0.9 us, two per saxpy launch)."""
    if array.flags.writeable and array.size:
        try:
            return _addressof(_from_buffer(array))
        except (TypeError, ValueError, BufferError):    # a dtype NumPy exports no buffer for
            pass
    return array.ctypes.data


def _filler(slots: list) -> Callable:
    """``fill(args, ccx, ccy, ccz, err) -> values``: the argument block's values in slot order,
    written out once per executable (a launch then runs no loop over slot kinds)."""
    exprs = []
    for slot in slots:
        kind = slot[0]
        exprs.append(f"data_pointer(args[{slot[1]}])" if kind == "ptr" else
                     f"args[{slot[1]}].shape[{slot[2]}]" if kind == "shape" else
                     f"args[{slot[1]}]" if kind == "scalar" else "err" if kind == "err" else kind)
    namespace: dict = {"data_pointer": data_pointer}
    exec(compile(f"def fill(args, ccx, ccy, ccz, err):\n    return ({''.join(e + ', ' for e in exprs)})\n",
                 "<cubepy cpu launch>", "exec"), namespace)
    return namespace["fill"]


class CpuBackend(Backend):
    name = "cpu"
    finishes_launches = True
    preference = 80            # after every GPU
    disk_cached = True
    source_forms = ("source", "optimized", "asm")

    def __init__(self):
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._pool_lock = threading.Lock()
        self._opt_levels: dict[DeviceProperties, int] = {}     # LLVM -O per probed device (default 3)
        self._isas: dict[DeviceProperties, str] = {}           # instruction set per probed device (jit.ISAS)

    # --- device -----------------------------------------------------------------------------

    def probe(self, plane_dim=None, threads=None, races=False, opt_level=3, isa=None, checks_per_cube=True,
              checks_per_run=True, **options) -> DeviceProperties:
        """``checks_per_cube=False`` / ``checks_per_run=False`` keep every check at its access (and
        every guard per unit): the reference the versioned kernels are tested against."""
        if options:
            raise ArgumentValueError(f"unknown option(s) for the CPU device: {', '.join(sorted(options))}; "
                                     "it takes plane_dim, threads, opt_level, isa, checks_per_cube and checks_per_run")
        if isinstance(opt_level, bool) or opt_level not in (0, 1, 2, 3):
            raise ArgumentValueError(f"the CPU device's opt_level must be 0, 1, 2 or 3 (LLVM's -O), got {opt_level!r}")
        from . import jit

        host = jit.init()
        isa = host["isa"] if isa is None else isa
        if isa not in jit.ISAS:
            raise ArgumentValueError(f"the CPU device's isa must be one of {', '.join(jit.ISAS)}, got {isa!r}")
        lanes = jit.simd_f32_lanes(isa)
        if plane_dim is None:
            plane_dim = lanes
        if isinstance(plane_dim, bool) or not isinstance(plane_dim, int) or not (
                1 <= plane_dim <= 64 and plane_dim & (plane_dim - 1) == 0):
            raise ArgumentValueError(f"the CPU device's plane_dim must be a power of two from 1 to 64, "
                                     f"got {plane_dim!r}")
        if threads is None:
            threads = os.cpu_count() or 1
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ArgumentValueError(f"the CPU device's threads must be a positive int, got {threads!r}")
        if races:
            raise ArgumentValueError("race detection (races=True) is only available on the 'interp' device")
        feats = set(jit.features(isa).split(","))
        features = {"fp16", "fp64", "atomics", "plane_ops", "atomic_f32_add", "atomic_f64_add"}
        features |= {f"simd_f32x{lanes}"} | {f[1:] for f in feats if f[1:] in ("avx2", "avx512f", "fma", "f16c")
                                             and f.startswith("+")}
        # host features turned off because this LLVM release miscompiles them (jit.X86_FEATURES_OFF)
        kept_from = jit.kept_from(isa)
        level = ("" if opt_level == 3 else f", LLVM -O{opt_level}") + (", AVX-512 off" if isa == "avx2" else "") + (
            f", {'/'.join(kept_from)} off for LLVM {'.'.join(map(str, jit.llvm.llvm_version_info[:2]))}"
            if kept_from else "") + (
            "" if checks_per_cube and checks_per_run else ", checks per access")
        props = DeviceProperties(
            name=f"{host['cpu']} ({threads} threads, {lanes} f32 SIMD lanes{level})", backend=self.name,
            plane_dim=plane_dim, plane_size_min=plane_dim, plane_size_max=plane_dim, max_units_per_cube=1024,
            max_cube_dim=(1024, 1024, 64), max_cube_count=(2**31 - 1, 65535, 65535),
            shared_memory_per_cube=65536, vector_widths=(1, 2, 4, 8, 16), compute_units=threads,
            features=frozenset(features), checks_per_cube=bool(checks_per_cube), guards_per_cube=bool(checks_per_cube),
            checks_per_run=bool(checks_per_run))
        self._opt_levels[props] = opt_level
        self._isas[props] = isa
        return props

    # --- compile ----------------------------------------------------------------------------

    def generate(self, kernel: Kernel, properties: DeviceProperties | None = None) -> tuple[str, Layout]:
        from . import jit
        from .codegen import GANG_VECTORS, Codegen

        host = jit.init()
        plane_dim = kernel.plane_dim or properties.plane_dim
        levels = pipeline.analysis(kernel, "uniformity")      # stored by the compile pipeline
        isa = self._isas.get(properties) if properties is not None else None
        gen = Codegen(kernel, plane_dim, levels, vf=GANG_VECTORS * jit.simd_f32_lanes(isa),
                      masks_memory=jit.masks_memory(isa))
        return gen.generate(host["triple"], host["datalayout"])

    def compile(self, kernel: Kernel, properties: DeviceProperties) -> Executable:
        from . import jit

        llvm_ir, layout = self.generate(kernel, properties)
        opt, isa = self._opt_levels.get(properties, 3), self._isas.get(properties)
        loaded, from_disk, key = jit.load(llvm_ir, layout.entry, opt, isa)
        return Executable(kernel, llvm_ir, layout, loaded, from_disk, key)

    def snapshot(self, executable: Executable, properties: DeviceProperties) -> bytes:
        from . import jit

        toolchain = jit.toolchain(self._opt_levels.get(properties, 3), self._isas.get(properties))
        return pickle.dumps((toolchain, executable.key, executable.layout), protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, kernel: Kernel, properties: DeviceProperties, snapshot: bytes) -> Executable | None:
        from . import jit

        toolchain, key, layout = pickle.loads(snapshot)
        if toolchain != jit.toolchain(self._opt_levels.get(properties, 3), self._isas.get(properties)):
            return None
        loaded = jit.load_cached(key, layout.entry)
        return None if loaded is None else Executable(kernel, None, layout, loaded, True, key)

    def source(self, kernel: Kernel, executable: Executable, properties: DeviceProperties, form: str = "source"):
        llvm_ir = executable.llvm_ir or self.generate(kernel, properties)[0]
        if form == "source":
            return llvm_ir
        if form in ("optimized", "asm"):
            from . import jit

            opt, isa = self._opt_levels.get(properties, 3), self._isas.get(properties)
            mod = jit.optimize(llvm_ir, opt, isa)
            return str(mod) if form == "optimized" else jit._tm(opt, isa).emit_assembly(mod)
        raise ArgumentValueError(f"the CPU backend's source forms are 'source', 'optimized' and 'asm', not {form!r}")

    # --- launch -----------------------------------------------------------------------------

    def _pool(self, threads: int) -> ThreadPoolExecutor:
        pool = self._pools.get(threads)
        if pool is None:
            with self._pool_lock:
                pool = self._pools.get(threads)
                if pool is None:
                    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cubepy-cpu")
                    self._pools[threads] = pool
        return pool

    def launch(self, executable: Executable, kernel: Kernel, cube_count, cube_dim, args, properties,
               options) -> None:
        if options and options.get("races"):
            raise ArgumentValueError("race detection (races=True) is only available on the 'interp' device",
                                     kernel.name)
        ex = executable
        ccx, ccy, ccz = cube_count
        cubes = ccx * ccy * ccz
        if cubes == 0:
            return
        block, addr, err, err_addr = ex.buffers()
        ex.struct.pack_into(block, 0, *ex.fill(args, ccx, ccy, ccz, err_addr))
        threads = properties.compute_units
        if threads <= 1 or cubes < 2 or cubes * ex.units < SERIAL_UNITS:
            ex.run_range(addr, 0, cubes)
        else:
            # `threads` runners in all, the launching thread one of them (a pool of `threads`
            # beside it put three threads on two cores), each taking the next of 4 chunks per
            # thread until none is left: the chunk count balances, the runners do not oversubscribe
            chunks = min(cubes, threads * 4)
            bounds = [cubes * i // chunks for i in range(chunks + 1)]
            taken = itertools.count()          # next() on it is atomic under the GIL
            run_range = ex.run_range

            def run_chunks() -> None:
                while (i := next(taken)) < chunks:
                    run_range(addr, bounds[i], bounds[i + 1])
            pool = self._pool(threads - 1)
            futures = [pool.submit(run_chunks) for _ in range(threads - 1)]
            try:
                run_chunks()
            finally:
                for f in futures:
                    f.result()
        if err is not None and err[0]:
            record = (ctypes.c_int64 * ERR_WORDS).from_buffer_copy(err)
            ctypes.memset(err, 0, ctypes.sizeof(err))     # clear for this thread's next launch
            self._raise_oob(ex, kernel, record, cube_count, cube_dim)

    @staticmethod
    def _raise_oob(ex: Executable, kernel: Kernel, err, cube_count, cube_dim) -> None:
        name, loc, nd, unsigned = ex.layout.oob_sites[err[1]]
        at = tuple(int(err[4 + j]) % 2**64 if unsigned[j] else int(err[4 + j]) for j in range(nd))
        shape = tuple(int(err[4 + MAX_OOB_DIMS + j]) for j in range(nd))

        def coords(i, dims):
            return (i % dims[0], i // dims[0] % dims[1], i // (dims[0] * dims[1]))
        raise out_of_bounds(kernel.name, name, at, shape, coords(int(err[2]), cube_dim),
                            coords(int(err[3]), cube_count), loc)

    def synchronize(self, properties=None) -> None:
        pass

    def xla_ffi_handler(self, executable: Executable, kernel: Kernel, properties, cube_count, cube_dim,
                        sources: dict, ranks: dict, zeroed: list):
        """A native XLA FFI handler running this launch on XLA's calling thread (see xla_ffi.py),
        or None for a launch big enough that the threaded launch path is faster."""
        from cubepy.runtime.xla_ffi_native import ffi_failure

        from .xla_ffi import build_handler

        cubes = math.prod(cube_count)
        if properties.compute_units > 1 and cubes > 1 and cubes * executable.units >= SERIAL_UNITS:
            return None

        def out_of_bounds(record: int):
            record = (ctypes.c_int64 * ERR_WORDS).from_address(record)
            self._raise_oob(executable, kernel, record, cube_count, cube_dim)
        return build_handler(executable, sources, ranks, zeroed, cubes, cube_count,
                             ffi_failure(kernel, out_of_bounds))


BACKEND = CpuBackend()
