/* weights.h: the per-layer checkpoint tensors of an MLA model, as one X-macro (mla-spec.md §a.3).
 * The config checks (which names a checkpoint must hold and their shapes), the reference loader and
 * the GPU upload all read this one table, so a new weight is one row here.
 *
 * X(id, hf_suffix, when, store, ndim, dim0, dim1)
 *   hf_suffix : the name after "model.layers.{i}."; "%d" stands for the expert index (MLA_LW_EXPERT)
 *   when      : which layers hold it (mla_lw_when below)
 *   store     : how an engine keeps it (mla_lw_store below); MLA_LW_FP8_LINEAR is the fp8-linear flag
 *   dim0/dim1 : the shape, outermost first, as int64_t expressions of the const mla_config *c that the
 *               list is given; PyTorch Linear weights are [out, in]; dim1 is 0 for a vector.
 *               Shared experts are one MLP of width n_shared_experts * moe_intermediate_size
 *               (HF DeepseekV3MoE).
 * The order is the order in which the reference loads a layer. An fp8 block-scaled checkpoint adds a
 * "_scale_inv" sibling to every 2-d weight (config_shape.c derives its shape). */
#ifndef MLA_WEIGHTS_H
#define MLA_WEIGHTS_H

#include "mla/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_LAYER_WEIGHT_LIST(X, c)                                                                            \
    X(MLA_LW_ATTN_NORM, "input_layernorm.weight", MLA_LW_EVERY, MLA_LW_KEEP, 1, (int64_t)(c)->hidden_size, 0) \
    X(MLA_LW_FFN_NORM, "post_attention_layernorm.weight", MLA_LW_EVERY, MLA_LW_KEEP, 1,                        \
      (int64_t)(c)->hidden_size, 0)                                                                            \
    X(MLA_LW_Q_A, "self_attn.q_a_proj.weight", MLA_LW_Q_LORA, MLA_LW_FP8_LINEAR, 2, (int64_t)(c)->q_lora_rank, \
      (int64_t)(c)->hidden_size)                                                                               \
    X(MLA_LW_Q_A_NORM, "self_attn.q_a_layernorm.weight", MLA_LW_Q_LORA, MLA_LW_KEEP, 1,                        \
      (int64_t)(c)->q_lora_rank, 0)                                                                            \
    X(MLA_LW_Q_B, "self_attn.q_b_proj.weight", MLA_LW_Q_LORA, MLA_LW_FP8_LINEAR, 2,                            \
      (int64_t)(c)->num_attention_heads * ((c)->qk_nope_head_dim + (c)->qk_rope_head_dim),                     \
      (int64_t)(c)->q_lora_rank)                                                                               \
    X(MLA_LW_Q, "self_attn.q_proj.weight", MLA_LW_NO_Q_LORA, MLA_LW_FP8_LINEAR, 2,                             \
      (int64_t)(c)->num_attention_heads * ((c)->qk_nope_head_dim + (c)->qk_rope_head_dim),                     \
      (int64_t)(c)->hidden_size)                                                                               \
    X(MLA_LW_KV_A, "self_attn.kv_a_proj_with_mqa.weight", MLA_LW_EVERY, MLA_LW_FP8_LINEAR, 2,                  \
      (int64_t)(c)->kv_lora_rank + (c)->qk_rope_head_dim, (int64_t)(c)->hidden_size)                           \
    X(MLA_LW_KV_A_NORM, "self_attn.kv_a_layernorm.weight", MLA_LW_EVERY, MLA_LW_KEEP, 1,                       \
      (int64_t)(c)->kv_lora_rank, 0)                                                                           \
    X(MLA_LW_KV_B, "self_attn.kv_b_proj.weight", MLA_LW_EVERY, MLA_LW_BF16, 2,                                 \
      (int64_t)(c)->num_attention_heads * ((c)->qk_nope_head_dim + (c)->v_head_dim),                           \
      (int64_t)(c)->kv_lora_rank)                                                                              \
    X(MLA_LW_O, "self_attn.o_proj.weight", MLA_LW_EVERY, MLA_LW_FP8_LINEAR, 2, (int64_t)(c)->hidden_size,      \
      (int64_t)(c)->num_attention_heads * (c)->v_head_dim)                                                     \
    X(MLA_LW_MLP_GATE, "mlp.gate_proj.weight", MLA_LW_DENSE, MLA_LW_FP8_LINEAR, 2,                             \
      (int64_t)(c)->intermediate_size, (int64_t)(c)->hidden_size)                                              \
    X(MLA_LW_MLP_DOWN, "mlp.down_proj.weight", MLA_LW_DENSE, MLA_LW_FP8_LINEAR, 2, (int64_t)(c)->hidden_size,  \
      (int64_t)(c)->intermediate_size)                                                                         \
    X(MLA_LW_MLP_UP, "mlp.up_proj.weight", MLA_LW_DENSE, MLA_LW_FP8_LINEAR, 2, (int64_t)(c)->intermediate_size, \
      (int64_t)(c)->hidden_size)                                                                               \
    X(MLA_LW_ROUTER, "mlp.gate.weight", MLA_LW_MOE, MLA_LW_KEEP, 2, (int64_t)(c)->n_routed_experts,            \
      (int64_t)(c)->hidden_size)                                                                               \
    X(MLA_LW_ROUTER_BIAS, "mlp.gate.e_score_correction_bias", MLA_LW_MOE_BIAS, MLA_LW_KEEP, 1,                 \
      (int64_t)(c)->n_routed_experts, 0)                                                                       \
    X(MLA_LW_EXPERT_GATE, "mlp.experts.%d.gate_proj.weight", MLA_LW_EXPERT, MLA_LW_FP8_LINEAR, 2,              \
      (int64_t)(c)->moe_intermediate_size, (int64_t)(c)->hidden_size)                                          \
    X(MLA_LW_EXPERT_DOWN, "mlp.experts.%d.down_proj.weight", MLA_LW_EXPERT, MLA_LW_FP8_LINEAR, 2,              \
      (int64_t)(c)->hidden_size, (int64_t)(c)->moe_intermediate_size)                                          \
    X(MLA_LW_EXPERT_UP, "mlp.experts.%d.up_proj.weight", MLA_LW_EXPERT, MLA_LW_FP8_LINEAR, 2,                  \
      (int64_t)(c)->moe_intermediate_size, (int64_t)(c)->hidden_size)                                          \
    X(MLA_LW_SHARED_GATE, "mlp.shared_experts.gate_proj.weight", MLA_LW_SHARED, MLA_LW_FP8_LINEAR, 2,          \
      (int64_t)(c)->n_shared_experts * (c)->moe_intermediate_size, (int64_t)(c)->hidden_size)                  \
    X(MLA_LW_SHARED_DOWN, "mlp.shared_experts.down_proj.weight", MLA_LW_SHARED, MLA_LW_FP8_LINEAR, 2,          \
      (int64_t)(c)->hidden_size, (int64_t)(c)->n_shared_experts * (c)->moe_intermediate_size)                  \
    X(MLA_LW_SHARED_UP, "mlp.shared_experts.up_proj.weight", MLA_LW_SHARED, MLA_LW_FP8_LINEAR, 2,              \
      (int64_t)(c)->n_shared_experts * (c)->moe_intermediate_size, (int64_t)(c)->hidden_size)

