#!/bin/sh
# dump_token_batch.sh MLACHECK [PYTHON]: a vLLM-style flat-batch dump (mlacheck_dump.TokenBatchDump)
# written from numpy lines up with the reference tap by tap: two prompts of tiny-v3 dumped by the
# reference, their taps concatenated into one [T, ...] batch in vLLM's shapes and bf16, split back by
# cu_seqlens into one file per sequence; `mlacheck compare --check cross-engine` passes both (every
# attention-internal tap compared: q_nope q_pe kv_c k_pe attn_core lse); a 10% error planted in one
# head of layer 0's attn_core of the second sequence fails that sequence only, at layer 0 attn_core.
# Needs a python with numpy and h5py (PYTHON, python3 or /usr/bin/python3); exit 77 when none has them.
set -u
MLA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=
for p in ${2:-} ${MLA_PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, h5py' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: no python with numpy and h5py"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$MLA" dump --model tiny-v3 --tokens 3,1,4,1,5 --out "$T/ref0.h5" >/dev/null || fail "reference dump 0"
"$MLA" dump --model tiny-v3 --tokens 9,2,6,5,3,5,8 --out "$T/ref1.h5" >/dev/null || fail "reference dump 1"
cmp_expect() { # sequence, expected exit, grep pattern
    "$MLA" compare --check cross-engine "$T/ref$1.h5" "$T/cand-$1.h5" >"$T/out" 2>&1; rc=$?
    cat "$T/out"
    [ $rc -eq "$2" ] || fail "compare of sequence $1: exit $rc, expected $2"
    grep -q "$3" "$T/out" || fail "compare of sequence $1: no '$3'"
}

"$PY" "$HERE/dump_token_batch.py" "$T/cand-{seq}.h5" "$T/ref0.h5" "$T/ref1.h5" || fail "writer"
for s in 0 1; do
    "$PY" -c '
import sys, h5py
f = h5py.File(sys.argv[1], "r")
for t in ("q_nope", "q_pe", "kv_c", "k_pe", "attn_core", "lse"):
    assert t in f["layers/0"], t
assert f["layers/0/attn_core"].attrs["dtype"] == "bf16" and f["layers/0/lse"].attrs["dtype"] == "f32"
assert f["layers/0/k_pe"].ndim == 2 and f["layers/0/attn_core"].ndim == 3' "$T/cand-$s.h5" || fail "sequence $s: taps"
    cmp_expect $s 0 "42 taps compared, 0 failed"
done

"$PY" "$HERE/dump_token_batch.py" "$T/cand-{seq}.h5" --perturb "$T/ref0.h5" "$T/ref1.h5" || fail "writer (perturbed)"
cmp_expect 0 0 "0 failed"
cmp_expect 1 1 "first divergence at layer 0 tap attn_core"
echo "token-batch dump: ok"
