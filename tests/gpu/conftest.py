import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def missing_toolchain(reason: str):
    """Skip a compile check whose compiler is absent, or fail it where CI requires the compilers."""
    import os

    import pytest

    if os.environ.get("CUBEPY_REQUIRE_TOOLCHAINS") == "1":
        pytest.fail(f"{reason} (CUBEPY_REQUIRE_TOOLCHAINS=1)")
    pytest.skip(reason)


def opencl_clang() -> str:
    """A clang with OpenCL C headers: on PATH, or the one Debian's hipcc brings (clang-15)."""
    import shutil

    found = shutil.which("clang") or next(iter(sorted(Path("/usr/lib").glob("llvm-*/bin/clang"), reverse=True)), None)
    if found is None:
        missing_toolchain("no clang for OpenCL C (apt-get install hipcc brings clang-15)")
    return str(found)
