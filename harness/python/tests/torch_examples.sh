#!/bin/sh
# torch_examples.sh [MLACHECK] [PYTHON]: the two torch worked examples (harness/python/examples/) through
# the export / judge route, each as written and with its planted 1% softmax-scale error:
#   mlacheck ops --export DIR --suite $SUITE
#   torch_mqa_decode.py DIR     -> mlacheck ops --judge DIR   exit 0 (mqa cases pass, mha skipped with reason)
#   ... --plant-scale-bug       -> mlacheck ops --judge DIR   exit 1, every FAIL naming mqa_out or lse
#   torch_sdpa_prefill.py DIR   -> mlacheck ops --judge DIR   exit 0 (mha cases pass, mqa skipped with reason)
#   ... --plant-scale-bug       -> mlacheck ops --judge DIR   exit 1, every FAIL naming mha_out or lse
# One line per run (pass/fail, the judge's exit code and the expected one), then "N passed, N failed";
# exits 1 when a correct example fails or a planted bug is not caught, 77 when PYTHON lacks torch,
# numpy or h5py, 2 when there is no mlacheck. The examples run on cuda when torch sees a GPU, else on
# the cpu (the CPU fallback: this script runs wherever torch does).
#   MLACHECK  default: build-gpu/harness/mlacheck, else build/harness/mlacheck (of this tree)
#   PYTHON    the first of PYTHON, $MLA_PYTHON, python3, /usr/bin/python3 that imports torch, numpy, h5py
#   SUITE=ops-smoke|ops-full  (default ops-smoke)   DEVICE=cuda|cpu (default: the examples' choice)
#   SDPA_BACKEND=auto|math|efficient|flash|cudnn (default auto)   OUT=DIR keeps the export and results
set -u
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
EX=$ROOT/harness/python/examples
MLA=${1:-}
if [ -z "$MLA" ]; then
    for b in build-gpu build; do
        if [ -x "$ROOT/$b/harness/mlacheck" ]; then MLA=$ROOT/$b/harness/mlacheck; break; fi
    done
fi
[ -n "$MLA" ] && [ -x "$MLA" ] || { echo "torch_examples: no mlacheck (build the tree, or pass its path)"; exit 2; }
SUITE=${SUITE:-ops-smoke}
export PYTHONPATH="$ROOT/harness/python${PYTHONPATH:+:$PYTHONPATH}"
PY=
for p in ${2:-} ${MLA_PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch, numpy, h5py' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: no python with torch, numpy and h5py (tried ${2:-} ${MLA_PYTHON:-} python3 /usr/bin/python3)"; exit 77; }
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda" if torch.cuda.is_available() else "no cuda")'
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" || exit 2; T=$OUT; else T=$(mktemp -d); trap 'rm -rf "$T"' EXIT; fi
DEV=${DEVICE:+--device $DEVICE}

"$MLA" ops --export "$T/x" --suite "$SUITE" >"$T/export.log" 2>&1 || { cat "$T/export.log"; echo "FAIL export"; exit 1; }
tail -1 "$T/export.log"

n_pass=0
n_fail=0
# run LABEL SCRIPT EXPECT TENSORS [ARGS...]: the example, then the judge. EXPECT 0: exit 0, no FAIL line,
# at least one PASS; EXPECT 1: exit 1, every FAIL line naming one of TENSORS (a|b), the first of them
# (the output) named at least once.
run() {
    label=$1 script=$2 expect=$3 tensors=$4
    shift 4
    why=
    # shellcheck disable=SC2086
    "$PY" "$EX/$script" "$T/x" $DEV "$@" >"$T/$label.log" 2>&1; prc=$?
    "$MLA" ops --judge "$T/x" --results "$T/results" >"$T/$label.judge" 2>&1; rc=$?
    n_case_pass=$(grep -c '^PASS ' "$T/$label.judge")
    n_case_fail=$(grep -c '^FAIL \|^ERROR ' "$T/$label.judge")
    if [ $prc -ne 0 ]; then
        why="the example exited $prc"
    elif [ $rc -ne "$expect" ]; then
        why="not the expected exit code"
    elif [ "$expect" -eq 0 ]; then
        [ "$n_case_fail" -eq 0 ] && [ "$n_case_pass" -gt 0 ] || why="$n_case_fail failing, $n_case_pass passing cases"
    else
        out_t=${tensors%%|*}
        if grep '^FAIL ' "$T/$label.judge" | grep -Evq " ($tensors): "; then why="a FAIL line names another tensor"
        elif ! grep -Eq "^FAIL .* $out_t: " "$T/$label.judge"; then why="no FAIL line names $out_t"
        fi
    fi
    summary=$(grep -E '^(.*: [0-9]+ cases|report: )' "$T/$label.judge" | tr '\n' ' ')
    if [ -z "$why" ]; then
        n_pass=$((n_pass + 1))
        echo "pass  $label: judge exit $rc (expected $expect); $summary"
    else
        n_fail=$((n_fail + 1))
        echo "FAIL  $label: $why; judge exit $rc (expected $expect); $summary"
        tail -5 "$T/$label.log"
        grep -E '^(FAIL|ERROR) ' "$T/$label.judge" | head -5
    fi
    grep -E '^FAIL ' "$T/$label.judge" | head -2 | cut -c1-220 | sed 's/^/      /'
}

BK=--backend=${SDPA_BACKEND:-auto}
run mqa-decode torch_mqa_decode.py 0 "mqa_out|lse"
run mqa-decode-planted torch_mqa_decode.py 1 "mqa_out|lse" --plant-scale-bug
run sdpa-prefill torch_sdpa_prefill.py 0 "mha_out|lse" "$BK"
run sdpa-prefill-planted torch_sdpa_prefill.py 1 "mha_out|lse" "$BK" --plant-scale-bug
echo "torch examples ($SUITE): $n_pass passed, $n_fail failed"
[ $n_fail -eq 0 ]
