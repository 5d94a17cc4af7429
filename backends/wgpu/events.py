"""Events on the adapter's clock: a timestamp written by an empty compute pass, in queue order."""

from __future__ import annotations

import numpy as np

from cubepy.runtime.events import not_recorded


class TimestampEvent:
    """A mark in the device's queue (an empty pass that writes a timestamp), read once when needed."""

    def __init__(self, wgpu, device, period_ns: float = 1.0):
        self._wgpu, self._device, self._period = wgpu, device, period_ns
        self._buffer = None
        self._ticks: int | None = None

    def record(self) -> None:
        wgpu, device = self._wgpu, self._device
        query = device.create_query_set(type=wgpu.QueryType.timestamp, count=1)
        self._buffer = device.create_buffer(size=8, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        encoder = device.create_command_encoder()
        mark = encoder.begin_compute_pass(timestamp_writes={"query_set": query, "beginning_of_pass_write_index": 0})
        mark.end()
        encoder.resolve_query_set(query, 0, 1, self._buffer, 0)
        device.queue.submit([encoder.finish()])
        self._ticks = None

    def _read(self) -> int:
        not_recorded(self._buffer is None)
        if self._ticks is None:
            self._ticks = int(np.frombuffer(self._device.queue.read_buffer(self._buffer), np.uint64)[0])
        return self._ticks

    def synchronize(self) -> None:
        self._read()

    def elapsed_ms(self, start: TimestampEvent) -> float:
        return (self._read() - start._read()) * self._period * 1e-6

    def done(self) -> bool:
        return self._ticks is not None        # wgpu tells only by reading the timestamp, which waits


__all__ = ["TimestampEvent"]
