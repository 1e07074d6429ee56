#!/bin/bash
# compile_check.sh: compile the GPU engine for AMD (Debian's hipcc, gfx90a + gfx940) and NVIDIA (nvcc,
# sm_90a) without running it (CI has no GPU). Any warning from project code fails the check.
# Needs hipcc (apt-get install hipcc); nvcc is used when it is on PATH or in /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0
log=$(mktemp)
if command -v hipcc >/dev/null; then
    for f in gpu/src/*.hip gpu/bench/*.hip; do
        HIP_PLATFORM=amd hipcc --offload-arch=gfx90a --offload-arch=gfx940 -std=c++17 -O2 -Wall -Wextra \
            -Igpu/include -Igpu/src -Ireference/include -c "$f" -o /tmp/$(basename "$f").amd.o >"$log" 2>&1 ||
            { cat "$log"; echo "hipcc: $f failed"; status=1; continue; }
        if grep -E "^(gpu|reference)/.*warning" "$log"; then echo "hipcc: warnings in project code ($f)"; status=1; fi
    done
    echo "hipcc (gfx90a, gfx940): $(ls gpu/src/*.hip gpu/bench/*.hip | wc -l) files compiled"
else
    echo "hipcc not installed: AMD compile check not run"; status=1
fi
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -n "$NVCC" ]; then
    cmake -S . -B build-cuda-check -G Ninja -DMLA_GPU=cuda -DCMAKE_CUDA_COMPILER="$NVCC" >"$log" 2>&1 ||
        { cat "$log"; exit 1; }
    cmake --build build-cuda-check --target mla_gpu mlacheck mla_gpu_check mla_gpu_bench >"$log" 2>&1 || { cat "$log"; exit 1; }
    if grep -E "(gpu|reference|harness)/[^ ]*: *warning" "$log"; then echo "nvcc: warnings in project code"; status=1; fi
    echo "nvcc (sm_90a): mla_gpu, mlacheck, mla_gpu_check and mla_gpu_bench built"
else
    echo "nvcc not found: NVIDIA compile check not run"
fi
rm -f "$log"
exit $status
