#!/bin/sh
# ops_export_judge.sh MLACHECK [PYTHON]: the export / judge route end to end, with no torch and no GPU:
# export ops-smoke, run the numpy operator (examples/numpy_mla_ops.py), judge (exit 0); a planted 1%
# softmax-scale error (exit 1, the case and tensor named, in the output and the results folder's
# junit); bad outputs (exit 2, file and dataset named);
# a case marked skipped (reported SKIP with its reason); the package's own checks of write_output.
# Needs a python with numpy and h5py: PYTHON, python3 on PATH or /usr/bin/python3; exit 77 when none.
set -u
MLA=$1
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=
for p in ${2:-} ${MLA_PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, h5py' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: no python with numpy and h5py"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"

"$MLA" ops --export "$T/x" --suite ops-smoke >"$T/log" 2>&1 || { cat "$T/log"; fail "export"; }
n=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$T/x/cases.json")
[ "$n" -eq 10 ] || fail "cases.json lists $n cases, expected the 10 of ops-smoke"

# 1. the numpy operator passes every case
"$PY" "$HERE/examples/numpy_mla_ops.py" "$T/x" >"$T/log" 2>&1 || { cat "$T/log"; fail "numpy operator"; }
"$MLA" ops --judge "$T/x" --results "$T/r" >"$T/out" 2>&1; rc=$?
cat "$T/out"
[ $rc -eq 0 ] || fail "judge of the numpy operator: exit $rc, expected 0"
grep -q "10 cases, 10 passed, 0 failed" "$T/out" || fail "judge summary"

# 2. a planted 1% softmax-scale error fails, naming the case and the tensor
"$PY" "$HERE/examples/numpy_mla_ops.py" "$T/x" --scale-error 0.01 >"$T/log" 2>&1 || { cat "$T/log"; fail "planted"; }
"$MLA" ops --judge "$T/x" --results "$T/r" >"$T/out" 2>&1; rc=$?
cat "$T/out"
[ $rc -eq 1 ] || fail "judge of the planted scale error: exit $rc, expected 1"
grep -Eq '^FAIL +mqa-v3-h128-p1-fp8kv-real-bc +[0-9.]+s mqa_out: ' "$T/out" || fail "planted: case and mqa_out not named"
grep -Eq '^FAIL +mqa-v3-h128-p64-bf16-small-ba +[0-9.]+s lse: ' "$T/out" || fail "planted: case and lse not named"
# ... and its results folder (named after the exported suite) says the same in junit.xml
R=$(sed -n 's|^report: \(.*\)/index.html .*|\1|p' "$T/out")
case "$R" in "$T/r/"*-ops-smoke-*) ;; *) fail "planted: report folder '$R'";; esac
for f in summary.json summary.md junit.xml metrics.tsv; do [ -s "$R/$f" ] || fail "planted: $f missing"; done
grep -A1 'classname="ops-smoke.mqa-v3-h128-p1-fp8kv-real-bc" name="op/fp8kv/mqa" time="[0-9.]*">' "$R/junit.xml" |
    grep -q '<failure type="[a-z]*" message="mqa_out: .* &gt; limit ' || fail "planted: junit failure lacks mqa_out and its limit"
grep -A1 'classname="ops-smoke.mqa-v3-h128-p64-bf16-small-ba" name="op/bf16/mqa" time="[0-9.]*">' "$R/junit.xml" |
    grep -q '<failure type="[a-z]*" message="lse: ' || fail "planted: junit failure lacks lse"

