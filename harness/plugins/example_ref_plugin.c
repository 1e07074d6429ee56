/* example_ref_plugin.c: the worked example of an external backend. It exports both plugin symbols:
 *   mla_plugin_register       the whole model (plugin.h): every entry forwards to the reference engine
 *   mla_attn_plugin_register  the attention operator (attn_op.h): forwards to the reference operator
 * A real backend replaces the bodies of example_mqa/example_mha with calls into its kernels (copy the
 * inputs to the device, launch, copy out/lse back) and answers supports() for what it implements.
 * It must pass every operator case and every whole-model check (harness/plugins/README.md). */
#include "mla/attn_op.h"
#include "mla/plugin.h"
#include "mla_ref/ref.h" /* these examples wrap the reference */

/* ---- whole model ---------------------------------------------------------------------------- */

MLA_PLUGIN_EXPORT const mla_backend_ops *mla_plugin_register(uint32_t host_abi_version)
{
    if (host_abi_version != MLA_BACKEND_ABI_VERSION) return NULL; /* built against other headers */
    return mla_ref_backend();
}

/* ---- attention operator --------------------------------------------------------------------- */

static int example_supports(mla_attn_feature f, int64_t value)
{
    return mla_ref_attn_ops()->supports(f, value);
}

static mla_status example_mqa(const mla_mqa_args *a) { return mla_ref_attn_ops()->mqa(a); }
static mla_status example_mha(const mla_mha_args *a) { return mla_ref_attn_ops()->mha(a); }

static const mla_attn_ops example_ops = {
    .abi_version = MLA_ATTN_ABI_VERSION,
    .name = "example-ref",
    .supports = example_supports,
    .mqa = example_mqa,
    .mha = example_mha,
};

MLA_PLUGIN_EXPORT const mla_attn_ops *mla_attn_plugin_register(uint32_t host_attn_abi_version)
{
    if (host_attn_abi_version != MLA_ATTN_ABI_VERSION) return NULL;
    return &example_ops;
}
