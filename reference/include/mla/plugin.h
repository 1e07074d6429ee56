/* plugin.h: the ABI for external MLA backends loaded with dlopen (`--engine plugin:path/to/lib.so`).
 *
 * A plugin is a shared library that exports ONE symbol:
 *
 *     const mla_backend_ops *mla_plugin_register(uint32_t host_abi_version);
 *
 * It returns its vtable (backend.h) or NULL when it cannot serve host_abi_version. The vtable's
 * abi_version must equal MLA_BACKEND_ABI_VERSION of the headers it was built with; mlacheck refuses
 * a mismatch with exit code 2. `supports()` answers per feature (profiles, prefill over context,
 * multi-token decode, internal taps); an unsupported profile makes a case "skipped" (exit 77 when
 * nothing else ran), never a failure.
 *
 * Whole-model plugins implement forward_mha/forward_mqa over the model given to load(). A plugin
 * that implements only the attention operator wraps the reference for everything else: see
 * harness/plugins/example_ref_plugin.c for a worked example (it forwards every entry to the reference
 * engine) and harness/plugins/example_buggy_plugin.c (the same with a planted bug).
 *
 * Rules for plugin authors: never exit or print to stdout; return mla_status codes; taps are read
 * after each forward call and must hold rows for exactly the tokens of that call, in batch order.
 * mlacheck runs a plugin engine in a child process (harness/src/plugin_child.c) with a time limit
 * per call (MLA_PLUGIN_TIMEOUT_S, default 600 s): a crash, exit or hang fails that check as an
 * engine error naming the entry point, and every tap is checked (dtype, rank, rows) before use.
 */
#ifndef MLA_PLUGIN_H
#define MLA_PLUGIN_H

#include "mla/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_PLUGIN_SYMBOL "mla_plugin_register"
typedef const mla_backend_ops *(*mla_plugin_register_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif
#endif
