#!/bin/bash
# reseed_runs.sh MLACHECK SUITE N PAR DIR: the false-alarm hunt of issue 10: SUITE under --reseed 1 .. N
# (other valid workloads under the same limits; mlacheck/reseed.h), PAR runs at a time with OpenBLAS on
# one thread each, results under DIR/reseed-K. Prints one line a run (K, exit status, its summary
# line) into DIR/reseed.tsv and the failing checks into DIR/reseed-failures.txt; exit 0 when every
# run passed, 1 otherwise. device_suite.sh `reseed` runs it on the GPU machine for the gpu suite.
# RUN_ARGS: more `mlacheck run` arguments, e.g. "-k tiny-* -k trained-*" (the gpu suite's v3-layer-batch8
# takes 80 s of its 214 s on 16 threads, so 20 runs of one thread each outlast a 600 s device call:
# H200 2026-12-01, none of 20 at 20 at a time finished in 520 s; 2026-12-02, without v3-layer-batch8,
# none of 20 in 462 s). BLAS_THREADS: threads a run (1), both OpenBLAS's and the reference's own
# (MLA_REF_THREADS: it defaults to every core, so those 20 runs each started 16 threads per large
# product). FIRST: the first K (1), so that a campaign splits over calls (FIRST=11 N=20).
set -u -o pipefail
m=$1 suite=$2 n=$3 par=$4 dir=$5
mkdir -p "$dir" || exit 2
rm -f "$dir/reseed.rc"
one() { # K: one reseeded run; its exit status appended to reseed.rc
    set -f # RUN_ARGS splits into arguments on purpose, its globs reach mlacheck unexpanded
    # shellcheck disable=SC2086
    "$m" run --suite "$suite" --reseed "$1" ${RUN_ARGS:-} --results "$dir/reseed-$1" >"$dir/reseed-$1.log" 2>&1
    printf '%s\t%s\n' "$1" "$?" >>"$dir/reseed.rc"
}
export -f one
export m suite dir RUN_ARGS
seq "${FIRST:-1}" "$n" | OPENBLAS_NUM_THREADS=${BLAS_THREADS:-1} MLA_REF_THREADS=${BLAS_THREADS:-1} xargs -P "$par" -I{} bash -c 'one {}'
sort -n "$dir/reseed.rc" | while IFS=$'\t' read -r k rc; do
    printf '%s\t%s\t%s\n' "$k" "$rc" "$(grep -m1 -o "mlacheck run: suite $suite --reseed $k: [^;]*" "$dir/reseed-$k.log")"
done >"$dir/reseed.tsv"
cat "$dir/reseed.tsv"
grep -h '\*\*FAIL' "$dir"/reseed-*/*/summary.md 2>/dev/null | cut -c1-300 >"$dir/reseed-failures.txt"
bad=$(awk -F'\t' '$2 != 0' "$dir/reseed.tsv" | wc -l)
echo "reseed_runs: suite $suite, $n runs, $bad not passing; failing checks in $dir/reseed-failures.txt"
[ "$bad" -eq 0 ]
