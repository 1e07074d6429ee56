/* probe_capi.c: libmlacheck.so from the install prefix answers; prints its C API version. */
#include "mlacheck/capi.h"

#include <stdio.h>

int main(void)
{
    unsigned v = mlacheck_capi_version();
    printf("capi version %u\n", v);
    return v == MLACHECK_CAPI_VERSION ? 0 : 1;
}
