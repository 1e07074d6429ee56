#!/bin/sh
# ops_results.sh MLACHECK BUGGY_ATTN_PLUGIN: `mlacheck ops --results DIR` leaves a results folder as
# `mlacheck run` does (summary.json, summary.md, junit.xml, metrics.tsv, index.html), one testcase per
# operator case: the reference operator passes all of ops-smoke; the buggy attention-only plugin's
# junit has failures that name the case, the failing tensor and the metric against its limit, and
# skips that give the declined feature; a --results path that is a file is exit 2 before any case.
set -u
MLA=$1
BUGGY=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
one_run() { # the single run folder under $1
    set -- "$1"/*
    [ $# -eq 1 ] && [ -d "$1" ] || fail "expected one run folder, found: $*"
    R=$1
}

# 1. the reference operator: pass, every file there, ten testcases, twenty tensors
"$MLA" ops --engine ref --results "$T/ref" >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || { cat "$T/out"; fail "ref: exit $rc, expected 0"; }
one_run "$T/ref"
for f in summary.json summary.md junit.xml metrics.tsv index.html; do [ -s "$R/$f" ] || fail "ref: $f missing"; done
grep -q "^report: $R/index.html" "$T/out" || fail "ref: report line missing"
grep -q '<testsuites name="mlacheck ops-smoke" tests="10" failures="0" skipped="0"' "$R/junit.xml" || fail "ref: junit counts"
[ "$(grep -c '<testcase ' "$R/junit.xml")" -eq 10 ] || fail "ref: expected 10 testcases"
grep -q '<testcase classname="ops-smoke.mqa-v3-h128-p64-bf16-small-ba" name="op/bf16/mqa" time="[0-9.]*"/>' "$R/junit.xml" ||
    fail "ref: testcase naming (suite.case, op/profile/form)"
[ "$(wc -l <"$R/metrics.tsv")" -eq 21 ] || fail "ref: metrics.tsv: expected the header and 20 rows"
grep -q '"verdict": "pass"' "$R/summary.json" || fail "ref: summary.json verdict"
grep -q '^## mlacheck ops-smoke: PASS' "$R/summary.md" || fail "ref: summary.md title"

# 2. the buggy attention-only plugin: exit 1, failures naming case, tensor, metric vs limit
"$MLA" ops --engine "plugin:$BUGGY" --results "$T/bug" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || { cat "$T/out"; fail "buggy: exit $rc, expected 1"; }
one_run "$T/bug"
J=$R/junit.xml
grep -q '<testsuites name="mlacheck ops-smoke" tests="10" failures="8" skipped="2"' "$J" || { cat "$J"; fail "buggy: junit counts"; }
grep -A1 '<testcase classname="ops-smoke.mqa-v3-h128-p1-fp8kv-real-bc" name="op/fp8kv/mqa" time="[0-9.]*">' "$J" |
    grep -q '<failure type="[a-z]*" message="mqa_out: .*cos_diff [0-9.e+-]* &gt; limit 5.000e-06' || fail "buggy: mqa_out / cos_diff limit not named"
grep -q 'first diverging tap mqa_out' "$J" || fail "buggy: first diverging tensor"
grep -A1 'name="op/bf16/mha" time="[0-9.]*">' "$J" | grep -q '<failure type="[a-z]*" message="mha_out: ' || fail "buggy: mha_out not named"
grep -q '<skipped message="example-attn-only declines kv format fp8ds"/>' "$J" || fail "buggy: skip reason"
grep -q '"verdict": "fail"' "$R/summary.json" || fail "buggy: summary.json verdict"
awk -F'\t' '$1=="mqa-v3-h128-p1-fp8kv-real-bc" && $6=="mqa_out" && $16==0 && $17=="cos_diff" {ok=1} END {exit !ok}' \
    "$R/metrics.tsv" || fail "buggy: metrics.tsv row of the failing tensor"
grep -q '| mqa-v3-h128-p1-fp8kv-real-bc | op | fp8kv | mqa | \*\*FAIL\*\* |' "$R/summary.md" || fail "buggy: summary.md"

# 3. a results path that cannot be a folder: exit 2, no case run
: >"$T/file"
"$MLA" ops --engine ref --results "$T/file" >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] || { cat "$T/out"; fail "results is a file: exit $rc, expected 2"; }
grep -q "^PASS" "$T/out" && fail "results is a file: cases ran"
echo "ops results: ok"
