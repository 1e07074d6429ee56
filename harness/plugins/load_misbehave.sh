#!/bin/sh
# A plugin whose constructor or register function crashes cannot take the gate down (issue 12 item
# 3): the library is loaded in the plugin's child process, so `mlacheck run` and `mlacheck ops` end
# with exit 3 (an engine error) naming the plugin file and the entry point (dlopen, the register
# function) and the signal.
# usage: load_misbehave.sh MLACHECK run|ops LIB ENTRY   (run from the source tree: its suites/)
set -u
MLA="$1" ROUTE="$2" LIB="$3" ENTRY="$4"
T=$(mktemp -d /tmp/mlacheck-load-misbehave-XXXXXX)
trap 'rm -rf "$T"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:handle_segv=0:handle_abort=0"
if [ "$ROUTE" = run ]; then
    "$MLA" run --suite smoke --case tiny-v3-prefill --engine "plugin:$LIB" --results "$T/r" --quiet >"$T/out" 2>&1
else
    "$MLA" ops --engine "plugin:$LIB" --results "$T/r" >"$T/out" 2>&1
fi
rc=$?
cat "$T/out"
fail() { echo "FAIL ($ROUTE, $ENTRY): $*"; exit 1; }
[ $rc -eq 3 ] || fail "exit $rc, expected 3 (an engine error)"
grep -Fq "plugin:$LIB: $ENTRY crashed: the plugin process died of signal 11" "$T/out" ||
    fail "no message naming plugin:$LIB, $ENTRY and signal 11"
echo "PASS ($ROUTE, $ENTRY): exit 3, the plugin file and $ENTRY named"
