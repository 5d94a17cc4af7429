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
