#!/bin/bash
# session 24, call 1: build; mla_gpu_check at the defaults; bisect tiny-v3 fp8 over the defaults since 12-03; seed sweep.
T0=$(date +%s); DL=$((T0 + ${BUDGET:-330}))
left() { echo $(( DL - $(date +%s) )); }
O=$OUT
MLA_CMAKE_ARGS=-DMLA_GIT_ID=$GITID bash gpu/tools/device_suite.sh none 2>&1 | tail -5
echo "built at +$(( $(date +%s) - T0 )) s"
C=./build-gpu/gpu/mla_gpu_check
t=$(date +%s); MLA_GPU_CHECK_VERBOSE=1 timeout 200 $C all >$O/check-default.log 2>&1; rc=$?
echo "check all default: exit $rc in $(( $(date +%s) - t )) s"; grep -E "FAIL|masked|failed" $O/check-default.log | cut -c1-220 | head -20
[ $rc = 0 ] || for sw in MLA_GPU_GEMM_MMA=0 MLA_GPU_DECODE_WF=0 MLA_GPU_PREFILL_WS=0 MLA_GPU_DECODE_BALANCE=1; do
  [ $(left) -lt 60 ] && { echo "skip $sw: deadline"; continue; }
  t=$(date +%s); env $sw timeout 120 $C tiny-v3 >$O/check-$sw.log 2>&1; rc=$?
  echo "== $sw tiny-v3: exit $rc in $(( $(date +%s) - t )) s"
  grep -E "fp8" $O/check-$sw.log | grep -v PASS | sed -E 's/embed=.*attn_core=([^ ]*).*out=([^ ]*) final_norm.*logits=([^ ]*) \|/attn_core=\1 out=\2 logits=\3 |/' | cut -c1-220
done
B=./build-gpu/gpu/mla_gpu_bench
for r in 7 1 4 14 10; do for v in 0 1; do
  [ $(left) -lt 60 ] && continue
  l=$(MLA_GPU_DECODE_WG_SS=$v timeout 60 $B --only $r 2>&1); rc=$?
  echo "ss=$v row $r rc=$rc $(grep -m1 '^| ' <<<"$l" | cut -c1-200) $(grep -m2 -iE 'fail|error' <<<"$l" | tr '\n' ' ' | cut -c1-200)"
done; done
if [ $(left) -gt 120 ]; then
  MLA_GPU_DECODE_WG_SS=1 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B --only 7 >$O/ss-memcheck.log 2>&1
  echo "ss memcheck row 7: exit $? $(grep -m1 'ERROR SUMMARY' $O/ss-memcheck.log)"
  MLA_GPU_DECODE_WG_SS=1 timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 $B --only 7 >$O/ss-racecheck.log 2>&1
  echo "ss racecheck row 7: exit $? $(grep -m1 'RACECHECK SUMMARY\|ERROR SUMMARY' $O/ss-racecheck.log)"
fi
t=$(date +%s); MLA_CMAKE_ARGS=-DMLA_GIT_ID=$GITID bash gpu/tools/device_suite.sh bench >$O/bench-run.log 2>&1
echo "bench: exit $? in $(( $(date +%s) - t )) s"; grep -E "^mla_gpu_bench|^\| decode" $O/bench.md | head -8 | cut -c1-130; tail -3 $O/bench.md | cut -c1-300
echo "seed sweep at +$(( $(date +%s) - T0 )) s, $(left) s left"
for s in $(seq 1 12); do
  [ $(left) -lt 60 ] && break
  ( timeout $(( $(left) - 10 )) $C all all $s >$O/seed-$s.log 2>&1; echo "$s $?" >>$O/seed-rc.txt ) &
  [ $((s % 4)) = 0 ] && wait
done; wait
sort -n $O/seed-rc.txt | tr '\n' ' '; echo
for s in $(seq 1 12); do grep -H "FAIL" $O/seed-$s.log | cut -c1-200; done | head -30
cd $O && tar cJf all.tar.xz $(ls | grep -v "^all.tar.xz$\|^bench.md$") && ls | grep -v "^all.tar.xz$\|^bench.md$" | xargs rm -rf; cd - >/dev/null
echo "total $(( $(date +%s) - T0 )) s"
