/* config.h: the model description every engine shares (mla_config, in HF config.json terms), its
 * derived constants (mla-spec.md) and the numerics profiles. Part of the contract: a plugin may use it
 * without linking the loader (mla_model/model.h). */
#ifndef MLA_CONFIG_H
#define MLA_CONFIG_H

#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MLA_SCORE_SOFTMAX = 0, MLA_SCORE_SIGMOID = 1 } mla_score_func;
typedef enum { MLA_TOPK_GREEDY = 0, MLA_TOPK_GROUP_LIMITED = 1, MLA_TOPK_NOAUX_TC = 2 } mla_topk_method;

typedef struct mla_config {
    char model_type[32]; /* deepseek_v2, deepseek_v3, kimi_k2 */
    int vocab_size;
    int hidden_size;          /* D */
    int num_hidden_layers;
    int num_attention_heads;  /* H */
    int q_lora_rank;          /* 0 = no query compression (q_proj) */
    int kv_lora_rank;         /* C */
    int qk_nope_head_dim;     /* P */
    int qk_rope_head_dim;     /* R */
    int v_head_dim;           /* V */
    int intermediate_size;
    int moe_intermediate_size;
    int first_k_dense_replace;
    int moe_layer_freq;
    int n_routed_experts;     /* 0 = dense model */
    int n_shared_experts;
    int num_experts_per_tok;  /* K */
    int n_group;
    int topk_group;
    mla_score_func scoring_func;
    mla_topk_method topk_method;
    int norm_topk_prob;
    int has_e_score_correction_bias;
    double routed_scaling_factor;
    double rms_norm_eps;
    double rope_theta;
    int max_position_embeddings;
    /* YaRN; rope_factor <= 1 or has_yarn == 0 means plain RoPE */
    int has_yarn;
    double rope_factor;
    int rope_original_max_pos;
    double beta_fast, beta_slow, mscale, mscale_all_dim;
    int tie_word_embeddings;
    /* fp8 block-scaled checkpoint (quantization_config) */
    int fp8_weights;
    int weight_block_size; /* 128 */
} mla_config;

/* Derived constants (mla-spec.md §b.1 (6), §c). */
double mla_config_softmax_scale(const mla_config *c); /* Dqk^-0.5 * m^2 */
double mla_config_yarn_mscale(double factor, double mscale); /* 0.1*mscale*ln(factor)+1, 1 if factor<=1 */
/* inv_freq[R/2], computed in double from the formulas of §c.1. */
void mla_config_inv_freq(const mla_config *c, double *inv_freq);
/* cos/sin magnitude (attention_factor); 1.0 when mscale == mscale_all_dim. */
double mla_config_rope_attn_factor(const mla_config *c);
int mla_config_is_moe_layer(const mla_config *c, int layer);

/* Numerics profiles (design.md). */
#define MLA_PROFILE_LIST(X) \
    X(MLA_PROFILE_FP64, "fp64") \
    X(MLA_PROFILE_BF16, "bf16") \
    X(MLA_PROFILE_FP8KV, "fp8kv") \
    X(MLA_PROFILE_FP8DS, "fp8ds") \
    X(MLA_PROFILE_FP8W, "fp8w")

typedef enum {
#define MLA_PROFILE_ENUM(e, n) e,
    MLA_PROFILE_LIST(MLA_PROFILE_ENUM)
#undef MLA_PROFILE_ENUM
        MLA_PROFILE_COUNT
} mla_profile;

const char *mla_profile_name(mla_profile p);
int mla_profile_from_name(const char *name, mla_profile *out);

#ifdef __cplusplus
}
#endif
#endif
