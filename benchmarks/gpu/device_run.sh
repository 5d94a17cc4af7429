#!/usr/bin/env bash
# One call on the GPU machine: install (offline), then the stages named on the command line
# (default: all of them). Logs and JSON go to $OUT (as one archive, device_logs.tgz, where there are
# more than the 8 files a device call returns).
#
#   bash benchmarks/gpu/device_run.sh [first] [fir] [checks] [fuzz] [conformance] [frameworks] [launch] [bench] [rajaperf] [queued] [cold] [ptxjit] [codesize] [replay] [tests] [matvec] [profcost] [tuned] [deldot] [firproven] [energy] [wgpu]
#
# first:       what was built without a GPU since the last run (docs/device-runs.md): events and
#              profiling intervals, the nn.Parameter fix (examples/torch_op.py), the two builds of a
#              kernel with a launch test, stream= launches alternating between streams, the
#              autotuned launcher's call key
# fir:         FIR with its taps by value: fir_isolation.py and the suite's FIR (about 2 minutes)
# checks:      checked mode's cost with checks per launch: the suite against Base_CUDA, checked and
#              unchecked, both sizes (the tenth session's command; CHECK_SIZES=32x for one; CHECK_PEERS=cuda,cuda-strict
#              adds Base_CUDA built without FMA contraction), and the PTX/SASS counts
# fuzz:        the differential fuzzer against cuda, cuda-cubes and their NVRTC --Ofast-compile=max forms by turns (FUZZ_KERNELS kernels, 20000 by default, or
#              FUZZ_MINUTES), started in the background so the test stages run beside it; the
#              script waits for it at the end. FUZZ_STATE=FILE makes it one run over several
#              calls (tests/fuzz/resume.py)
# conformance: the conformance suite on CUDA and NVIDIA's OpenCL, the CUDA device tests
# frameworks:  PyTorch/JAX/DLPack, Dask and disk-cache tests on CUDA, the examples, the framework benchmark
# launch:      host cost per warm launch of every launch form (profile_launch.py, launch_forms.py)
# bench:       the GPU benchmarks (bench_gpu.py)
# rajaperf:    the RAJAPerf apps suite against hand-written CUDA, numba-cuda and Triton
# queued:      the suite at the default size (QUEUED_SIZES), checked and unchecked against Base_CUDA, with each
#              sample enqueued behind a held stream (--timer queued): GPU time without the host's launch rate
# cold:        a fresh process's cold and warm start on CUDA (cold_start.py)
# codesize:    PTX and SASS counts of every RAJAPerf kernel, checked and unchecked, per cube
# ptxjit:      a cold build as a cubin from NVRTC against PTX and the driver's JIT (ptx_jit.py)
# profcost:    what a launch inside cb.profile() costs with CUPTI's records (the default) and with
#              events, and CUDA's events' part of it (profile_cost.py, twice)
# tuned:       the tuned ports of MATVEC_3D_STENCIL and LTIMES, checked and unchecked, each build at
#              the faster of the two builds' autotuned shapes, against Base_CUDA: event timer and queued
# deldot:      DEL_DOT_VEC_2D's checked run test as a branch and as a clamp, against Base_CUDA (deldot_run_test.py)
# firproven:   FIR's checked and unchecked builds through cubepy and launched raw, Base_CUDA with unused
#              parameters (fir_proven.py)
# energy:      ENERGY's six kernels alone and in order: Base_CUDA with cubepy's index arithmetic, cubepy's
#              source launched raw with Base_CUDA's (energy_isolation.py; ENERGY_SIZES, ENERGY_SAMPLES)
# matvec:      MATVEC_3D_STENCIL's ports checked and unchecked, tuned and strict (matvec_isolation.py)
# tests:       pytest on TESTS (files or folders) with CUBEPY_TEST_DEVICES=TEST_DEVICES (default cuda,opencl)
# wgpu:        WebGPU through NVIDIA's Vulkan driver (carry .gl with the loaders, as the device notes say,
#              and wgpu's wheel in .whl): the probed quirks, then the conformance suite and the WebGPU
#              backend's tests on device wgpu
# replay:      run one fuzz seed (REPLAY_SEED) on REPLAY_DEVICES (default cuda), shrink it if it fails
#              and print the small kernel
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
stages=${*:-conformance frameworks launch bench rajaperf}
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || cat "$out/install.log"
# JAX must not take 75% of the GPU's memory at start: CuPy and torch share the device here.
export PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cubepy-cache XLA_PYTHON_CLIENT_PREALLOCATE=false
# NVIDIA's OpenCL driver: register its ICD if the image did not.
if [ ! -e /etc/OpenCL/vendors/nvidia.icd ]; then
    lib=$(find / -name 'libnvidia-opencl.so*' 2>/dev/null | head -1)
    if [ -n "$lib" ]; then mkdir -p /tmp/icd && echo "$lib" > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; fi
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
python3 -c "import cubepy as cb; [print(d) for d in cb.devices()]" | tee "$out/devices.txt"
python3 -c "import torch, jax, cupy; print('torch', torch.__version__, 'jax', jax.__version__, jax.devices(),
            'cupy', cupy.__version__)" 2>&1 | tail -1 | tee -a "$out/devices.txt"

