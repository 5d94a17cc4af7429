"""``stream=`` on the CUDA backend's direct warm path, against a stand-in for CuPy: the handle a
launch names is its own stream's, whichever stream came before, and a stream of another GPU is
refused however often it was used on its own (a GPU runs the launches in tests/gpu/test_cuda_device.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from cubepy.backends import cuda as cuda_backend

from cubepy.errors import ArgumentValueError


class FakeStream:
    def __init__(self, ptr: int, device_id: int = 0):
        self.ptr, self.device_id = ptr, device_id


class NotAStream:
    """Neither a CuPy stream nor a handle."""


@pytest.fixture
def backend(monkeypatch):
    checked = []

    def stream_of(cp, stream, kernel_name, device_index=None):
        checked.append(stream)
        return original(cp, stream, kernel_name, device_index)
    original = cuda_backend._cupy_stream
    fake = SimpleNamespace(cuda=SimpleNamespace(Stream=FakeStream, ExternalStream=FakeStream))
    monkeypatch.setattr(cuda_backend, "_cupy", lambda: fake)
    monkeypatch.setattr(cuda_backend, "_cupy_stream", stream_of)
    b = cuda_backend.CudaBackend()
    b._devices = {"gpu0": 0, "gpu1": 1}           # device properties -> GPU index, as probe fills it
    return b, checked


def named(backend, stream, properties="gpu0") -> int:
    with backend.direct_stream(stream, properties):
        return cuda_backend._NAMED.ptr


def test_each_launch_names_its_own_stream_and_a_repeat_skips_the_checks(backend):
    b, checked = backend
    first, second = FakeStream(0x100), FakeStream(0x200)
    order = [first, first, second, first, second, second]
    assert [named(b, s) for s in order] == [s.ptr for s in order]
    assert checked == [first, second, first, second]          # checked when the stream changes
    assert cuda_backend._NAMED.ptr is None                    # the scope gives the stream back
    assert named(b, 0x300) == 0x300                           # a raw handle as it is


def test_a_stream_of_another_gpu_is_refused_after_use_on_its_own(backend):
    b, _ = backend
    mine = FakeStream(0x100, device_id=0)
    assert named(b, mine, "gpu0") == 0x100
    with pytest.raises(ArgumentValueError, match="belongs to cuda:0"):
        named(b, mine, "gpu1")
    with pytest.raises(TypeError, match="stream= takes a cupy.cuda.Stream"):
        named(b, NotAStream())
