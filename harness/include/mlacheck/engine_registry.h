/* engine_registry.h: every engine mlacheck runs, found by one name and opened one way:
 *   "ref"               the reference engine (or, for ops, the reference operator);
 *   "gpu"               the GPU engine, when built;
 *   "plugin:<path.so>"  a dlopen'd plugin of either kind: a whole-model backend (plugin.h's
 *                       mla_plugin_register) or an attention operator (attn_op.h's
 *                       mla_attn_plugin_register), which a whole-model run wraps in the reference
 *                       as a hybrid engine (ref_hook.h);
 *   "plugin:inproc:<name>" an attention operator of this process, registered under name with
 *                       mla_registry_add_inproc (libmlacheck's Python route, capi.h): a hybrid engine
 *                       as above, checked as "<check>@plugin"; it may have one form only (mqa or
 *                       mha), the reference computing the other (mla_ref_set_attn_ops_partial).
 * The vtable rules are mla/abi_check.h's, chosen by use (a run needs both attention forms, ops
 * needs one). A plugin library is opened once per path: later opens reuse the handle, so its
 * reference count stays at one however many drives open it; a library no use accepted is closed
 * again at once. The registry serves one thread (the harness opens engines from one thread).
 * mla_engine_open / mla_engine_close (driver.h) and mla_opcheck_open (opcheck.h) are built on it. */
#ifndef MLACHECK_ENGINE_REGISTRY_H
#define MLACHECK_ENGINE_REGISTRY_H

#include "mla/abi_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backend a whole-model run drives for name. *attn: NULL, or the operator a hybrid engine must
 * be given (mla_ref_set_attn_ops) after *ops == mla_ref_backend() creates its context. */
mla_status mla_registry_backend(const char *name, const mla_backend_ops **ops, const mla_attn_ops **attn);

/* The attention operator `mlacheck ops` checks for name ("ref" or "plugin:<path.so>"). */
mla_status mla_registry_attn_ops(const char *name, const mla_attn_ops **out);

/* Registers ops under name (at most 63 bytes) for "plugin:inproc:<name>"; ops needs supports and at
 * least one of mqa, mha, and must stay valid until mla_registry_remove_inproc. One operator at a time:
 * MLA_ERR_INVALID when another is registered. */
mla_status mla_registry_add_inproc(const char *name, const mla_attn_ops *ops);
void mla_registry_remove_inproc(void);

/* How many plugin libraries the registry holds open (each dlopen'd exactly once). */
int mla_registry_libraries(void);

/* Closes every plugin library the registry holds. Vtables it handed out dangle afterwards: call it
 * only when no engine from a plugin is open (process end, tests). */
void mla_registry_close_all(void);

#ifdef __cplusplus
}
#endif
#endif
