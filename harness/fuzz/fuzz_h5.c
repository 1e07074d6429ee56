/* fuzz_h5.c: the HDF5 dump reader (harness/src/h5io.c, mla_h5_read and mla_h5_read_meta) on a file
 * in the scratch folder (tmpfs). The seeds are a sealed mlacheck dump (the seal and its raw ranges
 * are parsed before libhdf5 sees the file) and the same dump without its user block (unsealed, as
 * h5py writes: read first in the probe child, here with a 0.3 s limit: MLA_H5_PROBE_MS). Every input reads or fails with a
 * message naming the file, a file that reads whole also reads its /meta, and no HDF5 object is left
 * open afterwards. */
#include "fuzz_common.h"

#include "mlacheck/h5io.h"

#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/in.h5", fuzz_dir(""));
        setenv("MLA_H5_PROBE_MS", "300", 0); /* a hanging unsealed file costs 0.3 s, not 10 */
    }
    fuzz_write(fuzz_dir(""), "in.h5", data, size);
    mla_dump *d = NULL;
    mla_clear_error();
    mla_status st = mla_h5_read(path, &d);
    if (getenv("MLA_FUZZ_VERBOSE")) fprintf(stderr, "  status %d: %s\n", (int)st, st ? mla_last_error() : "ok");
    if (st != MLA_OK && (d || !strstr(mla_last_error(), path))) {
        fprintf(stderr, "fuzz_h5: read: status %d, dump %p, message \"%s\"\n", (int)st, (void *)d, mla_last_error());
        abort();
    }
    mla_dump_free(d);
    mla_dump_meta m;
    mla_config c;
    mla_status sm = mla_h5_read_meta(path, &m, &c);
    if (sm == MLA_OK) free(m.model_config_json);
    /* a probe that ran past its 0.3 s on a loaded machine is no inconsistency */
    int slow = sm != MLA_OK && strstr(mla_last_error(), "did not finish reading") != NULL;
    if ((st == MLA_OK && sm != MLA_OK && !slow) || (sm != MLA_OK && !strstr(mla_last_error(), path))) {
        fprintf(stderr, "fuzz_h5: read %d but read_meta %d: \"%s\"\n", (int)st, (int)sm, mla_last_error());
        abort();
    }
    ssize_t left = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    if (left != 0) {
        fprintf(stderr, "fuzz_h5: %zd HDF5 objects left open\n", left);
        abort();
    }
    return 0;
}
