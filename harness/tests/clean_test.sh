#!/bin/sh
# clean_test.sh MLACHECK WORK: `mlacheck clean` on a made-up results folder. Keeps the newest N run
# folders by the stamp in their name (made in another order, so mtime would choose others), never
# touches what is not a run folder (staging .tmp-, published/, a renamed run, a file, a symlink named
# like a run) nor anything a symlink inside a removed run points to; --dry-run removes nothing; bad
# usage exits 2.
set -u
m=$1 w=$2
fail() { echo "clean_test: FAIL: $*" >&2; exit 1; }
rm -rf "$w" && mkdir -p "$w/r" "$w/outside/dir" || fail "cannot create $w"
r=$w/r
echo keep > "$w/outside/file"
echo keep > "$w/outside/dir/inner"
# five runs, created newest first: the stamp, not the creation order, says which are newest
for id in 20261201T120500Z-ci-00e5 20261201T120400Z-smoke-00d4 20261130T235959Z-ops-smoke-0c3f \
          20261130T120000Z-ci-a1b2 20261129T080000Z-long-context-ffff; do
  mkdir -p "$r/$id/plots" && echo '{}' > "$r/$id/summary.json" && echo x > "$r/$id/plots/a.dat" || fail "setup $id"
  ln -s "$w/outside/file" "$r/$id/link-file" && ln -s "$w/outside/dir" "$r/$id/link-dir" || fail "setup links $id"
  sleep 0.01 2>/dev/null || true
done
mkdir -p "$r/20261128T000000Z-ci-0001.tmp-AbC123" "$r/published/20261101T000000Z-ci-0002" "$r/baseline-before-fix"
echo '{}' > "$r/baseline-before-fix/summary.json"
echo file > "$r/20261101T000000Z-ci-0003"
ln -s "$w/outside/dir" "$r/20261102T000000Z-ci-0004"
before=$(find "$r" "$w/outside" | sort)

out=$("$m" clean --keep 2 --results "$r" --dry-run) || fail "dry run exit $?"
echo "$out"
test "$(echo "$out" | grep -c '^would remove')" -eq 3 || fail "dry run should list 3 folders"
test "$(find "$r" "$w/outside" | sort)" = "$before" || fail "dry run changed the folder"

out=$("$m" clean --keep 2 --results "$r") || fail "clean --keep 2 exit $?"
echo "$out"
echo "$out" | grep -q "clean: $r: 5 run folders, kept 2, removed 3" || fail "summary line"
for id in 20261201T120500Z-ci-00e5 20261201T120400Z-smoke-00d4; do
  test -f "$r/$id/plots/a.dat" || fail "newest run $id removed"
done
for id in 20261130T235959Z-ops-smoke-0c3f 20261130T120000Z-ci-a1b2 20261129T080000Z-long-context-ffff; do
  test ! -e "$r/$id" || fail "old run $id kept"
done
for p in 20261128T000000Z-ci-0001.tmp-AbC123 published/20261101T000000Z-ci-0002 baseline-before-fix/summary.json \
         20261101T000000Z-ci-0003; do
  test -e "$r/$p" || fail "$p is not a run folder but was removed"
done
test -L "$r/20261102T000000Z-ci-0004" || fail "a symlink named like a run was removed"
test -f "$w/outside/file" && test -f "$w/outside/dir/inner" || fail "a symlink's target was removed"

out=$("$m" clean --keep 0 --results "$r") || fail "clean --keep 0 exit $?"
echo "$out" | tail -1
test ! -e "$r/20261201T120500Z-ci-00e5" && test -f "$w/outside/dir/inner" || fail "--keep 0"

"$m" clean --results "$r" >/dev/null 2>&1; test $? -eq 2 || fail "no --keep: expected exit 2"
"$m" clean --keep -1 --results "$r" >/dev/null 2>&1; test $? -eq 2 || fail "--keep -1: expected exit 2"
"$m" clean --keep 1 --results "$w/missing" >/dev/null 2>&1; test $? -eq 2 || fail "missing folder: expected exit 2"
"$m" clean --keep 1 extra --results "$r" >/dev/null 2>&1; test $? -eq 2 || fail "stray argument: expected exit 2"
echo "clean_test: ok"
