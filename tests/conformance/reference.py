"""The interpreter as the reference: one launch on the device under test and one on the interpreter."""

from __future__ import annotations

import cubepy as cb


def on_device_and_interpreter(dev: cb.Device, kernel, count, dim, make_args) -> tuple[list, list]:
    """Launch ``kernel`` on ``dev`` and on the interpreter at the same plane size, each on fresh
    arguments from ``make_args()``; return (device arguments, interpreter arguments) after them."""
    got, want = make_args(), make_args()
    kernel.launch(count, dim, *got, device=dev)
    dev.synchronize()
    kernel[count, dim](*want, device=cb.device("interp", plane_dim=dev.properties.plane_dim))
    return got, want
