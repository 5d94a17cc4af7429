"""Ray: a kernel from __main__ (with a @cb.func helper) pickles into Ray tasks, before and after a
launch. Ray is not in the test extras (its install is large); the test runs where it is installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import subprocess_env

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent('''
    import numpy as np, ray, cubepy as cb
    from cubepy import Array, Mut, f32

    @cb.func
    def square(v):
        return v * v

    @cb.kernel
    def kernel(x: Array[f32], y: Mut[Array[f32]]):
        i = cb.ABSOLUTE_POS
        if i < len(x):
            y[i] = square(x[i]) + 1.0

    @ray.remote
    def task(k, x):
        y = np.zeros_like(x)
        k[(len(x) + 255) // 256, 256](x, y, device="cpu")
        return y

    if __name__ == "__main__":
        x = np.arange(1000, dtype=np.float32)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        before = ray.get(task.remote(kernel, x))
        kernel[4, 256](x, np.zeros_like(x), device="cpu")
        after = ray.get([task.remote(kernel, x) for _ in range(3)])
        ray.shutdown()
        print("ray ok" if all(np.array_equal(y, x * x + 1) for y in [before, *after]) else "ray wrong")
''')


def test_a_kernel_runs_in_ray_tasks_before_and_after_a_launch(tmp_path):
    script = tmp_path / "ray_program.py"
    script.write_text(PROGRAM)
    env = subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ray ok" in run.stdout
