/* mla_ref/ref.h: the reference engine's entry points (reference/src/cpu; not part of the contract):
 * the engine (mla_ref_backend), its f64 attention operator (mla_ref_attn_ops), and the hybrid engine:
 * run the reference engine with its attention core delegated to an attn_op.h operator
 * (a "hybrid" engine: mlacheck run --engine plugin:lib.so where lib.so exports only
 * mla_attn_plugin_register). Everything else (projections, RoPE, cache, MoE, taps) stays the
 * reference's, so a per-layer comparison names the operator's layer and tap (attn_core, lse).
 *
 * Decode (forward_mqa): the reference computes q_absorbed (W_UK folded, rounded per profile) and q_pe,
 * then calls ops->mqa with q = [q_absorbed | q_pe] in f32 over a paged cache copied from its own rows
 * in the format the profile stores: fp64 -> MLA_KV_F32, bf16/fp8w -> MLA_KV_BF16, fp8kv -> MLA_KV_FP8
 * (its codes and kv_scale), fp8ds -> MLA_KV_FP8_DS (its rows). The latent out goes through W_UV here.
 * Prefill (forward_mha): ops->mha with the new tokens' kv_c/k_pe, context from that cache, and W_kvb.
 * The operator ABI is f32, so in the fp64 profile the hybrid carries f32 rounding (~6e-8) at the
 * operator boundary. */
#ifndef MLA_REF_REF_H
#define MLA_REF_REF_H

#include "mla/attn_op.h"
#include "mla/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reference engine. */
const mla_backend_ops *mla_ref_backend(void);

/* The reference operator (reference/src/cpu/attn_op.c, f64 inside): validates every argument and
 * supports every feature. Not part of the plugin ABI; plugins may wrap it when they link mla_ref. */
const mla_attn_ops *mla_ref_attn_ops(void);

/* ref_ctx: a context made by mla_ref_backend()->create, before or after load. ops: borrowed for the
 * life of the context (NULL restores the built-in attention). Checks ops->abi_version
 * (MLA_ERR_VERSION) and that supports, mqa and mha are set (MLA_ERR_FORMAT). Afterwards the engine's
 * supports(MLA_FEAT_PROFILE_x) answers 0 for a profile whose cache format the operator declines. */
mla_status mla_ref_set_attn_ops(void *ref_ctx, const mla_attn_ops *ops);

/* As mla_ref_set_attn_ops, but ops may have one form only (supports and at least one of mqa, mha):
 * the form whose entry is NULL is the reference's own attention (attention.c), bit for bit. For an
 * operator that serves only decode (or only prefill), e.g. libmlacheck's Python route (capi.h). */
mla_status mla_ref_set_attn_ops_partial(void *ref_ctx, const mla_attn_ops *ops);

/* The cache format the hybrid hands the operator for a profile. */
mla_kv_format mla_ref_attn_kv_format(mla_profile p);

#ifdef __cplusplus
}
#endif
#endif
