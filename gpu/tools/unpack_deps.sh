#!/bin/bash
# unpack_deps.sh [DIR]: on the lent GPU machine, unpack the xz-compressed libraries of .deps/
# (make_deps.sh compresses the large ones so the travelling tree stays under 64 MiB). Idempotent.
set -u
D=${1:-$PWD/.deps}
for f in "$D"/lib/*.xz "$D"/hdf5/lib/*.xz; do
    [ -e "$f" ] || continue
    [ -s "${f%.xz}" ] && continue
    xz -dkc "$f" >"${f%.xz}" 2>/dev/null ||
        python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' "$f" "${f%.xz}" ||
        { echo "unpack_deps: cannot unpack $f"; exit 1; }
done
if [ -f "$D/hdf5/include.tar.xz" ] && [ ! -d "$D/hdf5/include" ]; then
    tar xJf "$D/hdf5/include.tar.xz" -C "$D/hdf5" || { echo "unpack_deps: cannot unpack the HDF5 headers"; exit 1; }
fi
