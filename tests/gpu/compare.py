"""Run one launch on a device and on the interpreter, from identical copies of the arguments."""

from __future__ import annotations

import numpy as np

import cubepy as cb
from cubepy.lang.types import LinesArg


def _copy(a):
    if isinstance(a, np.ndarray):
        return a.copy()
    if isinstance(a, LinesArg):
        return cb.lines(a.array.copy(), a.width)
    return a


def _host(a):
    return a.array if isinstance(a, LinesArg) else a


def run_both(kfn, count, dim, args, device, plane_dim=32):
    """(device outputs, interpreter outputs): every array argument after the launch."""
    ref_args = [_copy(a) for a in args]
    dev_args = [_copy(a) for a in args]
    kfn.launch(count, dim, *ref_args, device=cb.device("interp", plane_dim=plane_dim))
    kfn.launch(count, dim, *dev_args, device=device)
    device.synchronize()
    keep = [i for i, a in enumerate(args) if isinstance(_host(a), np.ndarray)]
    return [_host(dev_args[i]) for i in keep], [_host(ref_args[i]) for i in keep]


def assert_same(got, want, rtol=1e-5, atol=1e-5):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)
