/* abi_check.h: the one statement of what a loaded vtable must hold before mlacheck calls it: the
 * attention operator (attn_op.h) and the whole-model backend (backend.h, plugin.h). The engine
 * registry (harness/src/engine_registry.c) checks every plugin with these, and the reference checks
 * an operator handed to mla_ref_set_attn_ops with the same function. */
#ifndef MLA_ABI_CHECK_H
#define MLA_ABI_CHECK_H

#include "mla/attn_op.h"
#include "mla/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an attention operator is used for; the entries it needs follow from the use. */
typedef enum {
    /* mlacheck ops: case by case, each case asks supports() and calls the one entry it tests, so
     * supports and at least one of mqa, mha. */
    MLA_ATTN_USE_OPS,
    /* A whole-model run (the hybrid engine, ref_hook.h): prefill calls mha and decode calls mqa, so
     * supports, mqa and mha. (An in-process operator of libmlacheck's Python route is held to
     * MLA_ATTN_USE_OPS instead: the reference computes its missing form, mla_ref_set_attn_ops_partial.) */
    MLA_ATTN_USE_MODEL
} mla_attn_use;

/* MLA_OK, or MLA_ERR_VERSION (abi_version differs from MLA_ATTN_ABI_VERSION) or MLA_ERR_FORMAT (an
 * entry the use needs is NULL); who opens the detail ("plugin lib.so"). Reads only the vtable. */
mla_status mla_attn_ops_check(const mla_attn_ops *o, mla_attn_use use, const char *who);

/* MLA_OK, or MLA_ERR_VERSION (abi_version differs from MLA_BACKEND_ABI_VERSION) or MLA_ERR_FORMAT (a
 * required entry is NULL: every one but read_kv). */
mla_status mla_backend_ops_check(const mla_backend_ops *o, const char *who);

#ifdef __cplusplus
}
#endif
#endif
