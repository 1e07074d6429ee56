#!/bin/sh
# install_test.sh BUILD SRC WORK LIBDIR GENERATOR: `cmake --install BUILD --prefix WORK/prefix`, then, from
# WORK/run (outside the source tree), with only the prefix:
#   1. find_package(mlacheck): this folder's CMakeLists.txt (the example plugin, a headers-only module,
#      programs on mlacheck::capi and mlacheck::harness) configures, builds and runs;
#   2. pkg-config: the attention-only example built by gcc with `pkg-config --cflags --libs mlacheck`;
#   3. the installed mlacheck gates both plugins (run --suite smoke, ops ops-smoke: exit 0), reads a
#      suite that exists only in the prefix, writes its results in the working folder.
# Any step that fails fails the test, naming the step.
set -u
build=$1 src=$2 work=$3 libdir=$4 gen=$5
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
rm -rf "$work" && mkdir -p "$work/run" || fail "cannot create $work"
p=$work/prefix
m=$p/bin/mlacheck
t0=$(date +%s)

step "cmake --install $build --prefix $p"
cmake --install "$build" --prefix "$p" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }
echo "installed $(grep -c '^-- Installing' "$work/install.log") files"
for f in "$m" "$p/$libdir/libmlacheck.so" "$p/$libdir/libmla_ref.a" "$p/include/mla/plugin.h" \
         "$p/include/mla/attn_op.h" "$p/include/mlacheck/capi.h" "$p/share/mlacheck/suites/rules.tol" \
         "$p/$libdir/cmake/mlacheck/mlacheckConfig.cmake" "$p/$libdir/cmake/mlacheck/mlacheckConfigVersion.cmake" \
         "$p/$libdir/pkgconfig/mlacheck.pc" "$p/$libdir/pkgconfig/mlacheck-capi.pc" "$p/share/mlacheck/ci/gate.sh"; do
  test -e "$f" || fail "not installed: $f"
done

step "find_package(mlacheck): configure and build $src/harness/tests/install"
cmake -S "$src/harness/tests/install" -B "$work/fp" -G "$gen" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE=Release \
  > "$work/fp.log" 2>&1 || { cat "$work/fp.log"; fail "find_package configure"; }
cmake --build "$work/fp" > "$work/fp-build.log" 2>&1 || { cat "$work/fp-build.log"; fail "find_package build"; }
grep -q "mlacheck_DIR:PATH=$p/" "$work/fp/CMakeCache.txt" || fail "find_package found another mlacheck: $(grep mlacheck_DIR "$work/fp/CMakeCache.txt")"
ls "$work/fp"/*.so
"$work/fp/probe_capi" || fail "probe_capi"
if [ -x "$work/fp/probe_harness" ]; then "$work/fp/probe_harness" || fail "probe_harness"; fi

step "pkg-config: $(PKG_CONFIG_PATH=$p/$libdir/pkgconfig pkg-config --modversion mlacheck) from $p/$libdir/pkgconfig"
export PKG_CONFIG_PATH="$p/$libdir/pkgconfig"
cflags=$(pkg-config --cflags mlacheck) && libs=$(pkg-config --libs mlacheck) || fail "pkg-config mlacheck"
echo "cflags: $cflags"
echo "libs: $libs"
# shellcheck disable=SC2086 # the flags are words
cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden $cflags "$p/share/mlacheck/plugins/example_attn_only_plugin.c" \
   -o "$work/libattn_pc.so" -Wl,--exclude-libs,ALL -Wl,--no-undefined $libs || fail "pkg-config build of the attention-only plugin"
# shellcheck disable=SC2046
printf '#include "mlacheck/capi.h"\nint main(void){return mlacheck_capi_version()==MLACHECK_CAPI_VERSION?0:1;}\n' > "$work/capi_pc.c"
cc $(pkg-config --cflags mlacheck-capi) "$work/capi_pc.c" -o "$work/capi_pc" $(pkg-config --libs mlacheck-capi) \
   || fail "pkg-config build against mlacheck-capi"
LD_LIBRARY_PATH="$p/$libdir" "$work/capi_pc" || fail "capi_pc"

cd "$work/run" || fail "cd $work/run"
step "installed mlacheck from $(pwd)"
"$m" list > list.out 2>&1 || { cat list.out; fail "mlacheck list"; }
# gate CMD...: run the installed mlacheck, exit 0 expected; prints the run's summary line
gate() {
  "$m" "$@" > gate.out 2>&1; rc=$?
  d=$(ls -td results/*/ 2>/dev/null | head -1)
  echo "mlacheck $* -> exit $rc; ${d:-no results}: $(sed -n 3p "${d}summary.md" 2>/dev/null | cut -c1-140)"
  test $rc -eq 0 || { cat gate.out; fail "mlacheck $* exit $rc"; }
}
gate run --suite smoke --engine "plugin:$work/fp/libmyref.so" --quiet
grep -q '@plugin' "${d}summary.md" || fail "the smoke run did not go through the find_package plugin"
gate ops --engine "plugin:$work/libattn_pc.so"
grep -q '10 cases, 10 passed' gate.out || fail "ops-smoke through the pkg-config plugin: $(cat gate.out)"
gate run --suite smoke --engine "plugin:$work/libattn_pc.so" --quiet
grep -q '@plugin' "${d}summary.md" || fail "the smoke run did not go through the pkg-config plugin"
# the suites folder is the prefix's: a suite that only the prefix has runs
cp "$p/share/mlacheck/suites/smoke.suite" "$p/share/mlacheck/suites/installed-only.suite"
gate run --suite installed-only --quiet
n=$(ls -d results/*Z-smoke-* results/*Z-ops-smoke-* results/*Z-installed-only-* 2>/dev/null | wc -l)
test "$n" -eq 4 || fail "expected 4 run folders in $(pwd)/results, found $n"
test -s "${d}junit.xml" || fail "no junit.xml in $d"
echo "install_test: ok ($(($(date +%s) - t0)) s)"
