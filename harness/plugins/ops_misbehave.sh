#!/bin/sh
# A plugin cannot take `mlacheck ops` down (issue 12 item 3): each misbehaving attention operator
# (misbehaving_plugin.c, ATTN_ONLY) crashes, aborts, exits or hangs in mha on the 39 query rows of
# ops-smoke's case mha-k2-h32-p128-fp8ds-small-bb (the 9th of 10); the run must end with exit 3 (an
# engine error), that case an ERROR naming mha and the signal or exit status, and the 10th case must
# still run and pass, all of it in the report.
# usage: ops_misbehave.sh MLACHECK KIND LIB EXPECT   (KIND names the run; EXPECT: a grep -E pattern)
set -u
MLA="$1" KIND="$2" LIB="$3" EXPECT="$4"
T=$(mktemp -d /tmp/mlacheck-ops-misbehave-XXXXXX)
trap 'rm -rf "$T"' EXIT
# under the sanitizer build: the child dies of the plugin's own signal (see misbehave.sh)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:handle_segv=0:handle_abort=0"
start=$(date +%s)
MLA_MISBEHAVE_TOKENS=39 "$MLA" ops --engine "plugin:$LIB" --results "$T/r" >"$T/out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$T/out"
fail() { echo "FAIL (ops $KIND): $*"; exit 1; }
[ $rc -eq 3 ] || fail "exit $rc, expected 3 (an engine error)"
grep -Eq "^ERROR +mha-k2-h32-p128-fp8ds-small-bb .*engine plugin:.*: mha $EXPECT" "$T/out" ||
    fail "no ERROR line for the case naming mha and '$EXPECT'"
grep -Eq '^PASS +mha-v3-h16-p1-bf16-real-bc ' "$T/out" || fail "the later case did not run and pass"
grep -q '^ops-smoke: 10 cases, 9 passed, 0 failed, 1 errors, 0 skipped' "$T/out" || fail "the summary line"
md=$(ls "$T"/r/*/summary.md) || fail "no report"
grep -q '| mha-k2-h32-p128-fp8ds-small-bb | op | fp8ds | mha | \*\*FAIL\*\* |.*ERROR: engine plugin:' "$md" ||
    fail "the misbehaving case is not a failed check in the report"
grep -q '| mha-v3-h16-p1-bf16-real-bc | op | bf16 | mha | pass |' "$md" || fail "the later case is not a pass in the report"
echo "PASS (ops $KIND): exit 3, mha named, the later case passed, ${took} s"
