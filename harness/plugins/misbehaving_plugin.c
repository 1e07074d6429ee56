/* misbehaving_plugin.c: plugins that take their process down, for the test that a plugin cannot take
 * the gate down (issue 12 item 3; harness/src/plugin_child.c runs every library plugin in a child).
 * The reference engine, except that a forward call over exactly MLA_MISBEHAVE_TOKENS new tokens
 * (environment, default 7) misbehaves, so a suite can hold a case that triggers it and a later case
 * that must still run and pass. One file, one library per way to misbehave
 * (harness/plugins/CMakeLists.txt):
 *   -DMISBEHAVE_SEGV   writes through a NULL pointer in forward_mha (SIGSEGV)
 *   -DMISBEHAVE_ABORT  abort() in forward_mha (SIGABRT)
 *   -DMISBEHAVE_EXIT   exit(0) in forward_mha (the status a gate would read as a pass)
 *   -DMISBEHAVE_HANG   never returns from forward_mha
 *   -DMISBEHAVE_SILENT returns MLA_ERR_DEVICE from forward_mha without a message (was printed as
 *                      "first error: device error: " and nothing after it)
 *   -DMISBEHAVE_SHORT_TAP after that forward, read_tap of layer 0 attn_core returns one row fewer
 *                      than the call's (the driver refuses it against the call)
 *   -DMISBEHAVE_NEG_TAP after that forward, read_tap of layer 0 attn_core returns a tensor with a
 *                      negative dimension (refused in the plugin's process, before it is sent)
 *   -DATTN_ONLY        the same in the attention operator's mha of an attention-only plugin (the
 *                      hybrid engine: the reference calls the operator from inside its forward; and
 *                      `mlacheck ops`, whose case mha-k2-h32-p128-fp8ds-small-bb has 39 query rows)
 *   -DIN_REGISTER      misbehaves in the register function instead (mla_plugin_register, or
 *                      mla_attn_plugin_register with ATTN_ONLY), before any engine exists
 *   -DIN_CONSTRUCTOR   misbehaves in a constructor of the library, inside dlopen */
#include "mla/attn_op.h"
#include "mla/plugin.h"
#include "mla_ref/ref.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static int trigger_tokens(void)
{
    const char *s = getenv("MLA_MISBEHAVE_TOKENS");
    return s && *s ? atoi(s) : 7;
}

/* Not instrumented: under the sanitizer build a caught NULL store would end the child through the
 * sanitizer's report (exit 1) instead of the SIGSEGV a real plugin's crash delivers. */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize("address", "undefined"), unused))
#endif
static void misbehave(void)
{
#if defined(MISBEHAVE_SEGV)
    /* the pointer itself volatile: with a known NULL gcc may treat the store as unreachable and drop
     * the function that makes it (it dropped the constructor of -DIN_CONSTRUCTOR) */
    volatile int *volatile p = NULL;
    *p = 1;
#elif defined(MISBEHAVE_ABORT)
    abort();
#elif defined(MISBEHAVE_EXIT)
    exit(0);
#elif defined(MISBEHAVE_HANG)
    for (;;) pause();
#elif !defined(MISBEHAVE_SILENT) && !defined(MISBEHAVE_SHORT_TAP) && !defined(MISBEHAVE_NEG_TAP)
#error "define one of MISBEHAVE_SEGV, _ABORT, _EXIT, _HANG, _SILENT, _SHORT_TAP, _NEG_TAP"
#endif
}

#ifdef IN_CONSTRUCTOR
__attribute__((constructor)) static void misbehave_on_load(void) { misbehave(); }
#endif

#ifdef IN_REGISTER
#define MISBEHAVE_IN_REGISTER() misbehave()
#else
#define MISBEHAVE_IN_REGISTER() ((void)0)
#endif

#ifndef ATTN_ONLY
static mla_backend_ops ops;
static int triggered; /* the last forward call was the trigger */

static mla_status bad_forward_mha(void *ctx, const mla_batch *b)
{
    int64_t n = 0;
    for (int i = 0; b && b->n_new && i < b->n_seqs; i++) n += b->n_new[i];
    triggered = n == trigger_tokens();
#if !defined(MISBEHAVE_SHORT_TAP) && !defined(MISBEHAVE_NEG_TAP)
    if (triggered) {
#ifdef MISBEHAVE_SILENT
        mla_clear_error();
        return MLA_ERR_DEVICE;
#endif
        misbehave();
    }
#endif
    return mla_ref_backend()->forward_mha(ctx, b);
}

static mla_status bad_read_tap(void *ctx, int layer, mla_tap tap, mla_tensor **out)
{
    mla_status st = mla_ref_backend()->read_tap(ctx, layer, tap, out);
#if defined(MISBEHAVE_SHORT_TAP) || defined(MISBEHAVE_NEG_TAP)
    if (!st && *out && triggered && layer == 0 && tap == MLA_TAP_ATTN_CORE) {
#ifdef MISBEHAVE_SHORT_TAP
        (*out)->shape[0] -= 1; /* the buffer stays whole: only the claim is short */
#else
        (*out)->shape[1] = -(*out)->shape[1];
#endif
    }
#endif
    return st;
}

MLA_PLUGIN_EXPORT const mla_backend_ops *mla_plugin_register(uint32_t host_abi_version)
{
    MISBEHAVE_IN_REGISTER();
    if (host_abi_version != MLA_BACKEND_ABI_VERSION) return NULL;
    ops = *mla_ref_backend();
    ops.name = "misbehaving";
    ops.forward_mha = bad_forward_mha;
    ops.read_tap = bad_read_tap;
    return &ops;
}
#else
static int attn_supports(mla_attn_feature f, int64_t value) { return mla_ref_attn_ops()->supports(f, value); }
static mla_status attn_mqa(const mla_mqa_args *a) { return mla_ref_attn_ops()->mqa(a); }

static mla_status attn_mha(const mla_mha_args *a)
{
    if (a->total_q == trigger_tokens()) misbehave();
    return mla_ref_attn_ops()->mha(a);
}

static const mla_attn_ops attn_ops = {
    .abi_version = MLA_ATTN_ABI_VERSION,
    .name = "misbehaving-attn",
    .supports = attn_supports,
    .mqa = attn_mqa,
    .mha = attn_mha,
};

MLA_PLUGIN_EXPORT const mla_attn_ops *mla_attn_plugin_register(uint32_t host_attn_abi_version)
{
    MISBEHAVE_IN_REGISTER();
    return host_attn_abi_version == MLA_ATTN_ABI_VERSION ? &attn_ops : NULL;
}
#endif
