#!/usr/bin/env bash
# run_mutants.sh: mutation testing of our own (harness/mutants/README.md).
# Each patch of catalogue/ plants one backend bug in a scratch copy of the tree; the plugin of its
# route is rebuilt there, its effect measured tap by tap against the clean plugin (mutprobe), and it
# is gated through the plugin route: `mlacheck run --suite ci --engine plugin:<mutant.so>`.
#
# usage: harness/mutants/run_mutants.sh [--build DIR] [--out DIR] [--only ID[,ID...]] [--smoke]
#                                       [--suite NAME] [--ops] [--no-probe] [--also-model M]... [--keep]
#   --build DIR   a configured and built tree with mlacheck and mutprobe (default: build)
#   --out DIR     where mutants.tsv, mutants.md and the logs go (default: build/mutants-<stamp>)
#   --only LIST   these ids only (01,07,...); --smoke: the ids of smoke.list, and the run fails when
#                 one marked must-catch there is missed
#   --suite NAME  the gate suite (default ci); --ops: also `mlacheck ops --suite ops-smoke` (attn route)
#   --also-model  run mutprobe's tiny-v3 probes on this model too (say one with P != V)
#   --table TSV [SUITE [SECONDS]]  only print mutants.md for a mutants.tsv
# Exit 0: every patch applied and built, and no must-catch mutant was missed; 1 otherwise; 2 setup;
# 77 without git.
# A patch that does not apply or does not build is a failure of this run (a rotten patch), never a
# skip: the message names the patch and the file it no longer fits.
set -u
# the whole run is one function: bash has parsed all of it before it starts, so an edit of this
# file during a long run cannot change the run
# table TSV SUITE SECONDS: mutants.md from mutants.tsv: the table, the kill rate overall, per class,
# and among mutants of effect >= 1e-3 (caught, and caught at the right first tap)
table() {
    awk -F'\t' -v suite="$2" -v secs="$3" '
NR == 1 { next }
$5 != "ok" { broken++; brows = brows sprintf("| %s | %s | %s | %s |\n", $1, $2, $3, $5); next }
{
    n++; cls[$3]++; hasE += (NF >= 18)
    k = ($11 != "missed" && $11 != "-"); kill += k; kc[$3] += k
    ben = ($19 == "benign" || $19 == "subnoise"); early = ($17 == "" ? "-" : $17); rearly = ($18 == "" ? "-" : $18)
    big = ($6 != "-" && $6 + 0 >= 1e-3)
    if (big) { nb++; kb += k; rb += (k && $13 == "yes"); re += (k && rearly == "yes") }
    if (big && !ben) { nr++; kr += k; rr += (k && $13 == "yes"); rre += (k && rearly == "yes") }
    if (ben) { nben++; bl = bl (bl == "" ? "" : ", ") $1 " " $19 (k ? " (caught)" : "") }
    st = $5 == "ok" ? "" : " (" $5 ")"
    if (ben) st = st " (" $19 ")"
    rows = rows sprintf("| %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, st, $3, $6, $9, $10, $8, \
                        $11, $12, $13, early, rearly, $14)
}
END {
    print "Mutants: " n " planted bugs gated by `mlacheck run --suite " suite "` (" secs " s wall).\n"
    print "| id | mutant | class | effect (max rel_l2) | rel_l2 at true first tap | expected tap | true first tap | caught by | named first tap (first failing row) | right tap? | earliest failing tap | right? | ops-smoke |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf "%s\n", rows
    if (broken) printf "Not measured (a failure of the run): %d\n\n| id | mutant | class | status |\n|---|---|---|---|\n%s\n", broken, brows
    printf "Kill rate: %d of %d (%.0f%%)", kill, n, n ? 100 * kill / n : 0
    if (nb) printf "; with effect >= 1e-3: %d of %d caught, %d of them at the right first tap (first failing row)", kb, nb, rb
    if (nb && hasE) printf ", %d at the earliest failing tap", re
    printf ".\n"
    if (nben) printf "Outside the target (`# verdict:` benign: a valid alternative the noise model admits; subnoise: a real bug whose own size at its first tap is under the noise of a correct engine there): %s; without them, with effect >= 1e-3: %d of %d caught, %d at the right first tap (first failing row), %d at the earliest failing tap.\n", bl, kr, nr, rr, rre
    printf "\n| class | caught | of |\n|---|---|---|\n"
    for (c in cls) printf "| %s | %d | %d |\n", c, kc[c], cls[c]
}' "$1"
}

main() {
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=build out="" only="" smoke=0 suite=ci ops=0 probe=1 keep=0
also=()
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --only) only=$2; shift ;;
    --smoke) smoke=1 ;;
    --suite) suite=$2; shift ;;
    --ops) ops=1 ;;
    --no-probe) probe=0 ;;
    --also-model) also+=(--also-model "$2"); shift ;;
    --keep) keep=1 ;;
    --table) table "$2" "${3:-ci}" "${4:-?}"; return $? ;;
    *) echo "run_mutants: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
