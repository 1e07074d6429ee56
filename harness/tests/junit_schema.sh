#!/bin/sh
# junit_schema.sh MLACHECK XSD: the junit.xml of a passing and of a failing run (an injected fault,
# so failures with their type and message are in it) validate against the strict JUnit schema
# harness/tests/junit.xsd (xmllint, libxml2-utils), and the schema is strict enough to matter: a
# junit.xml without times, timestamp and hostname (as written before) is rejected. Exit 77 (skipped)
# only when xmllint is not installed (.ci/run installs it).
set -u
MLA=$1
XSD=$2
command -v xmllint >/dev/null 2>&1 || { echo "SKIP: xmllint not installed (libxml2-utils)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$MLA" run --suite smoke --results "$T/pass" --quiet >"$T/out" 2>&1 || { cat "$T/out"; fail "smoke: exit $?"; }
"$MLA" run --suite smoke --inject rope-pairing --results "$T/fail" --quiet >"$T/out" 2>&1
[ $? -eq 1 ] || { cat "$T/out"; fail "smoke with rope-pairing: expected exit 1"; }
for j in "$T"/pass/*/junit.xml "$T"/fail/*/junit.xml; do
    [ -s "$j" ] || fail "$j missing"
    xmllint --noout --schema "$XSD" "$j" >"$T/lint" 2>&1 || { cat "$T/lint"; fail "$j does not validate"; }
done
J=$(ls "$T"/fail/*/junit.xml)
grep -q '<failure type="divergence" message="first divergence: ' "$J" || fail "no typed failure in $J"
grep -q '<property name="git_sha" value="[^"]' "$J" || fail "no git_sha property"
for p in engine profile model compiler blas hdf5 host; do
    grep -q "<property name=\"$p\" value=\"[^\"]" "$J" || fail "no $p property"
done
# the schema rejects what the report wrote before: no timestamp, hostname or testcase times
sed -e 's/ timestamp="[^"]*"//g' -e 's/ hostname="[^"]*"//' -e 's/ time="[^"]*"//g' "$J" >"$T/old.xml"
if xmllint --noout --schema "$XSD" "$T/old.xml" >/dev/null 2>&1; then fail "the schema accepts a junit.xml without times"; fi
echo "junit_schema: 2 junit.xml files validate against $(basename "$XSD")"
