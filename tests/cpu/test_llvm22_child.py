"""The CPU backend on LLVM 22.1, the release numba 0.66 and later bring (llvmlite 0.48 to 0.50).

pip resolves cubepy's own llvmlite to LLVM 20; on LLVM 22.1 the backend compiles AVX-512 code
without AVX512VL, since that release miscompiles 128- and 256-bit mask code (`backends/cpu/jit.py`,
X86_FEATURES_OFF). CI installs llvmlite 0.50 into a folder of its own and names it in
``CUBEPY_TEST_LLVMLITE22``; this test then runs the CPU backend's tests and the conformance
suite's cpu device in a child process that imports that llvmlite. Without the variable it is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LLVMLITE22 = os.environ.get("CUBEPY_TEST_LLVMLITE22")
ROOT = Path(__file__).resolve().parents[2]


def _child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CUBEPY_TEST_LLVMLITE22"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [LLVMLITE22, env.get("PYTHONPATH")]))
    env["CUBEPY_TEST_DEVICES"] = "cpu"
    return env


@pytest.mark.skipif(not LLVMLITE22, reason="CUBEPY_TEST_LLVMLITE22 names no folder holding llvmlite 0.48-0.50")
def test_the_cpu_backend_and_its_conformance_pass_on_llvm_22_1():
    probe = subprocess.run([sys.executable, "-c", "import llvmlite.binding as l, cubepy as cb; "
                            "print(l.llvm_version_info[:2], cb.device('cpu').properties.name)"],
                           env=_child_env(), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.startswith("(22, 1)"), probe.stdout
    if "avx512vl" in Path("/proc/cpuinfo").read_text():
        assert "avx512vl off for LLVM 22.1" in probe.stdout
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "tests/cpu", "tests/conformance", "-k", "not cpu-p1 and not cpu-p64"],
                          env=_child_env(), cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
