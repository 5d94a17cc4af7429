"""The warm launch path, without a GPU: a recording backend packs real CUDA kernel parameters.

The backend renders each kernel with the CUDA dialect and packs its parameters with the CUDA
backend's `ArgPacker`; both its full launch and its direct launcher decode the packed memory the
way ``cuLaunchKernel`` reads it (through the pointer array). A warm launch must hand over exactly
what the full path would, and must fall back to the full path, launching nothing itself, for any
argument that differs in kind or fails a check.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np
import pytest
from cubepy.backends.cstyle import CUDA, render
from cubepy.backends.cuda.packing import (
    BUFFER,
    CODES,
    INLINE,
    LAUNCH_OK,
    SCALAR,
    SHAPE,
    ArgPacker,
    PackError,
    parameter_codes,
    parameter_slots,
)

import cubepy as cb
from cubepy import Array, Comptime, Mut, f16, f32, f64, i8, i64, u16
from cubepy.runtime.backend import Backend, DirectLauncher
from cubepy.runtime.device_arrays import DeviceArray, register_device_array
from cubepy.runtime.devices import Device
from cubepy.runtime.launch_checks import launch_in_bounds
from cubepy.runtime.properties import DeviceProperties

ERROR_RECORD = 0xE000


class FakeArray:
    """An array in the recording backend's "memory": only an address, a shape and a dtype."""

    def __init__(self, ptr, shape, dtype=np.float32, readonly=False):
        self.ptr, self.shape, self.dtype, self.readonly = ptr, tuple(shape), np.dtype(dtype), readonly


register_device_array(       # the quick facts of launch plans are read from the raw reader
    FakeArray, lambda a: DeviceArray(a, a.ptr, a.shape, a.dtype, a.readonly, "fake"),
    raw=lambda a: (a.dtype, a.shape, a.ptr, True, a.readonly, None), platform="fake")


def decode(rendered, params_address: int) -> tuple:
    """Each kernel parameter's value as cuLaunchKernel reads it: through the pointer array."""
    out = []
    for k, code in enumerate(parameter_codes(rendered)):
        cell = ctypes.c_void_p.from_address(params_address + 8 * k).value
        size = struct.calcsize("=" + code)
        out.append(struct.unpack("=" + code, ctypes.string_at(cell, size))[0])
    return tuple(out)


class RecordingBackend(Backend):
    name = "recording"
    host_memory = False
    device_array_platforms = frozenset({"fake"})

    def __init__(self):
        self.calls = []

    def probe(self, inline_array_bytes=0, checks_per_launch=False, **_) -> DeviceProperties:
        name = "recording" + (" by value" if inline_array_bytes else "") + (" per launch" if checks_per_launch else "")
        return DeviceProperties(
            name=name, backend=self.name, plane_dim=32, checks_per_cube=checks_per_launch,
            checks_per_launch=checks_per_launch,
            plane_size_min=32, plane_size_max=32, max_units_per_cube=1024, max_cube_dim=(1024, 1024, 64),
            max_cube_count=(2**31 - 1, 65535, 65535), shared_memory_per_cube=49152, vector_widths=(1, 2, 4, 8, 16),
            features=frozenset({"fp16", "fp64"}), inline_array_bytes=inline_array_bytes)

    def compile(self, kernel, properties):
        rendered = render(kernel, CUDA)
        errors = {k: ERROR_RECORD for k, slot in enumerate(rendered.args) if slot.kind == "error"}
        return rendered, ArgPacker(parameter_codes(rendered), errors), parameter_slots(rendered)

    def launch(self, executable, kernel, count, dim, args, properties, options):
        """The full path, written independently of the CUDA backend's loop: the oracle."""
        rendered, packer, slots = executable
        values = []
        for kind, param, extra in slots:
            if kind == LAUNCH_OK:     # the answer to the launch test, as the CUDA backend's full path asks it
                values.append(int(launch_in_bounds(kernel, count, dim, args)))
                continue
            a = args[param]
            if kind == BUFFER:
                assert isinstance(a, DeviceArray), "the recording backend only takes device arrays"
                if a.ptr % extra:
                    raise ValueError(f"argument '{kernel.params[param].name}' is misaligned")
                values.append(a.ptr)
            elif kind == SHAPE:
                values.append(a.shape[extra])
            elif kind == INLINE:
                assert isinstance(a, np.ndarray) and a.nbytes <= extra
                values.append(a.tobytes())
            else:
                assert kind == SCALAR
                values.append(extra(a))
        self.calls.append(("full", count, dim, decode(rendered, packer.pack(*values))))

    def direct_launcher(self, executable, kernel, properties, count, dim, options):
        rendered, packer, slots = executable
        names = {BUFFER: "pointer", SHAPE: "extent", INLINE: "inline", LAUNCH_OK: "launch_ok"}
        direct = tuple((names[kind], param, extra) if kind != SCALAR else ("scalar", param)
                       for kind, param, extra in slots)

        def launch(params_address):
            self.calls.append(("direct", count, dim, decode(rendered, params_address)))
        return DirectLauncher(direct, packer.submitter(launch))