# 3. bad outputs are exit 2 naming the file, the dataset and what was expected; never a pass
"$PY" "$HERE/examples/numpy_mla_ops.py" "$T/x" >/dev/null 2>&1 || fail "rewrite"
c=mqa-v3-h128-p64-bf16-small-ba
expect2() { # what, grep pattern
    "$MLA" ops --judge "$T/x" --results "$T/r" >"$T/out" 2>&1; rc=$?
    [ $rc -eq 2 ] || { cat "$T/out"; fail "$1: exit $rc, expected 2"; }
    grep -q "$2" "$T/out" || { cat "$T/out"; fail "$1: message lacks '$2'"; }
}
cp "$T/x/$c.out.h5" "$T/keep.h5"
rm "$T/x/$c.out.h5"
expect2 "missing file" "$c.out.h5: missing"
cp "$T/keep.h5" "$T/x/$c.out.h5" && "$PY" -c 'import h5py,sys; f=h5py.File(sys.argv[1],"a"); del f["lse"]' "$T/x/$c.out.h5"
expect2 "missing lse" "$c.out.h5: dataset lse is missing: expected float32 \[3, 128\]"
cp "$T/keep.h5" "$T/x/$c.out.h5" && "$PY" -c '
import h5py,sys,numpy as np; f=h5py.File(sys.argv[1],"a"); del f["out"]; f["out"]=np.zeros((3,128,500),np.float32)' "$T/x/$c.out.h5"
expect2 "wrong shape" "dataset out has shape \[3, 128, 500\], expected float32 \[3, 128, 512\]"
cp "$T/keep.h5" "$T/x/$c.out.h5" && "$PY" -c '
import h5py,sys,numpy as np; f=h5py.File(sys.argv[1],"a"); a=f["out"][()]; del f["out"]; f["out"]=a.astype(np.float16)' "$T/x/$c.out.h5"
expect2 "wrong dtype" "dataset out: float of 2 bytes, expected float32"
cp "$T/x/mqa-v3-h128-p1-fp8kv-real-bc.out.h5" "$T/x/$c.out.h5"
expect2 "another case's outputs" "attribute id is 'mqa-v3-h128-p1-fp8kv-real-bc', expected '$c'"
cp "$T/keep.h5" "$T/x/$c.out.h5" && "$PY" -c '
import h5py,sys,numpy as np; f=h5py.File(sys.argv[1],"a"); del f["out"]; f["out"]=np.full((3,128,512),np.nan,np.float32)' "$T/x/$c.out.h5"
"$MLA" ops --judge "$T/x" --results "$T/r" >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || { cat "$T/out"; fail "NaN out written around the package: exit $rc, expected 1"; }
grep -Eq "^FAIL +$c .* mqa_out: " "$T/out" || { cat "$T/out"; fail "NaN out: case and tensor not named"; }
cp "$T/keep.h5" "$T/x/$c.out.h5"

# 4. a case the kernel marks unsupported is SKIP with its reason; the others still judged
"$PY" -c '
import sys, mlacheck
for c in mlacheck.exported_cases(sys.argv[1]):
    if c.kv_format == "fp8ds": c.skip("no fp8_ds_mla in this kernel")' "$T/x" || fail "skip"
"$MLA" ops --judge "$T/x" --results "$T/r" >"$T/out" 2>&1; rc=$?
cat "$T/out"
[ $rc -eq 0 ] || fail "judge with skips: exit $rc, expected 0"
grep -Eq '^SKIP +mqa-k2-h64-p16-fp8ds-small-bb .*skipped by the kernel: no fp8_ds_mla in this kernel' "$T/out" ||
    fail "skip reason not reported"
grep -q "10 cases, 8 passed, 0 failed, 0 errors, 2 skipped" "$T/out" || fail "summary with skips"

# 5. the package refuses bad outputs with the case, the tensor and what was expected
"$PY" - "$T/x" <<'PYEOF' || fail "package checks"
import sys, numpy as np, mlacheck
case = next(iter(mlacheck.exported_cases(sys.argv[1])))
assert case.inputs["q"].dtype == np.float32 and case.raw["q"].dtype == np.uint16
assert case.raw["block_table"].dtype == np.int32 and case.out_shape == (3, 128, 512)
def refused(out, lse, want):
    try:
        case.write_output(out, lse)
    except mlacheck.CaseError as e:
        assert case.id in str(e) and want in str(e), str(e)
        return
    raise AssertionError("accepted: " + want)
out, lse = np.zeros(case.out_shape, np.float32), np.zeros(case.lse_shape, np.float32)
refused(out[:, :, :64], lse, "out has shape [3, 128, 64]: expected [3, 128, 512]")
refused(out, None, "lse is missing")
refused(out.astype(np.int32), lse, "out has dtype int32")
bad = out.copy(); bad[1, 2, 3] = np.nan
refused(bad, lse, "out[1, 2, 3] is nan")
print("package checks ok")
PYEOF
echo "ops export/judge: ok"
