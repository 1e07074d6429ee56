#!/bin/bash
# device_suite.sh [check] [gpu] [faults] [long] [bench] (default: check gpu faults): on the lent GPU
# machine, build mlacheck, mla_gpu_check and mla_gpu_bench with the GPU engine, then run what is named:
#   check   mla_gpu_check (engine vs reference over a scripted batch, the oversized-cache NOMEM case),
#           with each decode kernel (first, tiled, mma: the default) and the matching prefill kernel,
#           then the default kernels under compute-sanitizer memcheck
#   gpu     the gpu suite with the engine's default kernels
#   faults  each injected fault in the GPU engine (tiny-v3-faults case)
#   long    gpu-long at kv 8192 (LONG_CASES="..." picks its cases, ~280 s each)
#   reseed  false-alarm hunt: the gpu suite under --reseed FIRST .. RESEEDS (default 1 .. 20; or KS; gpu/tools/
#           reseed_runs.sh), each K split into the case groups of SPLIT (default: six groups, every case but
#           v3-layer-batch8), PAR processes at a time (default 16), one thread each, cut at BUDGET seconds
#           after the call began (default 540); $OUT/reseed.tsv, reseed-failures.txt, limit-use.txt and
#           reseed-random.tsv.xz / reseed-trained.tsv.xz (every run's metrics joined per model family, for
#           mlacheck calibrate --from; gpu/tools/reseed_summary.sh). 10 K take ~380 s on the H200.
#   seeds   mla_gpu_check's noise: every case at the tokens' seeds SEEDS (default 1 .. 12) under each setting of
#           SEED_ENVS (default "MLA_GPU_GEMM_MMA=1 MLA_GPU_GEMM_MMA=0"), one line a run (exit, FAIL lines); each
#           run's log in $OUT/seeds.tar.xz (results/published/2026-12-07-s24 took its gates' limits from such a run)
#   switches  each kernel switch (gpu_env_switch, gpu_env_off) at each value over the bench rows it touches
#           (SW_PREFILL, SW_FP8, SW_H128, SW_FP8W, SW_SPLIT, SW_VAR: mla_gpu_bench --only-prefill / --only rows; SW_TIMEOUT seconds a row, default
#           120, after which that value is skipped on later rows; SW_ONLY: the switch names to run, default
#           all): one line a (switch, value, row)
#           with its time, check and output digest (equal digests: bit-identical), $OUT/switches.md; then
#           SW_CASES of the gpu suite with the defaults and with the SW_FLIP switches set (default: the pipe
#           prefill instead of ws, and the fp8 overlap; the pong prefill: SW_FLIP=MLA_GPU_PREFILL_PONG=1),
#           metrics.tsv compared
#   profile for each "name:kernel-regex:mla_gpu_bench args[:VAR=VALUE,...]" of PROF (the optional fourth field:
#           the environment of that run, e.g. a kernel switch; default: the P1 s 4096 prefill, h128
#           bf16 and h16 fp8_ds_mla decode), one ncu pass of the kernel's first launch (speed of light, warp
#           states, instruction mix, memory tables, and the SASS with its per-line stall samples and executed
#           counts as CSV), all in $OUT/profile.tgz
#   bench   mla_gpu_bench (BENCH_KERNELS, default mma; BENCH_ARGS e.g. --quick), then
#           gpu/bench/torch_side_by_side.py at the same shapes in the same session, and
#           gpu/bench/roofline.py (fraction of the roofline per row, roofline.svg when gnuplot is there) and
#           gpu/bench/targets.py (issue 14's speed targets, met or missed, per row)
#   gemm    mla_gpu_bench --gemm (GEMM_ARGS e.g. --quick): the projection GEMMs' SIMT and tensor-core kernels,
#           bf16 and block fp8, checked against float64 sums, batch invariance, timed; $OUT/gemm.md. Then one
#           v3-layer forward end to end (mlacheck bench --attn tc, prefill of GEMM_TOKENS, default 4096, and 32
#           decode steps) in each of GEMM_PROFILES (default bf16) with the SIMT GEMMs (MLA_GPU_GEMM_MMA=0) and
#           the defaults
# Reports come back as $OUT/gpu-report.tgz, the benchmark tables as $OUT/bench.md, bench.tsv, torch.tsv. Run from the
# repository root through the device tool, carry [".deps"] (make it first with gpu/tools/make_deps.sh).
set -u -o pipefail
OUTDIR=${OUT:-/tmp}
T_START=$(date +%s)
WHAT=" ${*:-check gpu faults} "
want() { [[ "$WHAT" == *" $1 "* ]]; }
D=$PWD/.deps
export LD_LIBRARY_PATH="$D/lib:$D/hdf5/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bash gpu/tools/unpack_deps.sh "$D" || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
H5=""
[ -f /usr/include/hdf5.h ] || [ -d /usr/include/hdf5 ] || H5="-DMLA_HDF5_ROOT=$D/hdf5"
# MLA_CMAKE_ARGS: e.g. -DMLA_GIT_ID=<id> (the device copy's .git is stale: name the commit from here)
cmake -S . -B build-gpu -G Ninja -DMLA_GPU=cuda -DMLA_DEPS_DIR=$D $H5 -DCMAKE_BUILD_RPATH="$D/lib;$D/hdf5/lib" ${MLA_CMAKE_ARGS:-} \
    >"$OUTDIR/configure.log" 2>&1 || { tail -30 "$OUTDIR/configure.log"; exit 1; }
