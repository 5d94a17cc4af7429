"""Every example runs as a program and checks its own result."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted(pathlib.Path(__file__).resolve().parents[2].joinpath("examples").glob("*.py"))


NEEDS = {"torch_op": "torch", "jax_op": "jax", "dask_map_blocks": "distributed", "torch_distributed": "torch"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_and_checks_itself(path):
    if path.stem in NEEDS:
        pytest.importorskip(NEEDS[path.stem])
    env = dict(os.environ)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " ok" in result.stdout


def test_there_are_seven_examples():
    assert {p.stem for p in EXAMPLES} >= {"saxpy", "cube_reduce", "plane_reduce", "histogram", "transpose",
                                          "softmax", "regions"}
