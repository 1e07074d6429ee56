#!/bin/sh
# run_python.sh LIB SCRIPT [ARGS...]: runs a Python check of the libmlacheck route (capi_checks.py,
# pytest_plugin_checks.py) with MLACHECK_LIB=LIB, under the first python that has numpy and h5py
# (the package's dependencies): $MLA_PYTHON, python3 on PATH, /usr/bin/python3. Exit 77 (ctest:
# skipped) when none has them; otherwise the script's exit code (77 too where it skips itself).
set -u
LIB=$1
shift
PY=
for p in ${MLA_PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, h5py' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: no python with numpy and h5py"; exit 77; }
MLACHECK_LIB=$LIB exec "$PY" "$@"
