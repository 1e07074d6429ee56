/* mla_model/model.h: the model loader's API (reference/src/model): built-in models and HF folders,
 * weights by HF name, config.json reading and writing. Not part of the contract (mla/). */
#ifndef MLA_MODEL_MODEL_H
#define MLA_MODEL_MODEL_H

#include "mla/config.h"
#include "mla/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sanity checks (positive dims, topk <= experts, ...); detail names the field. */
mla_status mla_config_validate(const mla_config *c, const char *origin);
/* JSON text in HF config.json spelling; caller frees. */
char *mla_config_to_json(const mla_config *c);
/* Parse HF config.json text (rope_scaling or rope_parameters, q_lora_rank null). origin names the
 * file in error messages. */
mla_status mla_config_from_json(const char *text, const char *origin, mla_config *out);

/* A model: config + named weight tensors (HF names, mla-spec.md §a.3), in their source dtype.
 * Built-in models generate weights from a seed on first use; HF folders are memory-mapped. */
typedef struct mla_model mla_model;

/* name_or_path: a built-in name (tiny-v2-lite, tiny-v3, asym-v3, asym-v2-lite, v3-layer, v2-lite-layer) or a HF checkpoint folder. */
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