typedef enum {
#define MLA_LW_ENUM(id, sfx, when, store, ndim, d0, d1) id,
    MLA_LAYER_WEIGHT_LIST(MLA_LW_ENUM, unused)
#undef MLA_LW_ENUM
        MLA_LW_COUNT
} mla_layer_weight;

/* Which layers hold a weight. */
typedef enum {
    MLA_LW_EVERY,     /* every layer */
    MLA_LW_Q_LORA,    /* q_lora_rank > 0 (V3, Kimi): compressed query */
    MLA_LW_NO_Q_LORA, /* q_lora_rank == 0 (V2-Lite): q_proj */
    MLA_LW_DENSE,     /* dense layers (mla_config_is_moe_layer == 0) */
    MLA_LW_MOE,       /* MoE layers */
    MLA_LW_MOE_BIAS,  /* MoE layers of a config with e_score_correction_bias */
    MLA_LW_EXPERT,    /* MoE layers, once per routed expert e in [0, n_routed_experts) */
    MLA_LW_SHARED     /* MoE layers of a config with n_shared_experts > 0 */
} mla_lw_when;

/* How an engine stores a weight (reference/NUMERICS.md). */
typedef enum {
    MLA_LW_KEEP = 0,       /* as loaded: norms, the router and its bias (never rounded) */
    MLA_LW_BF16 = 1,       /* bf16 in every low-precision profile (kv_b_proj, embeddings) */
    MLA_LW_FP8_LINEAR = 2  /* bf16, and 128x128 block-fp8 under the fp8w profile */
} mla_lw_store;

/* The row's HF suffix (may hold "%d", see above), layer rule and storage. */
const char *mla_lw_suffix(mla_layer_weight w);
mla_lw_when mla_lw_when_of(mla_layer_weight w);
mla_lw_store mla_lw_store_of(mla_layer_weight w);
/* How many tensors of row w layer `layer` holds under c: 0, 1, or n_routed_experts (MLA_LW_EXPERT). */
int mla_lw_count(const mla_config *c, int layer, mla_layer_weight w);
/* Shape of row w under c; returns the rank (1 or 2). */
int mla_lw_shape(const mla_config *c, mla_layer_weight w, int64_t shape[2]);
/* "model.layers.{layer}.{suffix}" with expert e (ignored by rows without "%d") into buf[n];
 * 0 ok, -1 when it does not fit. */
int mla_lw_name(char *buf, size_t n, int layer, mla_layer_weight w, int e);

#ifdef __cplusplus
}
#endif
#endif