@pytest.fixture
def rec():
    backend = RecordingBackend()
    return Device("recording", {}, backend.probe(), backend)


@pytest.fixture
def rec_launch():
    """The recording backend as CUDA decides launches: the answer to the launch test in a slot."""
    backend = RecordingBackend()
    return Device("recording", {}, backend.probe(checks_per_launch=True), backend)


@pytest.fixture
def rec_inline():
    """The recording backend as CUDA specializes: small read-only host arrays by value."""
    backend = RecordingBackend()
    return Device("recording", {}, backend.probe(inline_array_bytes=2048), backend)


@cb.kernel
def saxpy(x: Array[f32], y: Mut[Array[f32]], a: f32):
    i = cb.ABSOLUTE_POS
    if i < len(x):
        y[i] = a * x[i] + y[i]


@cb.kernel(checked=False)
def many(x: Array[f32], m: Mut[Array[f64]], k: Comptime[int], a: i8, b: u16, c: i64, d: f16, e: cb.bool_,
         f: f64):
    i = cb.ABSOLUTE_POS
    if i < m.shape[0]:
        m[i, 0] = f64(x[i // k]) + f64(a) + f64(b) + f64(c) + f64(d) + f64(e) + f
        m[i, 1] = f64(m.shape[1])


def _launch_twice(dev, launcher, *args):
    """Launch cold, then warm; return the recorded (path, count, dim, parameters) of both."""
    before = len(dev.backend.calls)
    launcher(*args, device=dev)
    launcher(*args, device=dev)
    return dev.backend.calls[before:]


def test_warm_launch_hands_over_what_the_full_path_does(rec):
    x, y = FakeArray(0x10000, (1000,)), FakeArray(0x20000, (1000,))
    cold, warm = _launch_twice(rec, saxpy[4, 256], x, y, 2.5)
    assert cold[0] == "full" and warm[0] == "direct"
    assert warm[1:] == cold[1:] == ((4, 1, 1), (256, 1, 1), (0x10000, 1000, 0x20000, 1000, 2.5, ERROR_RECORD))


def test_every_scalar_type_lines_2d_arrays_and_comptime(rec):
    x, m = FakeArray(0x10000, (64,)), FakeArray(0x40000, (256, 3), np.float64)
    args = (x, m, 4, -7, 65000, -(2**40), 1.0 / 3.0, True, 2.0**-30)
    cold, warm = _launch_twice(rec, many[2, 128], *args)
    assert warm[0] == "direct" and warm[1:] == cold[1:]
    values = warm[3]
    assert values[:2] == (0x10000, 64) and values[2:5] == (0x40000, 256, 3)
    assert values[5:8] == (-7, 65000, -(2**40))
    assert values[8] == float(np.float16(1.0 / 3.0))       # rounded to f16, passed as float
    assert values[9:] == (1, 2.0**-30)
    # NumPy scalars of the same kinds take the direct path too, with the same values
    np_args = (x, m, 4, np.int8(-7), np.uint16(65000), np.int64(-(2**40)), np.float64(1.0 / 3.0), np.bool_(True),
               np.float64(2.0**-30))
    cold, warm = _launch_twice(rec, many[2, 128], *np_args)
    assert warm[0] == "direct" and warm[3] == values


def test_lines_extents_count_lines(rec):
    x, y = FakeArray(0x10000, (1024,)), FakeArray(0x20000, (1024,))
    cold, warm = _launch_twice(rec, saxpy[1, 64], cb.lines(x, 4), cb.lines(y, 4), 1.0)
    assert warm[0] == "direct" and warm[1:] == cold[1:]
    assert warm[3][1] == warm[3][3] == 256


def test_a_different_kind_takes_the_full_path_then_warms_again(rec):
    launcher = saxpy[4, 256]
    x, y = FakeArray(0x10000, (1000,)), FakeArray(0x20000, (1000,))
    _launch_twice(rec, launcher, x, y, 2.0)
    rec.backend.calls.clear()
    launcher(x, y, 3, device=rec)                                   # int instead of float
    launcher(cb.lines(x, 4), cb.lines(y, 4), 2.0, device=rec)        # Lines now
    launcher(cb.lines(x, 4), cb.lines(y, 4), 2.0, device=rec)
    launcher(x, y, 2.0, device=rec)                                  # back to the first kinds
    assert [c[0] for c in rec.backend.calls] == ["full", "full", "direct", "full"]


def _x(ptr=0x10000, n=1024, **kw):
    return cb.lines(FakeArray(ptr, (n,), **kw), 4)


LINES_GOOD = (_x(), _x(0x20000), 1.0)
BAD_LINES = {
    "lines": ((_x(n=1022), LINES_GOOD[1], 1.0), "does not divide the last dimension"),
    "alias": ((LINES_GOOD[0], _x(0x10000 + 64), 1.0), "overlaps argument 'x'"),
    "align": ((_x(0x10004), LINES_GOOD[1], 1.0), "misaligned"),
    "readonly": ((LINES_GOOD[0], _x(0x20000, readonly=True), 1.0), "read-only"),
    "dtype": ((_x(dtype=np.int32), LINES_GOOD[1], 1.0), "expects"),
    "length": ((_x(n=2**31), LINES_GOOD[1], 1.0), "at most 2147482624"),
}
MANY_GOOD = (FakeArray(0x10000, (1024,)), FakeArray(0x40000, (64, 2), np.float64), 4, 1, 2, 3, 1.0, False, 2.0)
CASES = {**{k: (saxpy, LINES_GOOD, *v) for k, v in BAD_LINES.items()},
         "range": (many, MANY_GOOD, (*MANY_GOOD[:3], 128, *MANY_GOOD[4:]), "range is \\[-128, 127\\]")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_value_that_fails_a_check_raises_the_full_paths_error(rec, case):
    kernel, good, bad, error = CASES[case]
    launcher = kernel[1, 64]
    launcher(*good, device=rec)
    launcher(*good, device=rec)
    calls = len(rec.backend.calls)
    with pytest.raises((ValueError, TypeError), match=error):
        launcher(*bad, device=rec)
    assert len(rec.backend.calls) == calls     # nothing was launched
    launcher(*good, device=rec)                # and the warm path still works
    assert rec.backend.calls[-1][0] == "direct"


def test_a_scalar_that_does_not_fit_its_c_type_takes_the_full_path(rec):
    launcher = saxpy[4, 256]
    x, y = FakeArray(0x10000, (1000,)), FakeArray(0x20000, (1000,))
    _launch_twice(rec, launcher, x, y, 2.0)
    calls = len(rec.backend.calls)
    with pytest.raises(cb.ArgumentValueError, match="parameter 'a' is f32.*got 1e\\+300, which would become inf"):
        launcher(x, y, 1e300, device=rec)      # submit refuses it; the full path's check names it
    assert len(rec.backend.calls) == calls      # nothing was launched
    launcher(x, y, float("inf"), device=rec)    # an explicit inf is a value like any other
    assert rec.backend.calls[-1][3][4] == float("inf")


def test_the_generated_warm_path_is_straight_line_python(rec):
    launcher = saxpy[4, 256]
    x, y = FakeArray(0x10000, (1000,)), FakeArray(0x20000, (1000,))
    _launch_twice(rec, launcher, x, y, 2.0)
    compiled = saxpy.compile(x, y, 2.0, dim=256, device=rec)
    source = compiled.warm_path((4, 1, 1)).source
    assert "return submit(p0, s0[0], p1, s1[0], a2)" in source
    assert "for " not in source


def test_threads_pack_into_their_own_buffers(rec):
    launcher = saxpy[4, 256]
    y = FakeArray(0x20000, (1000,))
    _launch_twice(rec, launcher, FakeArray(0x10000, (1000,)), y, 2.0)
    barrier = threading.Barrier(4)

    def worker(t):
        barrier.wait()
        for r in range(200):
            launcher(FakeArray(0x100000 * (t + 2), (1000,)), y, float(t * 1000 + r), device=rec)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen = [c[3] for c in rec.backend.calls if c[3][0] >= 0x200000]
    assert len(seen) == 800
    assert all(v[0] == 0x100000 * (int(v[4]) // 1000 + 2) for v in seen)


def test_packer_constants_cells_and_refusals():
    packer = ArgPacker([CODES["pointer"], CODES["int8"], CODES["pointer"], CODES["float16"]], {2: 0xABC})
    address = packer.pack(0x1234, -5, 0.5)
    cells = [ctypes.c_void_p.from_address(address + 8 * k).value for k in range(4)]
    assert len(set(cells)) == 4 and all(c % 8 == 0 for c in cells)
    read = [struct.unpack("=" + c, ctypes.string_at(cell, struct.calcsize(c)))[0]
            for c, cell in zip("Qbqe", cells)]
    assert read == [0x1234, -5, 0xABC, 0.5]
    with pytest.raises(PackError):
        packer.pack(0x1234, 200, 0.5)
    with pytest.raises(PackError):
        packer.pack(-1, 1, 0.5)
    assert ArgPacker([]).pack() == 0


def test_every_new_thread_runs_the_packers_set_up_even_where_thread_ids_are_reused():
    seen = []
    packer = ArgPacker([CODES["int32"]], on_new_thread=lambda: seen.append(threading.get_ident()))
    for value in range(3):          # one after another: the runtime may hand out the same id again
        worker = threading.Thread(target=packer.pack, args=(value,))
        worker.start()
        worker.join()
    assert len(seen) == 3           # CUDA needs its context made current in each one


def test_a_scalar_in_device_memory_is_passed_by_address_and_read_by_the_kernel(rec):
    x, y, a = FakeArray(0x10000, (1000,)), FakeArray(0x20000, (1000,)), FakeArray(0x30000, ())
    compiled = saxpy.compile(x, y, a, dim=256, device=rec)
    assert [p.kind for p in compiled.parameters] == ["array", "array", "scalar_ref"]
    assert "a: f32 in device memory" in repr(compiled)
    calls = _launch_twice(rec, saxpy[4, 256], x, y, a)
    assert [c[3] for c in calls] == [(0x10000, 1000, 0x20000, 1000, 0x30000, 1, ERROR_RECORD)] * 2   # an address
    assert "@a: array1d<f32>" in compiled.ir
    assert "const float* __restrict__ a" in render(compiled.ir_module, CUDA).source
    with pytest.raises(TypeError, match="parameter 'a' expects a f32 scalar; a scalar in device memory must be "
                                        "one element of f32, got 2 of float32"):
        saxpy[4, 256](x, y, FakeArray(0x30000, (2,)), device=rec)
    with pytest.raises(TypeError, match="got 1 of float64"):
        saxpy[4, 256](x, y, FakeArray(0x30000, (1,), np.float64), device=rec)


class TwoGPUs(RecordingBackend):
    """The recording backend as GPU 0 of a platform whose arrays may live on another GPU."""

    def device_index(self, properties):
        return 0


class OnGPU(FakeArray):
    def __init__(self, ptr, shape, gpu):
        super().__init__(ptr, shape)
        self.gpu = gpu


register_device_array(OnGPU, lambda a: DeviceArray(a, a.ptr, a.shape, a.dtype, False, "fake", device_id=a.gpu),
                      raw=lambda a: (a.dtype, a.shape, a.ptr, True, False, a.gpu), platform="fake")


def test_an_array_on_another_gpu_is_refused_naming_it_and_both_devices():
    backend = TwoGPUs()
    gpu0 = Device("recording", {}, backend.probe(), backend)
    x, y = OnGPU(0x10000, (1000,), 0), OnGPU(0x20000, (1000,), 0)
    launcher = saxpy[4, 256]
    calls = _launch_twice(gpu0, launcher, x, y, 2.0)
    assert [c[0] for c in calls] == ["full", "direct"]
    for _ in range(2):                               # the warm path refuses it, and the full path says why
        with pytest.raises(ValueError, match="parameter 'y' is on fake:1, but the launch runs on fake:0 "
                                             "\\(recording\\); move it"):
            launcher(x, OnGPU(0x30000, (1000,), 1), 2.0, device=gpu0)
    assert len(backend.calls) == 2                   # nothing more was launched
    compiled = saxpy.compile(x, y, 2.0, dim=256, device=gpu0)
    with pytest.raises(ValueError, match="parameter 'x' is on fake:1"):
        compiled.run((4, 1, 1), (256, 1, 1), compiled.bind((OnGPU(0x40000, (1000,), 1), y, 2.0)))


def test_an_array_by_value_is_packed_as_its_bytes_padded_to_its_capacity(rec_inline):
    out, inp = FakeArray(0x10000, (100,), np.float64), FakeArray(0x20000, (115,), np.float64)
    coeff = np.linspace(-1.0, 1.0, 12)
    from benchmarks.rajaperf.apps.fir import fir

    launcher = fir[1, 128]
    cold, warm = _launch_twice(rec_inline, launcher, out, inp, coeff)
    assert cold[0] == "full" and warm[0] == "direct"
    padded = np.concatenate([coeff, np.zeros(4)]).tobytes()            # capacity 16
    assert warm[1:] == cold[1:] == ((1, 1, 1), (128, 1, 1), (0x10000, 100, 0x20000, 115, padded, 12, ERROR_RECORD))
    # 17 taps: another capacity, so the full path, which specializes for it; then warm again
    longer = np.linspace(-1.0, 1.0, 17)
    cold, warm = _launch_twice(rec_inline, launcher, out, inp, longer)
    assert cold[0] == "full" and warm[0] == "direct"
    assert warm[3][4] == cold[3][4] == np.concatenate([longer, np.zeros(15)]).tobytes()
    # a CuPy-like array for the taps: by address, as before
    device_taps = FakeArray(0x30000, (12,), np.float64)
    cold, warm = _launch_twice(rec_inline, launcher, out, inp, device_taps)
    assert warm[3][4] == cold[3][4] == 0x30000


@cb.kernel
def shifted(out: Mut[Array[f32]], x: Array[f32], d: cb.i32):
    i = cb.ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i + d]


# (0, 0, 5): no unit passes the guard, but the intervals do not tell an empty range apart: no
# (safe: the cube's test decides, and no cube reads)
@pytest.mark.parametrize("n_out, n_x, d, answer", [(1000, 1000, 0, 1), (1000, 1003, 3, 1), (1000, 1002, 3, 0),
                                                   (1000, 1000, -1, 0), (0, 0, 5, 0)])
def test_the_answer_to_the_launch_test_is_the_full_paths(rec_launch, n_out, n_x, d, answer):
    out, x = FakeArray(0x10000, (n_out,)), FakeArray(0x20000, (n_x,))
    launcher = shifted[4, 256]
    cold, warm, again = (*_launch_twice(rec_launch, launcher, out, x, d), *_launch_twice(rec_launch, launcher, out,
                                                                                         x, d)[1:])
    assert cold[0] == "full" and warm[0] == again[0] == "direct"
    assert warm[1:] == cold[1:] == again[1:]
    assert cold[3] == (0x10000, n_out, 0x20000, n_x, d, answer, ERROR_RECORD)


def test_the_warm_path_remembers_answers_per_extents_and_scalars(rec_launch):
    out, x = FakeArray(0x10000, (1000,)), FakeArray(0x20000, (1000,))
    launcher = shifted[4, 256]
    _launch_twice(rec_launch, launcher, out, x, 0)
    source = launcher.warm_path.source
    assert "key = (n0, a2, n1,)" in source and "ok = M" in source
    for d in (0, 1, 0, -1, 1):       # answers for other scalars: asked once each, then remembered
        launcher(out, x, d, device=rec_launch)
        assert rec_launch.backend.calls[-1][0] == "direct"
        assert rec_launch.backend.calls[-1][3][5] == int(d == 0)
