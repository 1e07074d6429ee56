/* plugin_child.h: a plugin engine run in a child process, so that a plugin that crashes, aborts,
 * exits or hangs ends only its own check (private to the harness library; engine_registry.c opens
 * every library plugin through it).
 *
 * mla_pchild_open forks after the model is open: the child holds a copy of the caller's memory, the
 * model included, loads and registers the plugin there (the caller never maps it: a constructor or
 * register function that crashes ends only the child), creates the engine (inner->create, then the
 * hybrid's attention operator) and serves each backend entry as a request on a socket pair; tensors come back as bytes and are
 * rebuilt in the caller, which never touches the plugin's memory. Each call has a time limit,
 * MLA_PLUGIN_TIMEOUT_S seconds (default 600). A child that dies (signal, abort, exit) or does not
 * answer in time is an MLA_ERR_DEVICE naming the plugin, the entry point (dlopen, the register
 * function, create, forward_mha, ...) and the signal or exit status; the engine stays dead (every
 * later call answers the same) until it is closed. The process is child_proc.h's. */
#ifndef MLA_PLUGIN_CHILD_H
#define MLA_PLUGIN_CHILD_H

#include "mla/backend.h"

/* The child-process backend: *ops and *ctx for an mla_engine. name is the engine ("plugin:PATH"),
 * resolved by the registry in the child (a whole-model plugin, or the hybrid: the reference with the
 * plugin's attention operator); its refusals keep their status (NOT_FOUND, VERSION, FORMAT: exit 2).
 * model is the one load() will be given (it must exist before the fork). */
mla_status mla_pchild_open(const char *name, const mla_model *model, const mla_backend_ops **ops, void **ctx);

/* MLA_ERR_DEVICE with the reason when the child of ctx (from mla_pchild_open) is gone, else MLA_OK:
 * supports() answers 0 for a dead child, and the opener must not take that for "not supported". */
mla_status mla_pchild_status(const void *ctx);

/* 0 when MLA_PLUGIN_CHILD=0 asks for plugins in the calling process (a debugger on the plugin);
 * else 1, the default. */
int mla_pchild_wanted(void);

#endif
