"""Hand-reduced CUDA reproducers of the ptxas miscompiles the fuzzer found (docs/fuzzing.md).

    python -m tests.fuzz.ptxas_repros            # on a machine with an NVIDIA GPU and CuPy

Each kernel is compiled by NVRTC as cubepy compiles (C++17, this GPU's architecture) with ptxas
at its default level and at -O0, run on inputs for which C gives one answer, and reported as
``right`` or ``WRONG`` per level. The PTX that NVRTC writes is right in each case (read by hand),
so a wrong answer at the default level only is ptxas's. The seed is the fuzzer kernel that led
to it (`python -m tests.fuzz --replay SEED --devices cuda`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

# x for the integer kernels: two values above the parameters, one far below, one between
_X = np.array([210367169, 20, 2925083329, 7] * 16, dtype=np.uint32)


@dataclass(frozen=True)
class Repro:
    name: str
    seed: int
    body: str                # the kernel's body; i = threadIdx.x
    what: str
    kind: str = "int"        # the parameters: "float", "int" or "short" (_PARAMS)

    def source(self) -> str:
        return (f'extern "C" __global__ void {self.name}({_PARAMS[self.kind]}) {{\n    int i = threadIdx.x;\n'
                f"    {self.body}\n}}")


_PARAMS = {"float": "const signed char* x, float* out", "int": "const unsigned int* xu, int s, int n, int* out",
           "short": "const short* x, short* out"}


REPROS = (
    Repro("negative_zero_select", 14000430, "out[i] = (x[i] > 7) ? -1.0f : -0.0f;    // x[i] <= 7: -0.0f",
          "a float select of -1.0 and -0.0 becomes SEL of the integers -1 and 0, then I2FP: -0.0 turns +0.0",
          "float"),
    Repro("negative_zero_select_opaque", 14000430,
          "unsigned int t; asm(\"mov.u32 %0, %%tid.x;\" : \"=r\"(t));\n"
          "    out[i] = (x[i] > 7) ? -1.0f : __int_as_float(0x80000000u | (t >> 31));",
          "cubepy's workaround (backends/cstyle/dialect.py): -0.0 as the sign bit or'ed with bit 31 of %tid.x, "
          "a value no compiler can fold; should be right at both levels", "float"),
    Repro("negated_parameter_in_nested_min", 16001842, "int v = (int)xu[i]; out[i] = min(s, min(-n, v));",
          "VIMNMX3 of s, n and v: the negation of the parameter n is dropped (wrong at ptxas -O1 to -O3)"),
    Repro("negated_parameter_in_nested_max", 16001842, "int v = (int)xu[i]; out[i] = max(s, max(-n, v));",
          "the same with max"),
    Repro("negated_short_then_sign_fill", 17003030,
          "short p = (short)((((int)((unsigned int)(-(unsigned int)x[i]) & 65535u)) ^ 32768) - 32768);\n"
          "    out[i] = p < 0 ? (short)-1 : (short)0;    // NVVM: neg.s16 then shr.s16 15",
          "neg.s16 then shr.s16 by 15 become IADD3 -R and SHF.R.S32.HI 0xf on the sign-extended word: the "
          "negation of -32768 is not wrapped to 16 bits, and the shift gives 1 (cubepy now wraps through an "
          "opaque cvt.s32.s16)", "short"),
)

_REFERENCE = {
    "negated_parameter_in_nested_min": lambda v, s, n: np.minimum(s, np.minimum(-n, v)),
    "negated_parameter_in_nested_max": lambda v, s, n: np.maximum(s, np.maximum(-n, v)),
}


def _launch(repro: Repro, function, cp) -> bool:
    """Run the kernel on 64 units; True if every output is what C says."""
    if repro.kind == "float":
        x = cp.asarray(np.arange(-56, 8, dtype=np.int8))
        out = cp.full(64, 12345.0, cp.float32)
        function((1,), (64,), (x, out))
        return bool(np.signbit(out.get()).all() and (out.get() == 0).all())
    if repro.kind == "short":
        x = np.array([-32768, -1, 0, 1, 32767, -2, 7, -300] * 8, np.int16)
        out = cp.full(64, 0x5A5A, cp.int16)
        function((1,), (64,), (cp.asarray(x), out))
        negated = (-x.astype(np.int64) + 2**15) % 2**16 - 2**15
        return bool((out.get() == np.where(negated < 0, -1, 0)).all())
    s, n = np.int32(13), np.int32(62)
    out = cp.full(64, 0x5A5A5A5A, cp.int32)
    function((1,), (64,), (cp.asarray(_X), s, n, out))
    return bool((out.get() == _REFERENCE[repro.name](_X.view(np.int32), s, n)).all())


def run_all() -> list[tuple[str, str, str, int]]:
    import cupy as cp

    arch = "".join(map(str, cp.cuda.Device().compute_capability))
    rows = []
    for repro in REPROS:
        verdicts = []
        for label, extra in (("default", ()), ("-O0", ("--ptxas-options=-O0",))):
            module = cp.RawModule(code=repro.source(), options=("--std=c++17", f"--gpu-architecture=sm_{arch}",
                                                                *extra))
            ok = _launch(repro, module.get_function(repro.name), cp)
            verdicts.append(f"{label}: {'right' if ok else 'WRONG'}")
        rows.append((repro.name, ", ".join(verdicts), repro.what, repro.seed))
    return rows


def main() -> int:
    try:
        rows = run_all()
    except ImportError:
        print("needs CuPy and an NVIDIA GPU", file=sys.stderr)
        return 2
    for name, verdicts, what, seed in rows:
        print(f"{name:32s} {verdicts:28s} seed {seed}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
