#!/usr/bin/env bash
# One call on the GPU machine: install (offline), run the conformance suite on CUDA and NVIDIA's
# OpenCL, the CUDA device tests, and the GPU benchmarks. Logs go to $OUT.
set -u
out=${OUT:-/tmp/out}; mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1 || cat "$out/install.log"
export PYTHONUNBUFFERED=1 CUBEPY_CACHE_DIR=/tmp/cubepy-cache
# NVIDIA's OpenCL driver: register its ICD if the image did not.
if [ ! -e /etc/OpenCL/vendors/nvidia.icd ]; then
    lib=$(find / -name 'libnvidia-opencl.so*' 2>/dev/null | head -1)
    if [ -n "$lib" ]; then mkdir -p /tmp/icd && echo "$lib" > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd; fi
fi
echo "OpenCL ICDs: ${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}: $(ls ${OCL_ICD_VENDORS:-/etc/OpenCL/vendors} 2>&1)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
python3 -c "import cubepy as cb; [print(d) for d in cb.devices()]" | tee "$out/devices.txt"
python3 -c "import pyopencl as cl; [print(d.name, d.version, [e for e in d.extensions.split() if 'group' in e])
            for p in cl.get_platforms() for d in p.get_devices()]" 2>&1 | tee -a "$out/devices.txt"
CUBEPY_TEST_DEVICES=cuda,opencl timeout 300 python3 -m pytest -p no:cacheprovider -rfs --junitxml "$out/conformance.xml" \
    tests/conformance tests/gpu/test_cuda_device.py tests/runtime/test_events.py tests/runtime/test_warm_path.py 2>&1 | tee "$out/conformance.log" | tail -3
timeout 60 python3 benchmarks/gpu/profile_launch.py 2>&1 | tee "$out/profile_launch.log" | head -60
timeout 240 python3 benchmarks/gpu/bench_gpu.py --out "$out/bench_gpu.json" 2>&1 | tee "$out/bench_gpu.log"
