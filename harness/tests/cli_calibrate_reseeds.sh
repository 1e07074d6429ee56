#!/bin/sh
# mlacheck calibrate --reseeds N: each suite measured as written and under --reseed 1 .. N-1, so every
# row holds N times the samples (other prompts, same checks), and the table's source names the option.
# usage: cli_calibrate_reseeds.sh MLACHECK WORKDIR
set -u
m=$1
d=$2
rm -rf "$d" && mkdir -p "$d" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
cat >"$d/cal.suite" <<'S'
[suite]
description = calibrate --reseeds test: bf16 decode vs prefill on two random prompts
[defaults]
engines  = ref
against  = golden
profiles = bf16
paths    = prefill, decode
prefill_len = 3
[case r]
model    = tiny-v3
prompts  = random:len=12,seed=1 ; random:len=20,seed=2
checks   = decode-vs-prefill
S
"$m" calibrate --suite "$d/cal.suite" --out "$d/one.tsv" --results "$d/r" --quiet >"$d/one.out" 2>&1 || { cat "$d/one.out"; fail "--reseeds 1: exit $?"; }
"$m" calibrate --suite "$d/cal.suite" --reseeds 3 --out "$d/three.tsv" --results "$d/r" --quiet >"$d/three.out" 2>&1 ||
    { cat "$d/three.out"; fail "--reseeds 3: exit $?"; }
grep -q 'suite .* --reseed 2: ' "$d/three.out" || { cat "$d/three.out"; fail "no run under --reseed 2"; }
n1=$(awk -F'\t' '$3 == "L0/attn_core" { print $5 }' "$d/one.tsv")
n3=$(awk -F'\t' '$3 == "L0/attn_core" { print $5 }' "$d/three.tsv")
[ -n "$n1" ] && [ "$n3" = $((3 * n1)) ] || fail "L0/attn_core samples: $n1 as written, $n3 with --reseeds 3 (expected 3x)"
m1=$(awk -F'\t' '$3 == "L0/attn_core" { print $8 }' "$d/one.tsv")
m3=$(awk -F'\t' '$3 == "L0/attn_core" { print $8 }' "$d/three.tsv")
[ "$m1" != "$m3" ] || fail "L0/attn_core max $m1 both ways: the reseeded prompts measured nothing new"
grep -q 'mlacheck calibrate --suite .* --reseeds 3 --out' "$d/three.tsv" || fail "the source does not name --reseeds 3"
"$m" calibrate --suite "$d/cal.suite" --reseeds 0 --out "$d/x.tsv" >/dev/null 2>&1
[ $? -eq 2 ] || fail "--reseeds 0: expected exit 2"
# --models: the rows' models by case, the lines narrowed to them; a case the suite lacks is refused
mt=$(ls "$d"/r/*/metrics.tsv | head -1)
"$m" calibrate --from "$mt" --models "$d/cal.suite" --out "$d/m.tsv" --quiet >"$d/m.out" 2>&1 || { cat "$d/m.out"; fail "--models: exit $?"; }
grep -q '^L0/attn_core .* rel_l2=[0-9.e-]* model=(tiny-v3) ' "$d/m.tol" || { cat "$d/m.tol"; fail "no model=(tiny-v3) line"; }
awk -F'\t' '$3 == "L0/attn_core" && $13 == "tiny-v3" { ok = 1 } END { exit !ok }' "$d/m.tsv" || fail "models column"
sed 's/^\[case r\]/[case other]/' "$d/cal.suite" >"$d/other.suite"
"$m" calibrate --from "$mt" --models "$d/other.suite" --out "$d/x.tsv" >"$d/x.out" 2>&1
[ $? -eq 2 ] && grep -q "case 'r'.*suite other" "$d/x.out" || { cat "$d/x.out"; fail "--models without the case: expected exit 2 naming it"; }
echo "calibrate --reseeds 3: L0/attn_core n $n1 -> $n3, max $m1 -> $m3; --models: model=(tiny-v3)"
