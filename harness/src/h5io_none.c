/* h5io_none.c: the golden I/O entry points when the build has no HDF5 (a GPU machine without
 * libhdf5-dev): every call says so, and golden checks report "not supported" instead of failing. */
#include "mlacheck/h5io.h"

#ifndef MLA_HAVE_HDF5

static mla_status no_hdf5(const char *path)
{
    return mla_errorf(MLA_ERR_UNSUPPORTED, "%s: this build has no HDF5 (install libhdf5-dev and reconfigure)",
                      path ? path : "(no file)");
}

mla_status mla_h5_seal(const char *path) { return no_hdf5(path); }
mla_status mla_h5_write(const char *path, const mla_dump *d)
{
    (void)d;
    return no_hdf5(path);
}
mla_status mla_h5_read(const char *path, mla_dump **out)
{
    *out = NULL;
    return no_hdf5(path);
}
mla_status mla_h5_read_meta(const char *path, mla_dump_meta *meta, mla_config *cfg)
{
    (void)meta;
    (void)cfg;
    return no_hdf5(path);
}

#else
typedef int mla_h5io_none_unused; /* ISO C needs a declaration in every translation unit */
#endif
