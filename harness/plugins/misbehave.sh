#!/bin/sh
# A plugin cannot take the gate down (issue 12 item 3): each misbehaving plugin (misbehaving_plugin.c)
# crashes, aborts, exits or hangs in forward_mha over the first case's 7-token prompt; the run must
# end with exit 3 (an engine error), name the entry point and the signal or exit status, and still
# run and pass the later case (a 5-token prompt), with both in the report.
# usage: misbehave.sh MLACHECK KIND LIB EXPECT [ENTRY]   (KIND names the run; EXPECT: a grep -E
# pattern; ENTRY what the message names before it, default forward_mha)
set -u
MLA="$1" KIND="$2" LIB="$3" EXPECT="$4" ENTRY="${5:-forward_mha}"
SRC=$(pwd)
T=$(mktemp -d /tmp/mlacheck-misbehave-XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/suites"
cp "$SRC/suites/rules.tol" "$T/suites/"
cat > "$T/suites/misbehave.suite" <<'SUITE'
[suite]
description = a misbehaving plugin: the first case's prefill is the 7-token call it misbehaves on; the later one must still run

[defaults]
engines  = ref
profiles = fp64
paths    = prefill
checks   = determinism

[case misbehaves-first]
model   = tiny-v3
prompts = tokens:3,1,4,1,5,9,2

[case runs-later]
model   = tiny-v3
prompts = tokens:3,1,4,1,5
SUITE
cd "$T" || exit 1
# under the sanitizer build (CI's second pass): the child must die of the plugin's own signal, not
# of ASan's report (handle_segv=0), and exit(0) in the child must stay exit status 0 (no leak check
# of the child, which holds a copy of the whole caller)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:handle_segv=0:handle_abort=0"
start=$(date +%s)
"$MLA" run --suite misbehave --engine "plugin:$LIB" --results "$T/r" --quiet >"$T/out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$T/out"
fail() { echo "FAIL ($KIND): $*"; exit 1; }
[ $rc -eq 3 ] || fail "exit $rc, expected 3 (an engine error)"
grep -Eq "plugin .*: $ENTRY $EXPECT" "$T/out" || fail "no message naming $ENTRY and '$EXPECT'"
md=$(ls "$T"/r/*/summary.md) || fail "no report"
grep -q '| misbehaves-first | run@plugin | fp64 | prefill | \*\*FAIL\*\* |' "$md" || fail "the misbehaving case is not a failed check in the report"
grep -q '| runs-later | determinism@plugin | fp64 | prefill | pass |' "$md" || fail "the later case did not run and pass"
[ ! -f "$(dirname "$md")/INCOMPLETE" ] || fail "the run folder is marked incomplete"
echo "PASS ($KIND): exit 3, $ENTRY named, the later case passed, ${took} s"