case "$build" in /*) ;; *) build="$root/$build" ;; esac
mlacheck="$build/harness/mlacheck"
mutprobe="$build/harness/mutants/mutprobe"
for b in "$mlacheck" "$mutprobe"; do
    [ -x "$b" ] || { echo "run_mutants: $b missing: build it first (cmake --build $build)" >&2; exit 2; }
done
[ -n "$out" ] || out="$build/mutants-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)

# the selection: ids -> patch files; must-catch ids from smoke.list
declare -A must
while read -r id flag _; do
    case "$id" in ''|'#'*) continue ;; esac
    [ "$flag" = must-catch ] && must[$id]=1
    [ $smoke = 1 ] && only="${only:+$only,}$id"
done < "$here/smoke.list"
patches=()
for p in "$here"/catalogue/*.patch; do
    id=$(basename "$p" | cut -d- -f1)
    if [ -n "$only" ] && ! printf ',%s,' "$only" | grep -q ",$id,"; then continue; fi
    patches+=("$p")
done
[ ${#patches[@]} -gt 0 ] || { echo "run_mutants: no patch selected" >&2; exit 2; }

command -v git > /dev/null && git -C "$root" rev-parse --git-dir > /dev/null 2>&1 ||
    { echo "run_mutants: needs git and a git checkout (the scratch copy, git apply): skipped" >&2; exit 77; }

# one scratch copy of the working tree (tracked and untracked, not ignored files), configured once
t0=$(date +%s)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/mla-mutants.XXXXXX") || exit 2
cleanup() { if [ $keep = 0 ]; then rm -rf "$scratch"; else echo "scratch kept: $scratch"; fi; }
trap cleanup EXIT
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
    tar -xf - -C "$scratch/" || { echo "run_mutants: copying the tree failed" >&2; exit 2; }
sb="$scratch/build"
plug_model="$sb/harness/plugins/libexample_ref_plugin.so"
plug_attn="$sb/harness/plugins/libexample_attn_only_plugin.so"
echo "run_mutants: ${#patches[@]} mutants; scratch $scratch; results $out"
if ! cmake -S "$scratch" -B "$sb" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLA_GPU=off \
        > "$out/logs/configure.log" 2>&1 ||
   ! cmake --build "$sb" --target example_ref_plugin example_attn_only_plugin > "$out/logs/build-clean.log" 2>&1; then
    echo "run_mutants: the clean scratch build failed: $out/logs/" >&2
    exit 2
fi
mkdir -p "$scratch/clean"
cp "$plug_model" "$plug_attn" "$scratch/clean/"
clean_model="$scratch/clean/$(basename "$plug_model")"
clean_attn="$scratch/clean/$(basename "$plug_attn")"

# gate FILE.so LOG: the suite through the plugin; prints the failing rows "case|check|profile|path|tap"
gate() {
    "$mlacheck" run --suite "$suite" --engine "plugin:$1" --results "$scratch/results" --quiet > "$2" 2>&1
    local rc=$?
    grep '^| .* | \*\*FAIL\*\* |' "$2" | awk -F' [|] ' '{sub(/^[|] /, "", $1); print $1 "|" $2 "|" $3 "|" $4 "|" $6}'
    return $rc
}
# the named tap of a failing row, in mutprobe's spelling: "layer 0 lse" -> L0/lse
tapname() { sed -E 's/^layer ([0-9]+) (.*)$/L\1\/\2/'; }
# earliest_tap: of the named taps on stdin (L1/lse, final_norm, ...), the earliest in computation
# order (embed, each layer's taps in the order of taps.h, final_norm, logits). Each failing check
# names the first divergence on its own input; the order of the suite's cases says nothing, so the
# earliest of them is the run's first divergence (measured: mutant 30's first failing row, an 8-token
# golden whose layer-1 routing is bit-identical under the bug, names L2/topk_ids, a right name there)
earliest_tap() {
    awk 'BEGIN { n = split("attn_norm q_nope q_pe kv_c k_pe q_absorbed attn_core lse attn_out ffn_norm " \
                           "router_logits topk_ids topk_weights ffn_out out", t, " ")
                 for (i = 1; i <= n; i++) ord[t[i]] = i }
         { k = 1e9
           if ($0 == "embed") k = -1
           else if ($0 == "final_norm") k = 1e8
           else if ($0 == "logits") k = 1e8 + 1
           else if (match($0, /^L[0-9]+\//)) { l = substr($0, 2, RLENGTH - 2) + 0; tp = substr($0, RLENGTH + 1)
                                              k = l * 100 + (tp in ord ? ord[tp] : 99) }
           if (best == "" || k < bk) { best = $0; bk = k } }
         END { print best == "" ? "-" : best }'
}

# the clean plugins through the gate: a clean failure is a known one, not the mutant's
declare -A clean_fail
routes=$(for p in "${patches[@]}"; do sed -n 's/^# route: *\([a-z]*\).*/\1/p' "$p"; done | sort -u)
for r in $routes; do
    so=$clean_model; [ "$r" = attn ] && so=$clean_attn
    rows=$(gate "$so" "$out/logs/clean-$r.log")
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
        echo "run_mutants: the clean $r plugin errors in suite $suite (rc $rc): $out/logs/clean-$r.log" >&2
        exit 2
    fi
    n=0
    while IFS= read -r row; do [ -n "$row" ] && clean_fail["$r|${row%|*}"]=1 && n=$((n + 1)); done <<< "$rows"
    echo "run_mutants: clean $r plugin: $n failing checks in $suite (known, not counted)"
    [ "$r" = model ] && [ $n -gt 0 ] && { echo "run_mutants: the clean whole-model plugin must pass $suite" >&2; exit 2; }
