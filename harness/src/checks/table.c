/* table.c: the checks table, one row per MLA_SUITE_CHECK_LIST entry (suite.h), in run order. */
#include "checks.h"

const chk_row chk_table[MLA_CHECK_COUNT] = {
#define X(e, n, d, needs, fn) {e, n, needs, fn},
    MLA_SUITE_CHECK_LIST(X)
#undef X
};