cmake --build build-gpu -j16 --target mlacheck mla_gpu_check mla_gpu_bench >"$OUTDIR/build.log" 2>&1 ||
    { grep -E "error|warning" "$OUTDIR/build.log" | head -40; exit 1; }
echo "build: $(grep -ci 'warning' "$OUTDIR/build.log") warning lines"
M=./build-gpu/harness/mlacheck
ldd $M | grep "not found"
$M list | head -3
R=results/device
rm -rf $R && mkdir -p $R
if want check; then
    for k in first tiled mma; do # the decode kernels (gpu/NOTES.md); prefill: first, tiled, tiled
        t0=$(date +%s)
        pk=$k; [ $k = mma ] && pk=tiled
        MLA_GPU_DECODE=$k MLA_GPU_PREFILL=$pk ./build-gpu/gpu/mla_gpu_check | tee "$OUTDIR/gpu-check-$k.log" | tail -16
        echo "mla_gpu_check, $k decode kernel: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
    done
    if command -v compute-sanitizer >/dev/null; then
        t0=$(date +%s)
        timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 ./build-gpu/gpu/mla_gpu_check \
            >"$OUTDIR/memcheck.log" 2>&1
        echo "compute-sanitizer memcheck, default kernels: exit $? in $(( $(date +%s) - t0 )) s; $(grep -m1 'ERROR SUMMARY' "$OUTDIR/memcheck.log")"
    fi
fi
if want bench; then
    t0=$(date +%s)
    ./build-gpu/gpu/mla_gpu_bench --kernels "${BENCH_KERNELS:-mma}" ${BENCH_ARGS:-} --tsv "$OUTDIR/bench.tsv" >"$OUTDIR/bench.md"
    echo "bench: exit $? in $(( $(date +%s) - t0 )) s"
    t0=$(date +%s)
    python3 gpu/bench/torch_side_by_side.py "$OUTDIR/bench.tsv" --out "$OUTDIR/torch.tsv" | tee -a "$OUTDIR/bench.md"
    echo "torch side by side: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
    python3 gpu/bench/roofline.py "$OUTDIR/bench.tsv" --svg "$OUTDIR/roofline.svg" >>"$OUTDIR/bench.md" 2>&1
    python3 gpu/bench/targets.py "$OUTDIR/bench.tsv" --torch "$OUTDIR/torch.tsv" | tee -a "$OUTDIR/bench.md" | tail -1
fi
if want gemm; then
    t0=$(date +%s)
    ./build-gpu/gpu/mla_gpu_bench --gemm ${GEMM_ARGS:-} >"$OUTDIR/gemm.md" 2>&1
    rc=$?
    grep -E "^\| |failed checks|mla_gpu_bench" "$OUTDIR/gemm.md"
    echo "gemm bench: exit $rc in $(( $(date +%s) - t0 )) s"
    for p in ${GEMM_PROFILES:-bf16}; do for v in 0 1; do
        t0=$(date +%s)
        l=$(MLA_GPU_GEMM_MMA=$v timeout 120 $M bench --engine gpu --attn tc --model v3-layer --profile $p \
            --tokens "${GEMM_TOKENS:-4096}" --decode 32 --repeat 5 2>&1 | grep -E 'median|decode:|error|mlacheck' | tr '\n' ' ')
        echo "v3-layer forward, $p, MLA_GPU_GEMM_MMA=$v: ${l:-(no line)} ($(( $(date +%s) - t0 )) s)"
    done; done
