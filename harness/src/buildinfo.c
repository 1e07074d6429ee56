/* buildinfo.c: the build's provenance strings (buildinfo.h). */
#include "mlacheck/buildinfo.h"

#include "mla_git_id.h" /* generated at build time by cmake/mla_git_id.cmake */

#include <stdio.h>

#ifdef MLA_HAVE_HDF5
#include <hdf5.h>
#endif
#ifndef MLA_BLAS_BUILT
#define MLA_BLAS_BUILT "unknown"
#endif

/* OpenBLAS names its build and the kernel it picked at run time; weak, so that another BLAS
 * leaves the configure-time name. */
extern char *openblas_get_config(void) __attribute__((weak));

const char *mla_build_git_id(void) { return MLA_GIT_ID; }

const char *mla_build_compiler(void)
{
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown C compiler";
#endif
}

const char *mla_build_blas(void)
{
    const char *c = openblas_get_config ? openblas_get_config() : NULL;
    return c && *c ? c : MLA_BLAS_BUILT;
}

const char *mla_build_hdf5(void)
{
#ifdef MLA_HAVE_HDF5
    static _Thread_local char buf[48];
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    snprintf(buf, sizeof buf, "%u.%u.%u", maj, min, rel);
    return buf;
#else
    return "none (built without HDF5)";
#endif
}
