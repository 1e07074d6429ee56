#!/bin/bash
# device_check.sh: build the GPU engine and run mla_gpu_check on the lent GPU machine.
# Usage (from the repository root, through the device tool, with carry [".deps"]):
#   bash gpu/tools/device_check.sh [model [profile]]
# Uses the full top-level build when HDF5 and pkg-config are there, otherwise the reduced project
# gpu/tools/device (reference + GPU engine only). Logs go to $OUT when set.
set -u -o pipefail
OUTDIR=${OUT:-/tmp}
export LD_LIBRARY_PATH="$PWD/.deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# OpenBLAS travels xz-compressed (the tree that travels is limited to 64 MiB).
if [ -f .deps/lib/libopenblas.so.0.xz ] && [ ! -f .deps/lib/libopenblas.so.0 ]; then
    xz -dkc .deps/lib/libopenblas.so.0.xz >.deps/lib/libopenblas.so.0 2>/dev/null ||
        python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' \
            .deps/lib/libopenblas.so.0.xz .deps/lib/libopenblas.so.0
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
nvcc --version | tail -2
if pkg-config --exists hdf5 jansson openblas 2>/dev/null; then
    cmake -S . -B build-gpu -G Ninja -DMLA_GPU=cuda >"$OUTDIR/configure.log" 2>&1 || { tail -30 "$OUTDIR/configure.log"; exit 1; }
else
    cmake -S gpu/tools/device -B build-gpu -G Ninja -DMLA_GPU=cuda >"$OUTDIR/configure.log" 2>&1 || { tail -30 "$OUTDIR/configure.log"; exit 1; }
fi
cmake --build build-gpu -j16 --target mla_gpu_check >"$OUTDIR/build.log" 2>&1 || { grep -E "error|warning" "$OUTDIR/build.log" | head -40; tail -20 "$OUTDIR/build.log"; exit 1; }
echo "build: $(grep -c -i 'warning' "$OUTDIR/build.log") warning lines"
bin=$(find build-gpu -name mla_gpu_check -type f | head -1)
t0=$(date +%s)
"$bin" "$@" 2>&1 | tee "$OUTDIR/gpu_check.log"
rc=$?
echo "mla_gpu_check exit $rc in $(( $(date +%s) - t0 )) s"
exit $rc
