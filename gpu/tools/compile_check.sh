#!/bin/bash
# compile_check.sh: build the GPU engine for AMD (CMake MLA_GPU=hip with Debian's hipcc, gfx90a +
# gfx940) and NVIDIA (MLA_GPU=cuda, nvcc, sm_90a). CI has no GPU: the AMD programs are run only to see
# the runtime's "no device" answer. Any warning from project code fails the check.
# Needs hipcc (apt-get install hipcc); nvcc is used when it is on PATH or in /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/../.."
status=0
log=$(mktemp)
if command -v hipcc >/dev/null; then
    # The CMake AMD build (MLA_GPU=hip: hipcc per source, linked against libamdhip64), then the
    # linked programs on this GPU-less machine: the HIP runtime must report "no device" (exit 77).
    cmake -S . -B build-hip-check -G Ninja -DMLA_GPU=hip >"$log" 2>&1 || { cat "$log"; exit 1; }
    cmake --build build-hip-check --target mla_gpu mlacheck mla_gpu_check mla_gpu_bench >"$log" 2>&1 ||
        { cat "$log"; echo "hipcc: CMake AMD build failed"; exit 1; }
    if grep -E "(gpu|reference|harness)/[^ ]*: *warning" "$log"; then echo "hipcc: warnings in project code"; status=1; fi
    echo "hipcc (gfx90a, gfx940): $(ls gpu/src/*.hip gpu/bench/*.hip | wc -l) sources built, mlacheck linked with libamdhip64"
    set +e
    ./build-hip-check/gpu/mla_gpu_check >"$log" 2>&1; rc=$?
    set -e
    if [ $rc -eq 77 ]; then
        echo "AMD runtime without a device: mla_gpu_check exit 77 ($(tail -1 "$log"))"
    elif [ $rc -ne 0 ]; then
        cat "$log"; echo "AMD build: mla_gpu_check exit $rc (expected 77 without a device, 0 with one)"; status=1
    fi
else
    echo "hipcc not installed: AMD build check not run"; status=1
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
