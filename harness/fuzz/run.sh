#!/usr/bin/env bash
# run.sh BUILD SECONDS [JOBS] [TARGET...]: fuzz each target of the MLA_FUZZ build in BUILD for SECONDS,
# JOBS targets at a time (default 1), from a copy of the committed corpus (new inputs go to
# BUILD/fuzz-work/<target>/corpus, never into the tree). Prints per target the executions, the corpus
# (files, bytes) and the crash files, and a table at the end; exits 1 when any target crashed, leaked,
# timed out or ran out of memory (its artifact is in BUILD/fuzz-work/<target>/: minimise it, fix, and
# commit it under harness/fuzz/crashes/<target>/ so that fuzz_replay_<target> replays it).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?usage: run.sh BUILD SECONDS [JOBS] [TARGET...]}"
secs="${2:?usage: run.sh BUILD SECONDS [JOBS] [TARGET...]}"
jobs="${3:-1}"
shift 3 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors config suite rules h5)
work="${MLA_FUZZ_WORK:-$build/fuzz-work}"
mkdir -p "$work"
# -timeout 30: the HDF5 reader's probe child may take its full 10 s on a hanging file.
# detect_leaks stays on; abort_on_error makes a sanitizer report a crash artifact.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1"

one() {
  local t="$1" bin="$build/harness/fuzz/fuzz_$1" w="$work/$1"
  if [ ! -x "$bin" ]; then
    echo "fuzz_$t: not built (cmake -DMLA_FUZZ=ON, target mla_fuzz)" > "$w.summary"
    return 1
  fi
  rm -rf "$w"
  mkdir -p "$w/corpus"
  "$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
         -artifact_prefix="$w/" "$w/corpus" "$here/corpus/$t" > "$w/log" 2>&1
  local rc=$?
  local execs files bytes arts
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$w/log" | tail -1)
  files=$(find "$w/corpus" "$here/corpus/$t" -type f | wc -l)
  bytes=$(cat "$w/corpus"/* "$here/corpus/$t"/* 2>/dev/null | wc -c)
  arts=$(find "$w" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  # libFuzzer exits non-zero on any crash, leak, timeout or OOM of the fuzzing process. Artifacts
  # with exit 0 come from fuzz_h5's probe children (forks of the fuzzer that keep its crash
  # handlers): libhdf5 crashing or over-allocating inside the probe, which the reader absorbed.
  local note=""
  [ "$rc" -eq 0 ] && [ "$arts" -ne 0 ] && note=" (in the probe child, absorbed)"
  printf 'fuzz_%-12s %8ss %12s execs  corpus %5s files %9s bytes  artifacts %s%s  rc %s\n' "$t" "$secs" \
         "${execs:-?}" "$files" "$bytes" "$arts" "$note" "$rc" > "$w.summary"
  if [ "$rc" -ne 0 ]; then
    tail -40 "$w/log" >> "$w.summary"
    return 1
  fi
}

fail=0
running=0
for t in "${targets[@]}"; do
  one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || fail=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || fail=1
  running=$((running - 1))
done
for t in "${targets[@]}"; do cat "$work/$t.summary"; done
exit $fail
