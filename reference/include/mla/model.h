/* model.h: the model description every engine shares (config, weights by HF name, profiles). */
#ifndef MLA_MODEL_H
#define MLA_MODEL_H

#include "mla/tensor.h"

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
/* Sanity checks (positive dims, topk <= experts, ...); detail names the field. */
mla_status mla_config_validate(const mla_config *c, const char *origin);
/* JSON text in HF config.json spelling; caller frees. */
char *mla_config_to_json(const mla_config *c);
/* Parse HF config.json text (rope_scaling or rope_parameters, q_lora_rank null). origin names the
 * file in error messages. */
mla_status mla_config_from_json(const char *text, const char *origin, mla_config *out);

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

/* A model: config + named weight tensors (HF names, mla-spec.md §a.3), in their source dtype.
 * Built-in models generate weights from a seed on first use; HF folders are memory-mapped. */
typedef struct mla_model mla_model;

/* name_or_path: a built-in name (tiny-v2-lite, tiny-v3, v3-layer) or a HF checkpoint folder. */
mla_status mla_model_open(const char *name_or_path, mla_model **out);
void mla_model_free(mla_model *m);
const mla_config *mla_model_config(const mla_model *m);
const char *mla_model_source(const mla_model *m); /* built-in name or folder path */
/* Raw tensor by HF name (a view, valid while the model is open). MLA_ERR_NOT_FOUND if absent. */
mla_status mla_model_tensor(mla_model *m, const char *hf_name, const mla_tensor **out);
/* Tensor by HF name converted to double (fp8 weights dequantized with weight_scale_inv,
 * 128x128 blocks). Caller frees (free()). Shape checked against the config. */
mla_status mla_model_tensor_f64(mla_model *m, const char *hf_name, double **out, int64_t *numel);
/* Number of named tensors and the i-th name, for writers and hashing. */
int mla_model_tensor_count(const mla_model *m);
const char *mla_model_tensor_name(const mla_model *m, int i);
/* FNV-1a 64 over every tensor's name, dtype, shape and bytes, as 16 hex digits in out[17]. */
mla_status mla_model_weights_hash(mla_model *m, char out[17]);
/* Names of built-in models, NULL-terminated. */
const char *const *mla_builtin_models(void);
/* Write the model as a HF folder (config.json + model.safetensors, or shards of at most
 * shard_bytes when > 0, with model.safetensors.index.json), tensors in dtype (F32 or BF16;
 * MLA_F64 keeps each tensor's source dtype). */
mla_status mla_model_write_hf(mla_model *m, const char *dir, mla_dtype dtype, size_t shard_bytes);

/* The expected shape of a named tensor under the config; 0 ok, -1 name unknown. */
int mla_config_tensor_shape(const mla_config *c, const char *hf_name, int *ndim, int64_t *shape);

/* Config of a named model without weights: the real deepseek-v3, deepseek-v2-lite, kimi-k2
 * (mla-spec.md §a.2) and the built-ins by their names. MLA_ERR_NOT_FOUND if unknown. */
mla_status mla_config_preset(const char *name, mla_config *out);

#ifdef __cplusplus
}
#endif
#endif
