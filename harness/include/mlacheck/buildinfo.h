/* buildinfo.h: what this build is made of, for the provenance of reports (report.h) and dumps
 * (/meta): the git id compiled in at build time, the compiler, the BLAS and the HDF5 library in use.
 * Static strings, never NULL. */
#ifndef MLACHECK_BUILDINFO_H
#define MLACHECK_BUILDINFO_H

#ifdef __cplusplus
extern "C" {
#endif

/* `git describe --always --dirty --abbrev=12` of the source tree when this was built, or the
 * -DMLA_GIT_ID=... given to CMake; "unknown" when neither. */
const char *mla_build_git_id(void);
/* "gcc 12.2.0", "clang 16.0.6". */
const char *mla_build_compiler(void);
/* The BLAS in use: OpenBLAS's own description at run time (build and the kernel it picked), else
 * the version pkg-config named at configure time. */
const char *mla_build_blas(void);
/* The HDF5 library linked ("1.10.8"), or "none (built without HDF5)". */
const char *mla_build_hdf5(void);

#ifdef __cplusplus
}
#endif
#endif
