#!/bin/bash
# make_deps.sh: fill the git-ignored .deps/ with what the lent GPU machine's image lacks (jansson,
# OpenBLAS and its Fortran runtime, HDF5 1.10 headers and libraries), taken from this Debian machine's
# packages (libjansson-dev libopenblas-dev libhdf5-dev). The large libraries (OpenBLAS, gfortran, HDF5)
# travel xz-compressed: the tree that travels is limited to 64 MiB. unpack_deps.sh unpacks them there.
# Run from the repository root.
set -euo pipefail
L=/usr/lib/x86_64-linux-gnu
rm -rf .deps && mkdir -p .deps/include .deps/lib .deps/hdf5/include .deps/hdf5/lib
cp /usr/include/jansson.h /usr/include/jansson_config.h .deps/include/
cp -L $L/libjansson.so.4 .deps/lib/ && ln -s libjansson.so.4 .deps/lib/libjansson.so
cp /usr/include/x86_64-linux-gnu/openblas-pthread/{cblas.h,f77blas.h,openblas_config.h} .deps/include/
xz -9 -c "$(readlink -f $L/libopenblas.so.0)" >.deps/lib/libopenblas.so.0.xz
ln -s libopenblas.so.0 .deps/lib/libopenblas.so
cp -L $L/libquadmath.so.0 .deps/lib/
xz -9 -c "$(readlink -f $L/libgfortran.so.5)" >.deps/lib/libgfortran.so.5.xz
cp /usr/include/hdf5/serial/*.h .deps/hdf5/include/ # the C headers (not Fortran's .mod files): the tree's 64 MiB
tar cJf .deps/hdf5/include.tar.xz -C .deps/hdf5 include && rm -rf .deps/hdf5/include
cp -L $L/libsz.so.2 $L/libaec.so.0 .deps/hdf5/lib/
xz -9 -c "$(readlink -f $L/libhdf5_serial.so.103)" >.deps/hdf5/lib/libhdf5_serial.so.103.xz
ln -s libhdf5_serial.so.103 .deps/hdf5/lib/libhdf5.so
du -sh .deps
