#!/bin/sh
# ci_gate_test.sh MLACHECK GOOD_PLUGIN BUGGY_PLUGIN WORK: docs/ci/gate.sh as the CI examples run it,
# on the smoke suite: reference + the good attention-only plugin pass (exit 0) with summary.md and
# junit.xml collected for both and appended to $GITHUB_STEP_SUMMARY; with the buggy plugin the gate
# exits 1 and the reports are still collected (CI publishes them after a failure).
set -u
m=$1 good=$2 buggy=$3 w=$4
fail() { echo "ci_gate_test: FAIL: $*" >&2; exit 1; }
gate=$(dirname "$0")/../../docs/ci/gate.sh
rm -rf "$w" && mkdir -p "$w" || fail "cannot create $w"
export MLACHECK="$m" MLACHECK_SUITE=smoke GITHUB_STEP_SUMMARY="$w/step-summary.md"

MLACHECK_REPORT="$w/good" sh "$gate" "plugin:$good" > "$w/good.out" 2>&1
rc=$?; grep '^gate ' "$w/good.out"; test $rc -eq 0 || { cat "$w/good.out"; fail "good plugin: exit $rc"; }
for f in ref-summary.md ref-junit.xml plugin-example_attn_only_plugin-summary.md plugin-example_attn_only_plugin-junit.xml; do
  test -s "$w/good/$f" || fail "good: $f not collected"
done
grep -q '<testsuite' "$w/good/ref-junit.xml" || fail "ref-junit.xml is not JUnit"
test "$(grep -c '^### gate ' "$w/step-summary.md")" -eq 2 || fail "step summary should hold 2 runs"

MLACHECK_REPORT="$w/buggy" sh "$gate" "plugin:$buggy" > "$w/buggy.out" 2>&1
rc=$?; grep '^gate ' "$w/buggy.out"; test $rc -eq 1 || { cat "$w/buggy.out"; fail "buggy plugin: exit $rc, expected 1"; }
grep -q 'FAIL' "$w/buggy/plugin-example_attn_only_buggy_plugin-summary.md" || fail "buggy: summary.md without the failure"
grep -q '<failure' "$w/buggy/plugin-example_attn_only_buggy_plugin-junit.xml" || fail "buggy: junit.xml without a failure"
echo "ci_gate_test: ok"
