"""The compiler flags of each C dialect's two floating-point modes (strict, ``fastmath="algebraic"``),
apart from the dialects themselves: a backend reads them when it compiles a kernel restored from the
trace index, which needs no renderer and no dialect (`cubepy.runtime.trace_index`)."""

CUDA_FP_FLAGS = {None: ("--fmad=false",), "algebraic": ("--fmad=true", "--prec-div=false", "--prec-sqrt=false")}
HIP_FP_FLAGS = {None: ("-ffp-contract=off",), "algebraic": ("-ffp-contract=fast", "-fno-honor-signed-zeros")}
OPENCL_FP_FLAGS = {None: (), "algebraic": ("-cl-mad-enable",)}
