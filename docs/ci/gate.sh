#!/bin/sh
# gate.sh [plugin:LIB.so ...]: the CI gate of docs/ci (github-actions.yml, gitlab-ci.yml).
# Runs `mlacheck run --suite $MLACHECK_SUITE` (default ci) on the reference engine and on each plugin
# engine given, every one even after a failure, and collects each run's summary.md and junit.xml as
# $MLACHECK_REPORT/<name>-summary.md and <name>-junit.xml (default mlacheck-report/; <name> is ref or
# plugin-<library stem>), the whole run folders under $MLACHECK_REPORT/runs/. Appends the summaries to
# $GITHUB_STEP_SUMMARY when that is set. MLACHECK names the binary (default: mlacheck on PATH).
# Exit: 0 when every gate passed, else the first failing gate's code (1 a numerical failure, 2 bad
# input, 3 engine error, 77 nothing ran: a gate that checked nothing is not a pass).
set -u
m=${MLACHECK:-mlacheck}
suite=${MLACHECK_SUITE:-ci}
out=${MLACHECK_REPORT:-mlacheck-report}
mkdir -p "$out/runs" || exit 2
rc=0
gate() {
  name=$1 engine=$2
  rm -rf "$out/runs/$name"
  "$m" run --suite "$suite" --engine "$engine" --results "$out/runs/$name"
  r=$?
  echo "gate $name (--engine $engine, --suite $suite): exit $r"
  d=$(ls -d "$out/runs/$name"/*/ 2>/dev/null | tail -1)
  if [ -n "$d" ] && [ -f "${d}summary.md" ]; then
    cp "${d}summary.md" "$out/$name-summary.md"
    cp "${d}junit.xml" "$out/$name-junit.xml"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
      { echo "### gate $name: exit $r"; cat "${d}summary.md"; echo; } >> "$GITHUB_STEP_SUMMARY"
    fi
  else
    echo "gate $name: no report written (exit $r)" | tee "$out/$name-summary.md"
  fi
  if [ "$r" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=$r; fi
}
gate ref ref
for e in "$@"; do
  stem=$(basename "${e#plugin:}")
  stem=${stem%.so}
  gate "plugin-${stem#lib}" "$e"
done
exit "$rc"
