/* capi_internal.h: what capi_ops.c (suites, cases, arrays) shares with capi_judge.c (the judge):
 * the two handles of capi.h. Not installed. */
#ifndef MLACHECK_CAPI_INTERNAL_H
#define MLACHECK_CAPI_INTERNAL_H

#include "mlacheck/capi.h"

#include "../src/opcheck_internal.h"
#include "mlacheck/rules.h"

struct mlacheck_suite {
    int refs; /* the opener's and one per made case: a case judges with the suite's rules */
    mla_opcase *cases;
    int n;
    mla_rules *rules;
    char rules_path[1024];
};

/* The bf16 encodings and the decoded cache are made on first request. */
enum { CAPI_Q, CAPI_KV_C, CAPI_K_PE, CAPI_W, CAPI_NF32 };

struct mlacheck_case {
    mla_opcase c;
    op_inputs in;
    mlacheck_suite *suite; /* held (refs) */
    const mla_rules *rules;
    uint16_t *bf16[CAPI_NF32];
    float *kv_f32;
};

/* MLA_OK when a caller's struct_size is this library's (capi.h: versioning), else MLA_ERR_VERSION. */
mla_status capi_size_ok(const char *fn, uint32_t got, size_t want);

#endif
