"""llvmlite: target machine, optimization, object code, the on-disk cache and loading.

Object code is cached (`cubepy.runtime.disk_cache`, folder ``cpu``) under the sha256 of the generated
LLVM IR text (which has no process-dependent ids), the llvmlite and LLVM versions, the host CPU
name and features, and this backend's codegen version: checksummed, written atomically, built once
across processes (a file lock per entry); an entry that fails its checksum or does not load is
compiled again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from cubepy import settings
from cubepy.errors import BackendUnavailableError
from cubepy.runtime.disk_cache import DiskCache

try:
    import llvmlite
    import llvmlite.binding as llvm
except ImportError as e:  # pragma: no cover - the device reports one line
    llvm = None
    _IMPORT_ERROR = str(e)

CODEGEN_VERSION = "cpu-3"

# what AVX-512 brings (LLVM's names): off for CUBEPY_CPU_ISA=avx2
_AVX512 = ("avx512", "avx10", "evex512", "amx")

# AVX512VL and every feature that implies it (LLVM's names): without them no 128- or 256-bit EVEX
# instruction is selected, while 512-bit AVX-512 code stays
_AVX512VL = ("avx512vl", "avx512fp16", "avx10", "amx-avx512")

# LLVM releases whose x86 back end miscompiles this backend's code, and what is turned off there so
# that the faulty path is never taken. LLVM 22.1 (llvmlite 0.48 to 0.50): its EVEX compression
# folds `vpmov{b,d,q}2m %x, %k` + `kmov %k, %r` into `vmovmsk %x, %r` and erases the vpmov*2m,
# scanning the block for other readers of %k but stopping at the first instruction that writes %k,
# also one that reads it first (a masked compare into its own mask register, `vptestmd %y, %y, %k
# {%k}`), which then reads a mask nobody wrote (llvm-project issue 198197, fixed after 22.1). The
# fuzzer found it as a floor-mod's sign fix-up taken for a positive remainder (seeds 15000150,
# 15001376; docs/fuzzing.md). Every instruction the faulty fold matches is a 128- or 256-bit EVEX
# form (`VPMOV*2MZ128`/`Z256`, and the sign-mask `VPCMP*Z128`/`Z256` of later releases), which
# needs AVX512VL: without it (and without what implies it, such as AVX512FP16) the fold has
# nothing to match, and the code keeps AVX-512's 512-bit vectors and mask registers. Turning off
# only AVX512DQ and AVX512BW (no vpmov*2m) is not enough: LLVM then fails to select some f16
# compares and aborts the process. tests/cpu/test_llvm_workarounds.py runs a fourteen-line reproducer.
X86_FEATURES_OFF = {(22, 1): _AVX512VL}

# counters a test (or a curious user) can read: how much work this process did
stats = {"compiles": 0, "disk_hits": 0, "disk_writes": 0, "corrupt": 0}

_lock = threading.Lock()
_state: dict = {}


def init():
    """Initialize LLVM once; return (target machine, host description)."""
    if llvm is None:
        raise BackendUnavailableError(f"the CPU backend needs llvmlite (pip install llvmlite): {_IMPORT_ERROR}")
    with _lock:
        if not _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            llvm.initialize_native_asmparser()
            target = llvm.Target.from_default_triple()
            cpu = llvm.get_host_cpu_name()
            isa = settings.cpu_isa()
            by_isa: dict[str, str] = {}

            def isa_features(which: str) -> str:
                found = by_isa.get(which)
                if found is None:
                    found = by_isa[which] = _features(llvm.get_host_cpu_features(), which)
                return found

            def make_tm(opt=3, which=isa):
                return target.create_target_machine(cpu=cpu, features=isa_features(which), opt=opt,
                                                    reloc="default", codemodel="jitdefault")
            tm = make_tm()
            _state.update(tm=tm, make_tm=make_tm, cpu=cpu, isa=isa, features=isa_features(isa),
                          isa_features=isa_features, triple=target.triple, datalayout=str(tm.target_data),
                          tms={(3, isa): tm})
    return _state


ISAS = settings.CPU_ISAS


def _features(host_features, isa: str) -> str:
    """The target features: the host's; for ``avx2`` the host's without AVX-512; on an LLVM
    release that miscompiles some of it, without what `X86_FEATURES_OFF` names."""
    if isa == "avx2" and not host_features.get("avx2"):
        raise BackendUnavailableError("the avx2 instruction set was asked for, but this CPU has no AVX2")
    off = _AVX512 if isa == "avx2" else features_off()
    for name in list(host_features):
        if off and name.startswith(off):
            host_features[name] = False
    return host_features.flatten()


def features_off() -> tuple[str, ...]:
    """The prefixes of the x86 target features this LLVM release is kept from (`X86_FEATURES_OFF`):
    empty on most."""
    return X86_FEATURES_OFF.get(tuple(llvm.llvm_version_info[:2]), ())


def kept_from(isa: str) -> list[str]:
    """The host's features that ``isa``'s code goes without because this LLVM release
    miscompiles them (`X86_FEATURES_OFF`): empty on most releases, and for ``avx2``."""
    off = () if isa == "avx2" else features_off()
    return sorted(name for name, on in llvm.get_host_cpu_features().items() if on and off and name.startswith(off))


def host_has(feature: str) -> bool:
    """Whether the host CPU has ``feature`` (LLVM's name), whatever the code is compiled for."""
    return bool(llvm.get_host_cpu_features().get(feature))


def host() -> dict:
    return init()


def features(isa: str | None = None) -> str:
    """The target features of instruction set ``isa`` (default: CUBEPY_CPU_ISA's)."""
    st = init()
    return st["isa_features"](isa or st["isa"])


def masks_memory(isa: str | None = None) -> bool:
    """Whether ``isa``'s code has native masked loads and stores (AVX-512's mask registers).
    AVX2's `vmaskmovps` is another instruction: on a Zen 4 a gang's grid-stride sum through it
    took 3.7x the time of plain loads (`benchmarks/cpu/gang_masks.py`)."""
    return "+avx512f" in set(features(isa).split(","))


def simd_f32_lanes(isa: str | None = None) -> int:
    feats = set(features(isa).split(","))
    if "+avx512f" in feats:
        return 16
    if "+avx" in feats:
        return 8
    return 4


def _tm(opt: int, isa: str | None = None):
    """The shared target machine of an optimization level and instruction set (made once each)."""
    st = init()
    key = (opt, isa or st["isa"])
    with _lock:
        if key not in st["tms"]:
            st["tms"][key] = st["make_tm"](*key)
    return st["tms"][key]


def toolchain(opt: int = 3, isa: str | None = None) -> str:
    """What object code depends on besides the LLVM IR: code generator, llvmlite and LLVM versions,
    the host CPU, the instruction set and the optimization level."""
    st = init()
    return "\0".join((CODEGEN_VERSION, llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
                      st["cpu"], features(isa), f"O{opt}"))


def cache_key(llvm_ir: str, opt: int = 3, isa: str | None = None) -> str:
    h = hashlib.sha256(toolchain(opt, isa).encode())
    h.update(b"\0")
    h.update(llvm_ir.encode())
    return h.hexdigest()


CACHE = DiskCache("cpu", ".o")


def optimize(llvm_ir: str, opt: int = 3, isa: str | None = None):
    """Parse and optimize (O3 with the vectorizers by default; ``opt`` 0-2 for a faster compile,
    e.g. when fuzzing); return the module."""
    if os.environ.get("CUBEPY_CPU_DUMP"):
        Path(os.environ["CUBEPY_CPU_DUMP"]).write_text(llvm_ir)
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = opt >= 2
    pto.loop_interleaving = opt >= 2
    pb = llvm.create_pass_builder(_tm(opt, isa), pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    return mod


def compile_object(llvm_ir: str, opt: int = 3, isa: str | None = None, key: str | None = None) -> tuple[bytes, bool]:
    """Object code for ``llvm_ir`` (under ``key``, its `cache_key`): (bytes, came_from_disk);
    compiled once across processes."""
    def build() -> bytes:
        stats["compiles"] += 1
        return _tm(opt, isa).emit_object(optimize(llvm_ir, opt, isa))
    corrupt = CACHE.stats.corrupt
    obj, from_disk = CACHE.get_or_build(key or cache_key(llvm_ir, opt, isa), build)
    stats["corrupt"] += CACHE.stats.corrupt - corrupt
    if from_disk:
        stats["disk_hits"] += 1
    else:
        stats["disk_writes"] += 1
    return obj, from_disk


class Loaded:
    """Object code loaded into its own MCJIT engine (kept alive as long as this object)."""

    def __init__(self, obj: bytes, symbol: str):
        st = init()
        empty = llvm.parse_assembly(f'target triple = "{st["triple"]}"\n')
        # the engine takes ownership of (and frees) its target machine: give it its own
        self.engine = llvm.create_mcjit_compiler(empty, st["make_tm"]())
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()
        self.address = self.engine.get_function_address(symbol)
        if not self.address:
            raise RuntimeError(f"symbol {symbol} not found in the compiled object")


def _loaded_from_disk(obj: bytes, key: str, symbol: str) -> Loaded | None:
    """``obj``, read from the disk cache under ``key``, loaded; None (the entry dropped) where it
    does not load."""
    try:
        return Loaded(obj, symbol)
    except Exception:
        stats["corrupt"] += 1
        CACHE.discard(key)
        return None


def load_cached(key: str, symbol: str) -> Loaded | None:
    """The object code under ``key`` loaded from the disk cache, or None if it is not there (or
    does not load)."""
    corrupt = CACHE.stats.corrupt
    obj = CACHE.read(key)
    stats["corrupt"] += CACHE.stats.corrupt - corrupt
    if obj is None:
        return None
    loaded = _loaded_from_disk(obj, key, symbol)
    if loaded is not None:
        stats["disk_hits"] += 1
    return loaded


def load(llvm_ir: str, symbol: str, opt: int = 3, isa: str | None = None) -> tuple[Loaded, bool, str]:
    """``(loaded, from_disk, key)``: the object code of ``llvm_ir``, from the disk cache or
    compiled, and its disk-cache key."""
    key = cache_key(llvm_ir, opt, isa)
    obj, cached = compile_object(llvm_ir, opt, isa, key)
    if not cached:
        return Loaded(obj, symbol), False, key
    loaded = _loaded_from_disk(obj, key, symbol)
    return (loaded, True, key) if loaded is not None else load(llvm_ir, symbol, opt, isa)
