/* example_attn_only_plugin.c: an attention-only plugin: it exports mla_attn_plugin_register and NOT
 * mla_plugin_register, so `mlacheck run --engine plugin:lib.so` runs it as a hybrid engine (the
 * reference model with this operator as every layer's attention core, mla_ref/ref.h). The operator
 * forwards to the reference operator; a real plugin calls its kernels there.
 * The same file builds three libraries (harness/plugins/CMakeLists.txt):
 *   example_attn_only_plugin        as written: must agree with the reference engine
 *   example_attn_only_buggy_plugin  -DPLANT_SCALE_BUG: softmax scale (C+R)^-0.5 = 576^-0.5 instead of
 *                                   the given one (mla-spec.md §b.3), and fp8_ds_mla caches declined
 *   attn_only_mismatch_plugin       -DPLANT_ABI_MISMATCH: abi_version + 1, must be refused (not run) */
#include "mla/attn_op.h"
#include "mla_ref/ref.h"

#include <math.h>

static int attn_only_supports(mla_attn_feature f, int64_t value)
{
#ifdef PLANT_SCALE_BUG
    if (f == MLA_ATTN_FEAT_KV_FORMAT && value == MLA_KV_FP8_DS) return 0;
#endif
    return mla_ref_attn_ops()->supports(f, value);
}

static mla_status attn_only_mqa(const mla_mqa_args *a)
{
    mla_mqa_args b = *a;
#ifdef PLANT_SCALE_BUG
    b.softmax_scale = 1.0 / sqrt((double)(a->kv_lora_rank + a->rope_dim)); /* the planted bug */
#endif
    return mla_ref_attn_ops()->mqa(&b);
}

static mla_status attn_only_mha(const mla_mha_args *a)
{
    mla_mha_args b = *a;
#ifdef PLANT_SCALE_BUG
    b.softmax_scale = 1.0 / sqrt((double)(a->kv_lora_rank + a->rope_dim)); /* the planted bug */
#endif
    return mla_ref_attn_ops()->mha(&b);
}

static const mla_attn_ops attn_only_ops = {
#ifdef PLANT_ABI_MISMATCH
    .abi_version = MLA_ATTN_ABI_VERSION + 1,
#else
    .abi_version = MLA_ATTN_ABI_VERSION,
#endif
    .name = "example-attn-only",
    .supports = attn_only_supports,
    .mqa = attn_only_mqa,
    .mha = attn_only_mha,
};

MLA_PLUGIN_EXPORT const mla_attn_ops *mla_attn_plugin_register(uint32_t host_attn_abi_version)
{
#ifdef PLANT_ABI_MISMATCH
    (void)host_attn_abi_version; /* answers anyway, with its own (future) version */
    return &attn_only_ops;
#else
    return host_attn_abi_version == MLA_ATTN_ABI_VERSION ? &attn_only_ops : NULL;
#endif
}