fi
if want profile; then
    P=$R/profile && mkdir -p $P
    for spec in ${PROF:-prefill:k_attn_prefill_pipe:--only-prefill,0 h128:k_attn_decode_wg:--only,1 fp8ds:k_attn_decode_wt:--only,2}; do
        IFS=: read -r name kern args envs <<<"$spec"
        t0=$(date +%s)
        env ${envs//,/ } timeout 240 ncu --clock-control none -k "regex:$kern" -c 1 --section SpeedOfLight --section WarpStateStats \
            --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats \
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SourceCounters \
            --import-source no -o $P/$name ./build-gpu/gpu/mla_gpu_bench ${args//,/ } >$P/run-$name.log 2>&1
        ncu -i $P/$name.ncu-rep --print-details all >$P/ncu-$name.txt 2>&1
        ncu -i $P/$name.ncu-rep --page source --csv --print-source sass >$P/src-$name.csv 2>&1
        rm -f $P/$name.ncu-rep
        echo "profile $name ($kern): $(grep -m1 -E '^ +Duration' $P/ncu-$name.txt | tr -s ' '), $(grep -m1 -E 'Executed Instructions ' $P/ncu-$name.txt | tr -s ' ') in $(( $(date +%s) - t0 )) s"
    done
    tar czf "$OUTDIR/profile.tgz" -C $R profile
fi
if want switches; then
    t0=$(date +%s)
    sw() { # VAR "VALUES" --only|--only-prefill "ROWS": the row's line as mla_gpu_bench printed it
        [ -n "${SW_ONLY:-}" ] && [[ " $SW_ONLY " != *" $1 "* ]] && return
        local dead=" " # values that timed out once (a hung mbarrier protocol): not run again
        for w in $4; do for v in $2; do
            [[ "$dead" == *" $v "* ]] && { echo "$1=$v $3 $w (skipped: timed out on an earlier row)"; continue; }
            l=$(env "$1=$v" timeout "${SW_TIMEOUT:-120}" ./build-gpu/gpu/mla_gpu_bench "$3" "$w")
            [ $? = 124 ] && dead="$dead$v "
            l=$(grep -m1 '^| ' <<<"$l")
            echo "$1=$v $3 $w ${l:-(no row: exit or timeout)}"
        done; done
    }
    { sw MLA_GPU_PREFILL_PIPE "0" --only-prefill "${SW_PREFILL:-0 1 2 3}"
      sw MLA_GPU_PREFILL_PONG "0 1" --only-prefill "${SW_PREFILL:-0 1 2 3}"
      sw MLA_GPU_PREFILL_WIDE "0 1" --only-prefill "${SW_PREFILL:-0 1 2 3}"
      sw MLA_GPU_PREFILL_WS "0 1 3 4" --only-prefill "${SW_PREFILL:-0 1 2 3}"
      sw MLA_GPU_PREFILL_WS_SKIP "0 1" --only-prefill "${SW_PREFILL:-0 1 2 3}"
      sw MLA_GPU_DECODE_WT_OVL "0 1" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF "0" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF_WQ "0 1" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF_BULK "0 1 2" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF_ER "0 1" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF_RG "0 1" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF_UN "0 1" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WF_RE "0 1" --only "${SW_FP8:-2 17}"
      sw MLA_GPU_DECODE_WG_HG "0 1" --only "${SW_H128:-1 4 14}"
      sw MLA_GPU_DECODE_WF_GROUPS "0 1" --only "${SW_FP8W:-3 18 19 20}"
      sw MLA_GPU_COMBINE "0 1" --only "${SW_SPLIT:-5 21 22}"
      sw MLA_GPU_DECODE_BALANCE "0 1" --only "${SW_VAR:-15 16}"; } | tee "$OUTDIR/switches.md"
    echo "switch rows: in $(( $(date +%s) - t0 )) s"
    sel=(); for c in ${SW_CASES-v3-layer-batch8 v3-layer-gpu-sched v2-lite-layer-gpu}; do sel+=(-k "$c"); done
    for flip in 0 1; do # 1: the switches of SW_FLIP away from their defaults; SW_CASES="": no suite runs
        [ ${#sel[@]} = 0 ] && break
        t0=$(date +%s)
        f=(); [ $flip = 1 ] && read -r -a f <<<"${SW_FLIP:-MLA_GPU_PREFILL_WS=0 MLA_GPU_DECODE_WT_OVL=1}"
        env "${f[@]}" $M run --suite gpu "${sel[@]}" --results $R/sw$flip >"$OUTDIR/switch-suite-$flip.log" 2>&1
        echo "switches flipped=$flip: exit $? in $(( $(date +%s) - t0 )) s: $(grep -m1 -o 'mlacheck run: [^;]*' "$OUTDIR/switch-suite-$flip.log")"
    done
    if [ ${#sel[@]} = 0 ]; then :
    elif cmp -s $R/sw0/*/metrics.tsv $R/sw1/*/metrics.tsv; then echo "switches flipped: metrics.tsv identical";
    else echo "switches flipped: metrics.tsv differ: $(diff $R/sw0/*/metrics.tsv $R/sw1/*/metrics.tsv | grep -c '^>') rows"; fi
fi
if want seeds; then
    t0=$(date +%s)
    mkdir -p $R/seeds
    for e in ${SEED_ENVS:-MLA_GPU_GEMM_MMA=1 MLA_GPU_GEMM_MMA=0}; do for s in ${SEEDS:-$(seq 1 12)}; do
        f=$R/seeds/${e//[^A-Za-z0-9]/_}-s$s.log
        env "$e" timeout 60 ./build-gpu/gpu/mla_gpu_check all all "$s" >"$f" 2>&1
        echo "$e seed $s: exit $? $(grep -c 'FAIL:' "$f") FAIL lines $(grep 'FAIL:' "$f" | cut -c1-60 | head -2 | tr '\n' ';')"
    done; done
    tar cJf "$OUTDIR/seeds.tar.xz" -C $R seeds
    echo "seeds: in $(( $(date +%s) - t0 )) s"
fi
if want gpu; then
    t0=$(date +%s)
    # no pipe: a reader that stops early (head) would end the run by SIGPIPE
    $M run --suite gpu --results $R >"$OUTDIR/gpu-suite.log" 2>&1
    rc=$?
    grep -E "FAIL|mlacheck run|report:" "$OUTDIR/gpu-suite.log" | head -40
    echo "gpu suite: exit $rc in $(( $(date +%s) - t0 )) s"
fi
if want faults; then
    for f in rope-pairing causal-off-by-one no-mscale fp8-q-saturation routed-scaling lse-bf16; do
        $M run --suite gpu --case tiny-v3-faults --engine gpu --inject $f --quiet --results $R/faults >"$OUTDIR/fault.log" 2>&1
        echo "fault $f: exit $? $(grep -m1 -o 'first divergence: [^|]*' "$OUTDIR/fault.log" | head -1 | cut -c1-160)"
    done
fi
if want long; then
    nproc; grep -m1 "model name" /proc/cpuinfo
    for c in ${LONG_CASES:-v3-layer-8k-bf16 v3-layer-8k-fp8kv}; do
        t0=$(date +%s)
        stdbuf -oL $M run --suite gpu-long --case $c --results $R 2>&1 | tee "$OUTDIR/gpu-long-$c.log" | tail -25
        echo "gpu-long $c: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
    done
fi
if want reseed; then
    t0=$(date +%s)
    # the longest group first (H200 2026-12-02, seconds a group at PAR 16: 155, 110, 90, 75, 70, 57)
    G="-k v2-lite-layer-gpu;-k tiny-v3-gpu -k tiny-v3-faults -k tiny-v3-noise;-k trained-v3-gpu;-k trained-v2-lite-gpu"
    G="$G;-k tiny-v3-batch64 -k tiny-v3-gpu-sched* -k v3-layer-gpu-sched;-k tiny-v2-lite-* -k asym-*"
    SPLIT=${SPLIT:-$G} DEADLINE=$((T_START + ${BUDGET:-540})) \
        bash gpu/tools/reseed_runs.sh $M gpu "${RESEEDS:-20}" "${PAR:-16}" $R/reseed | tail -3
    echo "reseed: exit ${PIPESTATUS[0]} in $(( $(date +%s) - t0 )) s"
    cp $R/reseed/reseed.tsv $R/reseed/reseed-failures.txt "$OUTDIR/"
    bash gpu/tools/reseed_summary.sh $R/reseed "$OUTDIR"
    xz -T0 -6 "$OUTDIR"/reseed-random.tsv "$OUTDIR"/reseed-trained.tsv
fi
tar czf "$OUTDIR/gpu-report.tgz" --exclude='*.h5' --exclude=reseed --exclude=seeds $R
