#!/bin/bash
# session 25, call 1: build; the seesaw decode after its deadlock fix (rows, sanitizers, timing against wg v1);
# mla_gpu_check at the defaults with the 6f9d303 gates; the seeds noise run (device_suite.sh seeds).
T0=$(date +%s); DL=$((T0 + ${BUDGET:-540}))
left() { echo $(( DL - $(date +%s) )); }
O=$OUT; mkdir -p $O/logs
MLA_CMAKE_ARGS=-DMLA_GIT_ID=$GITID bash gpu/tools/device_suite.sh none 2>&1 | tail -3
echo "built at +$(( $(date +%s) - T0 )) s"
B=./build-gpu/gpu/mla_gpu_bench; C=./build-gpu/gpu/mla_gpu_check
ok=1
for r in 7 1 4 14; do for v in 0 1; do
  [ $v = 1 ] && [ $ok = 0 ] && continue
  l=$(MLA_GPU_DECODE_WG_SS=$v timeout 40 $B --only $r 2>&1); rc=$?
  echo "$l" >$O/logs/ss$v-row$r.log
  [ $v = 1 ] && [ $rc = 124 ] && ok=0
  echo "ss=$v row $r rc=$rc $(grep -m1 '^| ' <<<"$l" | cut -c1-170) $(grep -m2 -iE 'fail|error' <<<"$l" | tr '\n' ' ' | cut -c1-150)"
done; done
if [ $ok = 1 ]; then
  for tool in memcheck racecheck synccheck; do
    MLA_GPU_DECODE_WG_SS=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $B --only 7 >$O/logs/ss-$tool.log 2>&1
    echo "ss $tool row 7: exit $? $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $O/logs/ss-$tool.log)"
  done
  t=$(date +%s); MLA_GPU_DECODE_WG_SS=1 timeout 120 $C all >$O/logs/check-ss.log 2>&1
  echo "check all, seesaw: exit $? in $(( $(date +%s) - t )) s; $(grep -c FAIL $O/logs/check-ss.log) FAIL lines"
fi
t=$(date +%s); MLA_GPU_CHECK_VERBOSE=1 timeout 120 $C all >$O/logs/check-default.log 2>&1; rc=$?
echo "check all default: exit $rc in $(( $(date +%s) - t )) s"; grep -E "FAIL|no row" $O/logs/check-default.log | cut -c1-200 | head -8
grep -o "layer-0 attn_core=[^ ]*" $O/logs/check-default.log | sort -t= -k2 -g | tail -2
echo "seeds at +$(( $(date +%s) - T0 )) s, $(left) s left"
[ $(left) -gt 150 ] && MLA_CMAKE_ARGS=-DMLA_GIT_ID=$GITID bash gpu/tools/device_suite.sh seeds 2>&1 | grep -E "seed|seeds:" | grep -v ": exit 0 0 FAIL" | tail -30
cd $O && tar cJf all.tar.xz $(ls | grep -v "^all.tar.xz$") && ls | grep -v "^all.tar.xz$" | xargs rm -rf; cd - >/dev/null
echo "total $(( $(date +%s) - T0 )) s"
