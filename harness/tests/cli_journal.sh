#!/bin/sh
# The run journal (issue 12 item 2): results survive a signal, a kill and an unwritable folder.
#   SIGINT after a few checks of `run --suite ci`: exit 130, the report says "interrupted by SIGINT
#   after N of M" and lists the checks the journal holds; SIGTERM: 143; kill -9 then `mlacheck
#   report DIR`: the report rebuilt from the journal, marked incomplete; a read-only results folder
#   and a full disk (a file size limit): exit 2 whatever the checks said; a whole run: no INCOMPLETE
#   and journal.tsv equal to metrics.tsv.
# usage: cli_journal.sh MLACHECK (from the source root)
set -u
MLA="$1"
T=$(mktemp -d /tmp/mlacheck-journal-XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# waits until the run folder under $1 has journaled $2 units; prints the folder
wait_units() {
    i=0
    while [ $i -lt 1500 ]; do
        f=$(ls "$1"/*/journal.jsonl 2>/dev/null | head -1)
        if [ -n "$f" ] && [ "$(grep -c '^{"done"' "$f")" -ge "$2" ]; then dirname "$f"; return 0; fi
        sleep 0.2
        i=$((i + 1))
    done
    return 1
}

count() { grep -c "$1" "$2"; }

# 1. SIGINT mid-run
"$MLA" run --suite ci --results "$T/int" --quiet >"$T/int.out" 2>&1 &
pid=$!
d=$(wait_units "$T/int" 3) || { kill -KILL $pid; fail "no 3 units journaled in 300 s"; }
kill -INT $pid
wait $pid
rc=$?
cat "$T/int.out"
[ $rc -eq 130 ] || fail "SIGINT: exit $rc, expected 130"
grep -q 'interrupted by SIGINT after [0-9]* of [0-9]* case/profile units' "$T/int.out" || fail "SIGINT: no 'interrupted' line"
[ -f "$d/INCOMPLETE" ] || fail "SIGINT: no INCOMPLETE marker in $d"
grep -q '"verdict": "incomplete"' "$d/summary.json" || fail "SIGINT: summary.json verdict is not incomplete"
grep -q '"incomplete": "interrupted by SIGINT after' "$d/summary.json" || fail "SIGINT: summary.json does not say interrupted"
grep -q '^## mlacheck ci: INCOMPLETE' "$d/summary.md" || fail "SIGINT: summary.md not headed INCOMPLETE"
grep -q 'name="complete"' "$d/junit.xml" || fail "SIGINT: junit.xml has no failing 'complete' testcase"
n=$(count '^{"check"' "$d/journal.jsonl")
[ "$n" -ge 2 ] || fail "SIGINT: the journal holds $n checks, expected the finished ones (>= 2)"
grep -q "\"checks\": $n," "$d/summary.json" || fail "SIGINT: summary.json does not count the journal's $n checks"
rows=$(count '| pass |\|FAIL\*\* |\| skip |' "$d/summary.md")
[ "$rows" -ge "$n" ] || fail "SIGINT: summary.md lists $rows checks, the journal $n"
grep -q '| tiny-v3-golden | golden | fp64 | prefill | pass |' "$d/summary.md" || fail "SIGINT: the first finished check is not listed"
echo "SIGINT: exit 130, $n finished checks in the report"

# 2. SIGTERM: 143
"$MLA" run --suite ci --results "$T/term" --quiet >"$T/term.out" 2>&1 &
pid=$!
d=$(wait_units "$T/term" 1) || { kill -KILL $pid; fail "no unit journaled in 300 s"; }
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: exit $rc, expected 143"
grep -q '"incomplete": "interrupted by SIGTERM after' "$d/summary.json" || fail "SIGTERM: summary.json does not say interrupted"
echo "SIGTERM: exit 143"

# 3. kill -9: no report; `mlacheck report DIR` rebuilds it from the journal
"$MLA" run --suite ci --results "$T/kill" --quiet >"$T/kill.out" 2>&1 &
pid=$!
d=$(wait_units "$T/kill" 2) || { kill -KILL $pid; fail "no 2 units journaled in 300 s"; }
kill -KILL $pid
wait $pid
[ ! -f "$d/summary.json" ] || fail "kill -9: a summary.json exists before the rebuild"
n=$(count '^{"check"' "$d/journal.jsonl")
"$MLA" report "$d" >"$T/rebuild.out" 2>&1 || { cat "$T/rebuild.out"; fail "report DIR: exit $?"; }
cat "$T/rebuild.out"
grep -q "\"checks\": $n," "$d/summary.json" || fail "rebuild: summary.json does not count the journal's $n checks"
grep -q '"incomplete": "the run stopped after [0-9]* of [0-9]* case/profile units' "$d/summary.json" || fail "rebuild: not marked as stopped"
for f in summary.md junit.xml index.html metrics.tsv; do [ -s "$d/$f" ] || fail "rebuild: no $f"; done
[ -f "$d/INCOMPLETE" ] || fail "rebuild: the INCOMPLETE marker was removed"
# the provenance the run added (engine, model, reseed) survives: it is journaled with the checks
for p in '"engine": "ref"' '"model": "tiny-v3' '"reseed": "0"'; do
    grep -q "$p" "$d/summary.json" || fail "rebuild: provenance $p lost"
done
echo "kill -9: report rebuilt with $n checks and the run's provenance"
# a crash mid-write leaves a torn last line in either file: it is dropped, the rest rebuilt
printf 'tiny-v3-golden\tgolden\tfp' >>"$d/journal.tsv"
printf '{"check":{"case":"tiny' >>"$d/journal.jsonl"
"$MLA" report "$d" >"$T/torn.out" 2>&1 || { cat "$T/torn.out"; fail "report DIR after a torn line: exit $?"; }
grep -q "$n checks, .*(a torn last line dropped)" "$T/torn.out" || { cat "$T/torn.out"; fail "torn line: not reported as dropped"; }
grep -q "\"checks\": $n," "$d/summary.json" || fail "torn line: summary.json does not count the journal's $n checks"
echo "torn last lines: dropped, $n checks rebuilt"

# 4. a read-only results folder: exit 2 before any check runs (root ignores modes: a read-only bind mount)
mkdir -p "$T/ro"
if [ "$(id -u)" != 0 ]; then
    chmod 555 "$T/ro"
    "$MLA" run --suite ci --case tiny-v3-golden --results "$T/ro" --quiet >"$T/ro.out" 2>&1
    rc=$?
elif unshare -m true 2>/dev/null; then
    unshare -m sh -c 'mount --bind -o ro "$1" "$1" && exec "$2" run --suite ci --case tiny-v3-golden --results "$1" --quiet' \
        sh "$T/ro" "$MLA" >"$T/ro.out" 2>&1
    rc=$?
else
    rc=skip
fi
if [ "$rc" != skip ]; then
    cat "$T/ro.out"
    [ "$rc" -eq 2 ] || fail "read-only results: exit $rc, expected 2"
    grep -q 'cannot create the run folder' "$T/ro.out" || fail "read-only results: no message naming the run folder"
    echo "read-only results folder: exit 2"
else
    echo "read-only results folder: not tested (root without unshare)"
fi

# 5. a full disk (a file size limit below the journal's size): exit 2, though every check that ran passed
(trap '' XFSZ; ulimit -f 24; exec "$MLA" run --suite ci --case tiny-v3-fp64 --results "$T/full" --quiet) >"$T/full.out" 2>&1
rc=$?
cat "$T/full.out"
[ $rc -eq 2 ] || fail "full disk: exit $rc, expected 2"
grep -q 'File too large' "$T/full.out" || fail "full disk: no message naming the write error"

# 6. a whole run: no marker, the journal's rows are metrics.tsv's
"$MLA" run --suite ci --case tiny-v3-golden --results "$T/ok" --quiet >"$T/ok.out" 2>&1 || { cat "$T/ok.out"; fail "whole run: exit $?"; }
d=$(ls -d "$T/ok"/*/)
[ ! -f "$d/INCOMPLETE" ] || fail "whole run: INCOMPLETE left behind"
cmp "$d/journal.tsv" "$d/metrics.tsv" || fail "whole run: journal.tsv differs from metrics.tsv"
grep -q '"complete": true' "$d/summary.json" || fail "whole run: summary.json not complete"
grep -q '^{"end":"complete"}' "$d/journal.jsonl" || fail "whole run: the journal has no end line"
echo "whole run: complete, journal.tsv = metrics.tsv"
echo PASS
