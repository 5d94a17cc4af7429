"""torch.distributed: two gloo ranks each run a cubepy op on their shard and all-reduce."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import subprocess_env

pytest.importorskip("torch", exc_type=ModuleNotFoundError)
ROOT = Path(__file__).resolve().parents[2]


def test_two_gloo_ranks_run_a_cubepy_op_and_all_reduce(tmp_path):
    env = subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache"), CUBEPY_DEVICE="cpu")
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "torch_distributed.py"), "--backend", "gloo"],
                         capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "torch_distributed ok: 2 ranks (gloo)" in run.stdout


def _gpus() -> int:
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.skipif(_gpus() < 2, reason="NCCL takes one GPU per rank: this needs 2 GPUs")
def test_two_nccl_ranks_one_gpu_each(tmp_path):
    env = subprocess_env(CUBEPY_CACHE_DIR=str(tmp_path / "cache"), NCCL_NVLS_ENABLE="0")
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "torch_distributed.py"), "--backend", "nccl"],
                         capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "torch_distributed ok: 2 ranks (nccl)" in run.stdout
