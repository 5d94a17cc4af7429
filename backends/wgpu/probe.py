"""Run a probe shader once: one workgroup, the given arrays bound read-only in order, then one
``array<u32>`` output; what the device wrote comes back. The adapter's facts (`quirks`,
`subgroups`) are found this way when the device opens."""

from __future__ import annotations

import numpy as np


def run_once(state, source: str, inputs: list[np.ndarray], words: int, entry: str = "probe") -> np.ndarray:
    """Run ``entry`` of the WGSL ``source`` as one workgroup on ``state``'s device (a
    `_DeviceState`), ``inputs`` at bindings 0.. and the output of ``words`` u32 after them; the
    output's words. Raises whatever wgpu raises for a shader the adapter cannot build or run."""
    wgpu, device = state.wgpu, state.device
    usage = wgpu.BufferUsage
    buffers = [device.create_buffer_with_data(data=x.tobytes(), usage=usage.STORAGE) for x in inputs]
    out = device.create_buffer(size=4 * words, usage=usage.STORAGE | usage.COPY_SRC)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": device.create_shader_module(code=source), "entry_point": entry})
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": k, "resource": {"buffer": b}} for k, b in enumerate([*buffers, out])])
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(1)
    compute.end()
    device.queue.submit([encoder.finish()])
    return np.frombuffer(device.queue.read_buffer(out), np.uint32)[:words].copy()


__all__ = ["run_once"]
