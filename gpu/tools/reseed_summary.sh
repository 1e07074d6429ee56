#!/bin/bash
# reseed_summary.sh DIR OUT: after gpu/tools/reseed_runs.sh, the runs under DIR (rK-gG/<run>/metrics.tsv)
# joined into the inputs of `mlacheck calibrate --from`, one table per model family (the trained models'
# lines are their own, model=trained-.*): OUT/reseed-random.tsv and OUT/reseed-trained.tsv; and
# OUT/limit-use.txt: per check (bitwise ones left out), the rel_l2 rows, the largest limit use and
# where, and how many rows sit above 0.8 and above 1 (topk_ids rows are margin / bound, judged by
# route_noise_k, and left out).
set -u -o pipefail
dir=$1 out=$2
mkdir -p "$out" || exit 2
files=("$dir"/r*-g*/*/metrics.tsv)
[ -e "${files[0]}" ] || { echo "reseed_summary: no metrics.tsv under $dir/r*-g*/" >&2; exit 1; }
awk -F'\t' -v r="$out/reseed-random.tsv" -v t="$out/reseed-trained.tsv" '
    FNR == 1 { if (NR == 1) { print > r; print > t } next }
    { print > ($1 ~ /^trained-/ ? t : r) }' "${files[@]}"
for f in random trained; do
    echo "== $f models: ${#files[@]} metrics files"
    awk -F'\t' 'NR > 1 && $2 !~ /determinism|batch-invariance/ && $6 != "topk_ids" {
        c = $2; n[c]++; if ($15 > 0.8) hi[c]++; if ($15 > 1) over[c]++
        if ($15 > mx[c]) { mx[c] = $15; w[c] = $1 " " $3 " " $4 " L" $5 "/" $6 }
    } END { for (c in n) printf "%-24s rows %7d  max limit use %.3f (%s)  > 0.8: %d  > 1: %d\n", c, n[c], mx[c], w[c], hi[c] + 0, over[c] + 0 }' \
        "$out/reseed-$f.tsv" | sort
done >"$out/limit-use.txt"
cat "$out/limit-use.txt"
