/* example_buggy_plugin.c: example_ref_plugin.c with planted bugs, to prove the checks catch them.
 *
 * Whole model: the reference engine with routed_scaling_factor not applied (the reference's
 *   MLA_FAULT_ROUTED_SCALING). Only MoE layers combine routed experts, so the dense layers before
 *   first_k_dense_replace agree exactly and the first diverging tap is ffn_out of the first MoE layer
 *   (layer 1 of tiny-v3): a per-layer comparison must name that layer, not an earlier one.
 * Attention operator: softmax scale (C+R)^-0.5 = 576^-0.5 instead of the given (P+R)^-0.5 * mscale^2,
 *   the mistake FlashMLA's default invites (mla-spec.md §b.3). Every case must fail, on out and lse.
 * Both declare the fp8_ds_mla cache unsupported, to exercise the "unsupported profile" path. */
#include "mla/attn_op.h"
#include "mla/plugin.h"
#include "mla_ref/ref.h" /* these examples wrap the reference */

#include <math.h>

/* ---- whole model ---------------------------------------------------------------------------- */

static const mla_backend_ops *ref(void) { return mla_ref_backend(); }

static mla_status buggy_create(void **ctx) { return ref()->create(ctx); }

static int buggy_supports(void *ctx, mla_feature f)
{
    if (f == (mla_feature)(MLA_FEAT_PROFILE_FP64 + MLA_PROFILE_FP8DS)) return 0;
    return ref()->supports(ctx, f);
}

static mla_status buggy_load(void *ctx, mla_model *model, const mla_run_opts *opts)
{
    mla_run_opts o = *opts;
    o.faults |= MLA_FAULT(MLA_FAULT_ROUTED_SCALING); /* the planted bug */
    return ref()->load(ctx, model, &o);
}

static mla_status buggy_reset(void *ctx) { return ref()->reset(ctx); }
static mla_status buggy_mha(void *ctx, const mla_batch *b) { return ref()->forward_mha(ctx, b); }
static mla_status buggy_mqa(void *ctx, const mla_batch *b) { return ref()->forward_mqa(ctx, b); }
static mla_status buggy_read_tap(void *ctx, int layer, mla_tap tap, mla_tensor **out)
{
    return ref()->read_tap(ctx, layer, tap, out);
}
static mla_status buggy_read_kv(void *ctx, int layer, int seq_id, mla_tensor **out)
{
    return ref()->read_kv(ctx, layer, seq_id, out);
}
static void buggy_destroy(void *ctx) { ref()->destroy(ctx); }

static const mla_backend_ops buggy_ops = {
    .abi_version = MLA_BACKEND_ABI_VERSION,
    .name = "example-buggy",
    .create = buggy_create,
    .supports = buggy_supports,
    .load = buggy_load,
    .reset = buggy_reset,
    .forward_mha = buggy_mha,
    .forward_mqa = buggy_mqa,
    .read_tap = buggy_read_tap,
    .read_kv = buggy_read_kv,
    .destroy = buggy_destroy,
};

MLA_PLUGIN_EXPORT const mla_backend_ops *mla_plugin_register(uint32_t host_abi_version)
{
    return host_abi_version == MLA_BACKEND_ABI_VERSION ? &buggy_ops : NULL;
}

/* ---- attention operator --------------------------------------------------------------------- */

static int buggy_op_supports(mla_attn_feature f, int64_t value)
{
    if (f == MLA_ATTN_FEAT_KV_FORMAT && value == MLA_KV_FP8_DS) return 0;
    return mla_ref_attn_ops()->supports(f, value);
}

static mla_status buggy_op_mqa(const mla_mqa_args *a)
{
    mla_mqa_args b = *a;
    b.softmax_scale = 1.0 / sqrt((double)(a->kv_lora_rank + a->rope_dim)); /* the planted bug */
    return mla_ref_attn_ops()->mqa(&b);
}

static mla_status buggy_op_mha(const mla_mha_args *a)
{
    mla_mha_args b = *a;
    b.softmax_scale = 1.0 / sqrt((double)(a->kv_lora_rank + a->rope_dim)); /* the planted bug */
    return mla_ref_attn_ops()->mha(&b);
}

static const mla_attn_ops buggy_attn_ops = {
    .abi_version = MLA_ATTN_ABI_VERSION,
    .name = "example-buggy",
    .supports = buggy_op_supports,
    .mqa = buggy_op_mqa,
    .mha = buggy_op_mha,
};

MLA_PLUGIN_EXPORT const mla_attn_ops *mla_attn_plugin_register(uint32_t host_attn_abi_version)
{
    return host_attn_abi_version == MLA_ATTN_ABI_VERSION ? &buggy_attn_ops : NULL;
}
