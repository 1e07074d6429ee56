#!/bin/bash
# session 25, call 2: build; gpu-long (both cases side by side, the first run since 2026-11-30 with the
# tensor-core kernels the defaults), then the gpu suite at K 0 (device_suite.sh reseed KS=0) in what is left.
T0=$(date +%s)
O=$OUT; mkdir -p $O/logs
MLA_CMAKE_ARGS=-DMLA_GIT_ID=$GITID bash gpu/tools/device_suite.sh none 2>&1 | tail -3
echo "built at +$(( $(date +%s) - T0 )) s"; nproc
M=./build-gpu/harness/mlacheck
for c in v3-layer-8k-bf16 v3-layer-8k-fp8kv; do
  ( t=$(date +%s); timeout ${LONG_S:-430} $M run --suite gpu-long --case $c --results results/device/long >$O/logs/long-$c.log 2>&1
    echo "gpu-long $c: exit $? in $(( $(date +%s) - t )) s" >>$O/logs/long-rc.txt ) &
done; wait
cat $O/logs/long-rc.txt
for c in v3-layer-8k-bf16 v3-layer-8k-fp8kv; do grep -E "FAIL|PASS|limit use|max" $O/logs/long-$c.log | cut -c1-200 | tail -6; done
cp -r results/device/long $O/long-results 2>/dev/null
left=$(( ${BUDGET:-560} - ($(date +%s) - T0) ))
echo "gpu suite at +$(( $(date +%s) - T0 )) s, $left s left"
[ $left -gt 150 ] && KS=0 BUDGET=$(( left - 30 )) MLA_CMAKE_ARGS=-DMLA_GIT_ID=$GITID bash gpu/tools/device_suite.sh reseed 2>&1 | tail -12
cd $O && tar cJf all.tar.xz $(ls | grep -v "^all.tar.xz$") && ls | grep -v "^all.tar.xz$" | xargs rm -rf; cd - >/dev/null
echo "total $(( $(date +%s) - T0 )) s"
