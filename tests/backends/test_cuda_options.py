"""NVRTC options the CUDA backend chooses by NVRTC's version (no GPU needed)."""

from __future__ import annotations

import sys
import types

import cubepy.backends.cuda as cuda_backend
import pytest


@pytest.mark.parametrize("version, expected", [((12, 3), ()), ((12, 4), ("-minimal",)), ((13, 0), ("-minimal",))])
def test_minimal_is_passed_to_nvrtc_from_12_4_on(monkeypatch, version, expected):
    nvrtc = types.SimpleNamespace(getVersion=lambda: version)
    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.nvrtc = nvrtc
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", libs)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.nvrtc", nvrtc)
    monkeypatch.setattr(cuda_backend, "_VERSION", None)
    assert cuda_backend._minimal_option() == expected


def test_without_cupys_nvrtc_bindings_no_option_is_added(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs", None)     # import fails
    monkeypatch.setattr(cuda_backend, "_VERSION", None)
    assert cuda_backend._minimal_option() == ()


@pytest.mark.parametrize("bad", ["fast", 3, True])
def test_fast_compile_takes_nvrtcs_levels_only(bad):
    with pytest.raises(cuda_backend.ArgumentValueError, match="fast_compile must be"):
        cuda_backend.CudaBackend().probe(fast_compile=bad)


def test_fast_compile_needs_nvrtc_12_9(monkeypatch):
    monkeypatch.setattr(cuda_backend, "_VERSION", (12, 8))
    with pytest.raises(cuda_backend.ArgumentValueError, match="needs NVRTC 12.9"):
        cuda_backend.CudaBackend().probe(fast_compile="max")