for stage in $stages; do
    echo "=== $stage"
    case $stage in
    first)
        CUBEPY_TEST_DEVICES=cuda timeout 200 python3 -m pytest -p no:cacheprovider -q -rfs \
            --junitxml "$out/first.xml" tests/runtime/test_events.py tests/runtime/test_profile.py \
            tests/backends/test_cuda_interval.py tests/runtime/test_device_arrays.py tests/backends/test_contract.py \
            tests/gpu/test_cuda_device.py tests/runtime/test_launch_checks.py tests/runtime/test_warm_path.py \
            tests/autotune/test_autotune.py \
            2>&1 | tee "$out/first.log" | tail -6
        timeout 120 python3 examples/torch_op.py 2>&1 | tail -3 | tee "$out/torch_op.log" ;;
    fuzz)
        # every core but a few (the tests beside it), the workers spread over every GPU of the host:
        # on an 8-GPU, 128-core host about 120 workers, so 20,000 kernels (about 2 s of one core
        # each, 2026-12-05) fit in one call
        gpus=$(nvidia-smi -L | wc -l)
        timeout ${FUZZ_TIMEOUT:-560} python3 -m tests.fuzz --devices ${FUZZ_DEVICES:-cuda,cuda-fast,cuda-cubes,cuda-cubes-fast} --alternate --workers ${FUZZ_WORKERS:-$(( $(nproc) - 4 ))} \
            --gpus ${FUZZ_GPUS:-$gpus} \
            --kernels ${FUZZ_KERNELS:-20000} --minutes ${FUZZ_MINUTES:-8} --seed ${FUZZ_SEED:-5000000} --no-shrink \
            ${FUZZ_STATE:+--state "$FUZZ_STATE"} \
            >"$out/fuzz.log" 2>&1 &
        fuzz_pid=$! ;;
    fir)
        timeout 120 python3 benchmarks/gpu/fir_isolation.py 2>&1 | tee "$out/fir_isolation.log"
        timeout 240 python3 -m benchmarks.rajaperf --kernels FIR --device cuda --sizes default,32x --reps 11 \
            --progress plain --json "$out/rajaperf_fir.json" 2>&1 | tee "$out/rajaperf_fir.log" | tail -30 ;;
    checks)
        timeout ${CHECK_TIMEOUT:-420} python3 -m benchmarks.rajaperf --device cuda --sizes ${CHECK_SIZES:-default,32x} --peers ${CHECK_PEERS:-cuda} --no-transfer \
            --reps 11 --progress plain --json "$out/rajaperf_checks.json" 2>&1 | tee "$out/rajaperf_checks.log" | tail -40
        timeout 120 python3 -m benchmarks.rajaperf.code_size --sass --per-cube 2>&1 | tee "$out/code_size.log" ;;
    queued)
        timeout 300 python3 -m benchmarks.rajaperf --device cuda --sizes ${QUEUED_SIZES:-default} --peers cuda --no-transfer \
            --reps ${QUEUED_REPS:-21} --timer queued --progress plain --json "$out/rajaperf_queued.json" 2>&1 \
            | tee "$out/rajaperf_queued.log" | tail -40 ;;
    cold)
        timeout 240 python3 benchmarks/gpu/cold_start.py --device cuda --runs 5 --profile ${COLD_PROFILE:-0} --out "$out/cold_start.json" \
            2>&1 | tee "$out/cold_start.log" | tail -120 ;;
    ptxjit)
        CUDA_CACHE_DISABLE=1 timeout 120 python3 benchmarks/gpu/ptx_jit.py --runs 5 --fuzz-seeds 5000001 --out "$out/ptx_jit.json" 2>&1 | tee "$out/ptx_jit.log" ;;
    profcost)
        timeout 120 python3 benchmarks/gpu/profile_cost.py --out "$out/profile_cost.json" 2>&1 | tee "$out/profile_cost.log"
        CUBEPY_PROFILE_TIMER=events timeout 120 python3 benchmarks/gpu/profile_cost.py 2>&1 | tee "$out/profile_cost_events.log" ;;
    tuned)
        for timer in events queued; do
            timeout 240 python3 -m benchmarks.rajaperf --kernels MATVEC_3D_STENCIL,LTIMES --device cuda --sizes default,32x \
                --peers cuda --no-transfer --reps 11 --timer $timer --progress plain --json "$out/rajaperf_tuned_$timer.json" \
                2>&1 | tee "$out/rajaperf_tuned_$timer.log" | grep -E "tuned|Base_CUDA\)  |checked /"
        done ;;
    deldot)
        timeout 240 python3 benchmarks/gpu/deldot_run_test.py --samples 21 2>&1 | tee "$out/deldot_run_test.log" ;;
    firproven)
        timeout 240 python3 benchmarks/gpu/fir_proven.py --samples 31 2>&1 | tee "$out/fir_proven.log" ;;
    energy)
        timeout 400 python3 benchmarks/gpu/energy_isolation.py --sizes ${ENERGY_SIZES:-32x,default} \
            --samples ${ENERGY_SAMPLES:-21} 2>&1 | tee "$out/energy_isolation.log" ;;
    matvec)
        timeout 240 python3 benchmarks/gpu/matvec_isolation.py 2>&1 | tee "$out/matvec_isolation.log" ;;
    tests)
        CUBEPY_TEST_DEVICES=${TEST_DEVICES:-cuda,opencl} timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q \
            -p no:cacheprovider -rfs --junitxml "$out/tests.xml" ${TESTS:?set TESTS} 2>&1 | tee "$out/tests.log" | tail -15 ;;
    replay)
        timeout ${REPLAY_TIMEOUT:-400} python3 -m tests.fuzz --replay "${REPLAY_SEED:?set REPLAY_SEED}" \
            --devices ${REPLAY_DEVICES:-cuda} 2>&1 | tee "$out/replay.log" | tail -80 ;;
    wgpu)
        if ls .gl/*.deb >/dev/null 2>&1; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
        if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
            export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        fi
        timeout 120 python3 -c "from cubepy.backends.wgpu import WgpuBackend
b = WgpuBackend(); p = b.probe(); print(p); print(b.quirks(p))" 2>&1 | tee "$out/wgpu_probe.log" | tail -5
        CUBEPY_TEST_DEVICES=wgpu timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider -rfs \
            --tb=short --junitxml "$out/wgpu.xml" tests/conformance tests/backends/test_wgpu.py 2>&1 | tee "$out/wgpu.log" | tail -15
        # what failed, in short (the call's output keeps only its last 12,000 characters)
        sed -n '/= FAILURES =/,/short test summary/p' "$out/wgpu.log" | cut -c1-220 | head -150 ;;
    codesize)
        timeout 120 python3 -m benchmarks.rajaperf.code_size --sass --per-cube 2>&1 | tee "$out/code_size.log" ;;
    conformance)
        CUBEPY_TEST_DEVICES=cuda,opencl timeout 360 python3 -m pytest -p no:cacheprovider -q -rfs \
            --junitxml "$out/conformance.xml" tests/conformance tests/gpu/test_cuda_device.py \
            tests/runtime/test_events.py tests/runtime/test_warm_path.py tests/runtime/test_compiled.py \
            2>&1 | tee "$out/conformance.log" | tail -4 ;;
    frameworks)
        CUBEPY_TEST_DEVICES=cuda timeout 300 python3 -m pytest -p no:cacheprovider -q -rfs \
            --junitxml "$out/frameworks.xml" tests/frameworks tests/distributed 2>&1 | tee "$out/frameworks.log" \
            | grep -E "passed|failed|^FAILED|^ERROR" | tail -25
        timeout 120 python3 examples/torch_op.py 2>&1 | tail -3
        timeout 120 python3 examples/jax_op.py 2>&1 | tail -3
        timeout 180 python3 benchmarks/frameworks/bench_frameworks.py --device cuda --out "$out/frameworks.json" \
            2>&1 | tee "$out/bench_frameworks.log" | tail -30 ;;
    launch)
        timeout 60 python3 benchmarks/gpu/profile_launch.py 2>&1 | tee "$out/profile_launch.log" | head -40
        timeout 120 python3 benchmarks/gpu/launch_forms.py --device cuda --out "$out/launch_forms.json" \
            2>&1 | tee "$out/launch_forms.log" | tail -14 ;;
    bench)
        timeout 240 python3 benchmarks/gpu/bench_gpu.py --out "$out/bench_gpu.json" 2>&1 | tee "$out/bench_gpu.log" ;;
    rajaperf)
        timeout ${RAJAPERF_TIMEOUT:-540} python3 -m benchmarks.rajaperf --device cuda --sizes default,32x \
            --reps ${RAJAPERF_REPS:-11} --progress plain \
            --json "$out/rajaperf_cuda.json" --plot "$out/rajaperf_cuda.png" 2>&1 | tee "$out/rajaperf_cuda.log" \
            | tail -60 ;;
    *)
        echo "unknown stage $stage" ;;
    esac
done
if [ -n "${fuzz_pid:-}" ]; then
    wait "$fuzz_pid"; echo "fuzz exit $?"; tail -25 "$out/fuzz.log"
    # a resumable run (FUZZ_STATE, e.g. .devtmp/fuzz_run.jsonl: ignored, so it stays on a warm
    # machine between calls; carry it to a fresh one) comes back with the call's files too
    if [ -n "${FUZZ_STATE:-}" ]; then cp "$FUZZ_STATE" "$out/"; fi
fi
# a device call returns at most 8 files: more than that come back as one archive
if [ "$(find "$out" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
    tar czf /tmp/device_logs.tgz -C "$out" . && find "$out" -maxdepth 1 -type f -delete && mv /tmp/device_logs.tgz "$out/"
    echo "the $out files are in $out/device_logs.tgz"
fi
