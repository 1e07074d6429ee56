#!/bin/bash
# reseed_runs.sh MLACHECK SUITE N PAR DIR: the false-alarm hunt of issue 10: SUITE under --reseed FIRST .. N
# (other valid workloads under the same limits; mlacheck/reseed.h), PAR processes at a time, one thread
# each (BLAS_THREADS: OpenBLAS's and the reference's own MLA_REF_THREADS, which defaults to every core).
# Results under DIR/rK-gG. Exit 0 when every run passed, 1 otherwise.
#   SPLIT    case groups separated by ';', each a list of `mlacheck run` arguments (-k patterns): each K
#            runs once per group, as separate processes. A reseeded case's workload depends on its own
#            seeds and K alone, so the groups of one K together are that K's run; their serial chains
#            are shorter, so the runs finish inside one device call. Jobs go group by group, so name the
#            longest group first. Default: one group, RUN_ARGS (e.g. "-k tiny-* -k trained-*").
#   DEADLINE epoch seconds: each process is cut (exit 124) when it would run past it.
#   FIRST    the first K (1), so that a campaign splits over calls.
#   KS       the K to run, a space-separated list instead of FIRST .. N (0: the suite as written).
# Writes DIR/reseed.tsv (K, group, exit status, seconds, summary line; a K passes when all its groups
# exit 0) and DIR/reseed-failures.txt (the failing checks). H200 2026-12-02, the gpu suite without
# v3-layer-batch8 (gpu/tools/device_suite.sh reseed): as one group, 20 runs at a time were all cut at
# 510 s (~550 s of one core a run); split into six groups, 10 K took 376 s at PAR 16 (groups of 57 to
# 163 s) and 7 K 261 s.
set -u -o pipefail
m=$1 suite=$2 n=$3 par=$4 dir=$5
mkdir -p "$dir" || exit 2
rm -f "$dir/reseed.rc"
IFS=';' read -r -a groups <<<"${SPLIT:-${RUN_ARGS:-}}"
[ ${#groups[@]} -gt 0 ] || groups=("")
one() { # K G: group G of run K; its exit status and seconds appended to reseed.rc
    set -f # the group's -k globs reach mlacheck unexpanded
    local k=$1 g=$2 t0 rc left to=()
    IFS=';' read -r -a gs <<<"$GROUPS_S"
    if [ -n "${DEADLINE:-}" ]; then
        left=$((DEADLINE - $(date +%s)))
        [ $left -gt 5 ] || { printf '%s\t%s\t124\t0\n' "$k" "$g" >>"$dir/reseed.rc"; return; }
        to=(timeout "$left")
    fi
    t0=$(date +%s)
    # shellcheck disable=SC2086
    "${to[@]}" "$m" run --suite "$suite" --reseed "$k" ${gs[$g]:-} --results "$dir/r$k-g$g" >"$dir/r$k-g$g.log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\t%s\n' "$k" "$g" "$rc" "$(($(date +%s) - t0))" >>"$dir/reseed.rc"
}
export -f one
export m suite dir DEADLINE
GROUPS_S=$(IFS=';'; echo "${groups[*]}")
export GROUPS_S
ks=${KS:-$(seq "${FIRST:-1}" "$n")}
for g in "${!groups[@]}"; do for k in $ks; do echo "$k $g"; done; done |
    OPENBLAS_NUM_THREADS=${BLAS_THREADS:-1} MLA_REF_THREADS=${BLAS_THREADS:-1} xargs -P "$par" -L1 bash -c 'one "$0" "$1"'
sort -n -k1,1 -k2,2 "$dir/reseed.rc" | while IFS=$'\t' read -r k g rc s; do
    printf '%s\t%s\t%s\t%s\t%s\n' "$k" "$g" "$rc" "$s" "$(grep -m1 -o "mlacheck run: suite $suite[^:]*: [^;]*" "$dir/r$k-g$g.log")"
done >"$dir/reseed.tsv"
cat "$dir/reseed.tsv"
grep -h '\*\*FAIL' "$dir"/r*-g*/*/summary.md 2>/dev/null | cut -c1-400 >"$dir/reseed-failures.txt"
runs=$(cut -f1 "$dir/reseed.tsv" | sort -u | wc -l)
bad=$(awk -F'\t' '$3 != 0 {print $1}' "$dir/reseed.tsv" | sort -u | wc -l)
cut=$(awk -F'\t' '$3 == 124 {print $1}' "$dir/reseed.tsv" | sort -u | wc -l)
echo "reseed_runs: suite $suite, $runs runs in ${#groups[@]} group(s), $bad not passing ($cut cut at the deadline); failing checks in $dir/reseed-failures.txt"
[ "$bad" -eq 0 ]
