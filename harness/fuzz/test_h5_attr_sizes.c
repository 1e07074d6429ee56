/* test_h5_attr_sizes.c: the HDF5 reader checks a string attribute's size before H5Aread (issue 12
 * item 5): a fixed-size string past 1 MiB (a damaged type would claim gigabytes, and the reader used
 * to calloc whatever it said) is refused naming the attribute; a small fixed-size one reads. The
 * files are written with the HDF5 API itself, without our seal, so the probe child reads them first
 * and reports the same refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlacheck/h5io.h"

/* A file holding /meta with schema_version 1 and a fixed-size string attribute producer of n bytes. */
static void write_meta_with_producer(const char *path, size_t n)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    assert_true(fapl >= 0);
    assert_true(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST) >= 0); /* dense attributes */
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    assert_true(f >= 0);
    hid_t g = H5Gcreate2(f, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t sp = H5Screate(H5S_SCALAR);
    int32_t one = 1;
    hid_t a = H5Acreate2(g, "schema_version", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT32, &one) >= 0);
    H5Aclose(a);
    hid_t t = H5Tcopy(H5T_C_S1);
    assert_true(H5Tset_size(t, n) >= 0);
    char *v = calloc(n, 1);
    assert_non_null(v);
    memset(v, 'x', n - 1);
    a = H5Acreate2(g, "producer", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, t, v) >= 0);
    free(v);
    H5Aclose(a);
    H5Tclose(t);
    H5Sclose(sp);
    H5Gclose(g);
    H5Fclose(f);
    H5Pclose(fapl);
}

static void test_fixed_string_too_large(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/mla_test_h5_attr_%ld.h5", (long)getpid());
    write_meta_with_producer(path, (2u << 20) + 1);
    mla_dump_meta m;
    mla_status st = mla_h5_read_meta(path, &m, NULL);
    const char *msg = mla_last_error();
    assert_int_equal(st, MLA_ERR_FORMAT);
    if (!strstr(msg, path) || !strstr(msg, "attribute producer of /meta") ||
        !strstr(msg, "fixed-size string of 2097153 bytes") || !strstr(msg, "expected 1..1048576"))
        fail_msg("message: %s", msg);
    /* a small fixed-size string is read (the file then lacks model_config: that is the error) */
    write_meta_with_producer(path, 32);
    st = mla_h5_read_meta(path, &m, NULL);
    assert_int_equal(st, MLA_ERR_FORMAT);
    if (!strstr(mla_last_error(), "no model_config")) fail_msg("message: %s", mla_last_error());
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_string_too_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
