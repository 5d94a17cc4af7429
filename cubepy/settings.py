"""Every setting of cubepy in one place, each with its environment variable.

| setting         | environment variable | default                          |
|-----------------|----------------------|----------------------------------|
| default device  | CUBEPY_DEVICE        | best available: cuda, hip, opencl, cpu, interp |
| checked mode    | CUBEPY_CHECKED       | 1 (bounds-checked kernels)       |
| cache directory | CUBEPY_CACHE_DIR     | the user cache folder (platformdirs; ~/.cache/cubepy on Linux) |
| log level       | CUBEPY_LOG_LEVEL     | WARNING                          |
| IR dump folder  | CUBEPY_DUMP_IR       | unset: every new specialization's IR is written there (text and pickle) |
| autotune output | CUBEPY_PRINT_AUTOTUNING | 0; 1 prints each config an autotuning measures and its time |
| tracebacks      | CUBEPY_TRACEBACK     | short: errors show the user's frames and cubepy's entry; full: all |
| print in kernels | CUBEPY_PRINT        | 1; 0 compiles every kernel's print(...) out                      |
| print line cap  | CUBEPY_PRINT_LIMIT   | 1000 lines per launch; the rest are counted in a note             |
| shape-generic   | CUBEPY_SHAPE_GENERIC | 1: one compile for the CubeDims a kernel does not need; 0: one each |
| CPU ISA         | CUBEPY_CPU_ISA       | native; avx2: the host's without AVX-512 (an AVX2 machine's code)  |
| trace index     | CUBEPY_TRACE_INDEX   | 1: reuse traces from the disk cache while their reads hold; 0: off |
| profile timer   | CUBEPY_PROFILE_TIMER | auto: CUPTI's records on CUDA where it serves, else events; events |
| CUPTI library   | CUBEPY_CUPTI_LIBRARY | unset: looked for in NVIDIA's wheels and the CUDA toolkit |
"""

from __future__ import annotations

import os
from pathlib import Path


def default_device() -> str | None:
    """The device named by CUBEPY_DEVICE (e.g. ``cpu``, ``interp``, ``cuda:0``), if any."""
    value = os.environ.get("CUBEPY_DEVICE", "").strip()
    return value or None


def checked_default() -> bool:
    return os.environ.get("CUBEPY_CHECKED", "1").strip().lower() not in ("0", "false", "no", "off")


def cache_dir() -> Path:
    """CUBEPY_CACHE_DIR, else the platform's user cache folder (platformdirs: on Linux
    ``$XDG_CACHE_HOME/cubepy`` or ``~/.cache/cubepy``)."""
    explicit = os.environ.get("CUBEPY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_cache_dir("cubepy", appauthor=False))


def log_level() -> str:
    return log_level_setting() or "WARNING"


def log_level_setting() -> str | None:
    """CUBEPY_LOG_LEVEL if set (DEBUG, INFO, WARNING, ERROR), else None."""
    value = os.environ.get("CUBEPY_LOG_LEVEL", "").strip().upper()
    if not value:
        return None
    if value not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ValueError(f"CUBEPY_LOG_LEVEL={value!r}: use DEBUG, INFO, WARNING or ERROR")
    return value


def dump_ir_dir() -> Path | None:
    value = os.environ.get("CUBEPY_DUMP_IR", "").strip()
    return Path(value) if value else None


def print_autotuning() -> bool:
    """CUBEPY_PRINT_AUTOTUNING: print every config an autotuning evaluates and its time (stderr)."""
    return os.environ.get("CUBEPY_PRINT_AUTOTUNING", "0").strip().lower() not in ("", "0", "false", "no", "off")


def full_tracebacks() -> bool:
    """CUBEPY_TRACEBACK=full: compile and launch errors keep cubepy's internal frames."""
    return os.environ.get("CUBEPY_TRACEBACK", "").strip().lower() == "full"


def kernel_prints() -> bool:
    """CUBEPY_PRINT: 0 compiles ``print(...)`` in kernels out (read when a kernel is specialized)."""
    return os.environ.get("CUBEPY_PRINT", "1").strip().lower() not in ("0", "false", "no", "off")


def shape_generic() -> bool:
    """CUBEPY_SHAPE_GENERIC: 0 compiles every CubeDim on its own (read when a kernel is specialized)."""
    return os.environ.get("CUBEPY_SHAPE_GENERIC", "1").strip().lower() not in ("0", "false", "no", "off")


def trace_index() -> bool:
    """CUBEPY_TRACE_INDEX: 0 traces every specialization, even one the disk cache holds a trace of
    (`cubepy.runtime.trace_index`)."""
    return os.environ.get("CUBEPY_TRACE_INDEX", "1").strip().lower() not in ("0", "false", "no", "off")


CPU_ISAS = ("native", "avx2")      # the cpu device's instruction sets (its ``isa`` option)


def cpu_isa() -> str:
    """CUBEPY_CPU_ISA: ``native`` (the host's instruction set) or ``avx2`` (the host's without
    AVX-512: what an AVX2 machine such as a Zen 3 runs, measurable on an AVX-512 one). Read once,
    when the CPU backend first starts LLVM."""
    value = os.environ.get("CUBEPY_CPU_ISA", "native").strip().lower() or "native"
    if value not in CPU_ISAS:
        raise ValueError(f"CUBEPY_CPU_ISA={value!r}: use {' or '.join(CPU_ISAS)}")
    return value


def profile_timer() -> str:
    """CUBEPY_PROFILE_TIMER: ``auto`` (the default: CUPTI's records on CUDA where CUPTI serves) or
    ``events`` (two CUDA events around each profiled launch)."""
    value = os.environ.get("CUBEPY_PROFILE_TIMER", "auto").strip().lower() or "auto"
    if value not in ("auto", "events"):
        raise ValueError(f"CUBEPY_PROFILE_TIMER={value!r}: use auto or events")
    return value


def cupti_library() -> str | None:
    """CUBEPY_CUPTI_LIBRARY: the path of ``libcupti`` for the CUDA profile timer, if set."""
    return os.environ.get("CUBEPY_CUPTI_LIBRARY", "").strip() or None


def print_limit() -> int:
    """CUBEPY_PRINT_LIMIT: the lines of ``print(...)`` one launch keeps (default 1000)."""
    value = os.environ.get("CUBEPY_PRINT_LIMIT", "").strip()
    if not value:
        return 1000
    try:
        limit = int(value)
    except ValueError:
        limit = -1
    if not 0 <= limit < 2**31 - 1:
        raise ValueError(f"CUBEPY_PRINT_LIMIT={value!r}: use a number of lines from 0 to {2**31 - 2}")
    return limit