done

tsv="$out/mutants.tsv"
printf 'id\tname\tclass\troute\tstatus\teffect\teffect_probe\ttrue_first\tfirst_rel\texpect\tcaught_by\tnamed_first\tright_tap\tops\tmust_catch\tseconds\tearliest\tright_earliest\tverdict\n' > "$tsv"
bad=0
for p in "${patches[@]}"; do
    ts=$(date +%s)
    base=$(basename "$p" .patch)
    id=${base%%-*}
    cls=$(sed -n 's/^# class: *//p' "$p")
    route=$(sed -n 's/^# route: *\([a-z]*\).*/\1/p' "$p")
    expect=$(sed -n 's/^# expect: *//p' "$p")
    mc=${must[$id]:+yes}; mc=${mc:-no}
    verdict=$(sed -n 's/^# verdict: *\([a-z]*\).*/\1/p' "$p"); verdict=${verdict:--}
    log="$out/logs/$base.log"
    status=ok effect=- eprobe=- truefirst=- firstrel=- caught=- named=- right=- opsres=- earliest=- rightearly=-
    if ! (cd "$scratch" && git apply --check "$p") > "$log" 2>&1; then
        status=rotten
        echo "run_mutants: $base: PATCH DOES NOT APPLY (rotten):" >&2
        sed 's/^/    /' "$log" >&2
        bad=1
    else
        (cd "$scratch" && git apply "$p")
        target=example_ref_plugin so=$plug_model clean=$clean_model
        [ "$route" = attn ] && target=example_attn_only_plugin so=$plug_attn clean=$clean_attn
        if ! cmake --build "$sb" --target "$target" >> "$log" 2>&1; then
            status=build-failed
            echo "run_mutants: $base: the patched tree does not build: $log" >&2
            bad=1
        else
            if [ $probe = 1 ]; then
                "$mutprobe" "${also[@]}" "plugin:$clean" "plugin:$so" > "$out/logs/$base.probe.tsv" 2>> "$log"
                eff=$(grep '^effect' "$out/logs/$base.probe.tsv")
                if [ -n "$eff" ]; then
                    effect=$(cut -f2 <<< "$eff"); eprobe=$(cut -f4 <<< "$eff"); truefirst=$(cut -f5 <<< "$eff")
                    firstrel=$(cut -f6 <<< "$eff")
                fi
            fi
            rows=$(gate "$so" "$out/logs/$base.gate.log")
            rc=$?
            new=""
            while IFS= read -r row; do
                [ -n "$row" ] || continue
                [ -n "${clean_fail["$route|${row%|*}"]+x}" ] && continue
                new="$new$row"$'\n'
            done <<< "$rows"
            if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
                caught="$suite:error(rc $rc)"
            elif [ -n "$new" ]; then
                checks=$(printf '%s' "$new" | cut -d'|' -f2 | sed 's/@.*//' | sort -u | paste -sd+ -)
                caught="$suite:$checks"
                named=$(printf '%s' "$new" | head -1 | cut -d'|' -f5 | tapname)
                earliest=$(printf '%s' "$new" | cut -d'|' -f5 | tapname | earliest_tap)
            else
                caught=missed
            fi
            if [ $ops = 1 ]; then
                "$mlacheck" ops --engine "plugin:$so" --suite ops-smoke > "$out/logs/$base.ops.log" 2>&1
                case $? in 0) opsres=pass ;; 1) opsres=caught ;; 77) opsres=skip ;; *) opsres=error ;; esac
            fi
            # right tap: the named first divergence is the measured true first tap (without --no-probe),
            # else the tap the patch header expects
            want=$truefirst; [ "$want" = - ] && want=$expect
            if [ "$named" != - ]; then
                if [ "$named" = "$want" ]; then right=yes; else right=no; fi
                if [ "$earliest" = "$want" ]; then rightearly=yes; else rightearly=no; fi
            fi
            if [ "$mc" = yes ] && { [ "$caught" = missed ] || [ "$right" = no ]; }; then
                echo "run_mutants: $base: must be caught at $want, got: $caught at $named" >&2
                bad=1
            fi
        fi
        if ! (cd "$scratch" && git apply -R "$p") >> "$log" 2>&1; then
            echo "run_mutants: $base: the patch does not reverse: stopping" >&2
            exit 2
        fi
    fi
    te=$(date +%s)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "${base#*-}" "$cls" "$route" \
        "$status" "$effect" "$eprobe" "$truefirst" "$firstrel" "$expect" "$caught" "$named" "$right" "$opsres" "$mc" \
        $((te - ts)) "$earliest" "$rightearly" "$verdict" >> "$tsv"
    printf 'run_mutants: %-44s %-12s effect %-9s caught by %-34s named %-16s (true %s) %ss\n' "$base" "$status" \
        "$effect" "$caught" "$named" "$truefirst" $((te - ts))
done

table "$tsv" "$suite" $(( $(date +%s) - t0 )) > "$out/mutants.md"
echo "run_mutants: $(grep '^Kill rate' "$out/mutants.md")"
echo "run_mutants: $out/mutants.md, $tsv ($(( $(date +%s) - t0 )) s)"
return $bad
}
main "$@"; exit $? # one line: bash has read it all before main runs
