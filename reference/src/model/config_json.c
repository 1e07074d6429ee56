/* config_json.c: mla_config <-> HF config.json (mla-spec.md §a.1, §a.2), and the sanity checks.
 *
 * Accepted spellings: rope_scaling {type|rope_type: "yarn", factor, original_max_position_embeddings,
 * beta_fast, beta_slow, mscale, mscale_all_dim} (transformers 4) and rope_parameters (transformers 5:
 * the same keys plus rope_theta, rope_type "default" = no scaling); q_lora_rank null = 0.
 *
 * Required (an error naming the file and the field when absent): the dimensions every real MLA
 * checkpoint writes, so that a truncated config is never read as DeepSeek-V3's: vocab_size,
 * hidden_size, num_hidden_layers, num_attention_heads, q_lora_rank (null = 0), kv_lora_rank,
 * qk_nope_head_dim, qk_rope_head_dim, v_head_dim, intermediate_size, n_routed_experts (null = 0, a
 * dense model), and when n_routed_experts > 0 moe_intermediate_size and num_experts_per_tok.
 * Defaults when another field is absent are those of HF DeepseekV3Config (transformers), for every
 * model_type: n_shared_experts 1, n_group 8, topk_group 4, first_k_dense_replace 3, moe_layer_freq 1,
 * routed_scaling_factor 2.5, rms_norm_eps 1e-6, rope_theta 10000, max_position_embeddings 4096,
 * tie_word_embeddings false, hidden_act silu, rope_interleave true, no rope scaling. The router kind
 * defaults by model_type (the fields live only in the remote-code configs): deepseek_v3 / kimi_k2
 * sigmoid + noaux_tc + norm_topk_prob true, deepseek_v2 softmax + greedy + norm_topk_prob false (HF
 * DeepseekV2Config).
 * YaRN keys default as HF reads them: original_max_position_embeddings = max_position_embeddings,
 * beta_fast 32, beta_slow 1, mscale 1, mscale_all_dim 0 (0 = no softmax mscale^2).
 * A value the engines do not implement (model_type, rope type, quant method, hidden_act other than
 * silu, rope_interleave false) is MLA_ERR_FORMAT, bad input (exit 2), not a skip: a gate must not read
 * an unusable checkpoint as "not applicable". Sizes are bounded before any work (config_check_size).
 * null counts as absent, except for q_lora_rank (0) and the expert counts (null = 0, a dense model). */
#include "model_internal.h"
#include "mla/weights.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_POS = 1, F_NONNEG = 2, F_NULL_ZERO = 4 };

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "real";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Integer field `key` of obj (field path prefix pre, e.g. "rope_scaling."). */
static mla_status get_int(const json_t *obj, const char *pre, const char *key, const char *origin,
                          int flags, int *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) return MLA_OK;
    if (json_is_null(v)) {
        if (flags & F_NULL_ZERO) *out = 0;
        return MLA_OK;
    }
    const char *want = (flags & F_POS) ? "a positive integer"
                       : (flags & F_NONNEG) ? "a non-negative integer" : "an integer";
    if (!json_is_integer(v))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s%s: expected %s, got %s", origin, pre, key, want,
                          json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x > 0x7fffffff || x < -0x7fffffff || ((flags & F_POS) && x <= 0) || ((flags & F_NONNEG) && x < 0))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s%s: expected %s, got %lld", origin, pre, key, want,
                          (long long)x);
    *out = (int)x;
    return MLA_OK;
}

static mla_status get_num(const json_t *obj, const char *pre, const char *key, const char *origin,
                          int flags, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return MLA_OK;
    const char *want = (flags & F_POS) ? "a positive number" : (flags & F_NONNEG) ? "a non-negative number"
                                                                                 : "a number";
    if (!json_is_number(v))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s%s: expected %s, got %s", origin, pre, key, want,
                          json_kind(v));
    double x = json_number_value(v);
    if (!isfinite(x) || ((flags & F_POS) && !(x > 0)) || ((flags & F_NONNEG) && x < 0))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s%s: expected %s, got %.17g", origin, pre, key, want, x);
    *out = x;
    return MLA_OK;
}

static mla_status get_bool(const json_t *obj, const char *key, const char *origin, int *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return MLA_OK;
    if (!json_is_boolean(v))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s: expected true or false, got %s", origin, key,
                          json_kind(v));
    *out = json_is_true(v);
    return MLA_OK;
}

/* String field; *out stays NULL when absent or null. */
static mla_status get_str(const json_t *obj, const char *pre, const char *key, const char *origin,
                          const char **out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) return MLA_OK;
    if (!json_is_string(v))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s%s: expected a string, got %s", origin, pre, key,
                          json_kind(v));
    *out = json_string_value(v);
    return MLA_OK;
}

static void config_defaults(mla_config *c)
{
    memset(c, 0, sizeof *c);
    c->vocab_size = 129280;
    c->hidden_size = 7168;
    c->intermediate_size = 18432;
    c->moe_intermediate_size = 2048;
    c->num_hidden_layers = 61;
    c->num_attention_heads = 128;
    c->q_lora_rank = 1536;
    c->kv_lora_rank = 512;
    c->qk_nope_head_dim = 128;
    c->qk_rope_head_dim = 64;
    c->v_head_dim = 128;
    c->n_routed_experts = 256;
    c->n_shared_experts = 1;
    c->num_experts_per_tok = 8;
    c->n_group = 8;
    c->topk_group = 4;
    c->first_k_dense_replace = 3;
    c->moe_layer_freq = 1;
    c->routed_scaling_factor = 2.5;
    c->rms_norm_eps = 1e-6;
    c->rope_theta = 10000.0;
    c->max_position_embeddings = 4096;
    c->weight_block_size = 128;
}

#define TRY(x)                      \
    do {                            \
        mla_status st_ = (x);       \
        if (st_ != MLA_OK) return st_; \
    } while (0)

/* rope_scaling / rope_parameters object (name is the field name for messages). */
static mla_status parse_rope(const json_t *r, const char *name, const char *origin, mla_config *c)
{
    char pre[40];
    snprintf(pre, sizeof pre, "%s.", name);
    if (!json_is_object(r))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s: expected an object or null, got %s", origin, name,
                          json_kind(r));
    const char *type = NULL, *type2 = NULL;
    TRY(get_str(r, pre, "rope_type", origin, &type));
    TRY(get_str(r, pre, "type", origin, &type2));
    if (!type) type = type2;
    TRY(get_num(r, pre, "rope_theta", origin, F_POS, &c->rope_theta));
    if (!type && json_object_get(r, "factor"))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %srope_type: expected \"yarn\" or \"default\" next to factor, "
                          "got nothing", origin, pre);
    if (!type || strcmp(type, "default") == 0) {
        c->has_yarn = 0;
        return MLA_OK;
    }
    if (strcmp(type, "yarn") != 0)
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %s%s: expected \"yarn\" or \"default\", got \"%s\"",
                          origin, pre, json_object_get(r, "rope_type") ? "rope_type" : "type", type);
    c->has_yarn = 1;
    c->rope_factor = 0;
    c->rope_original_max_pos = c->max_position_embeddings;
    c->beta_fast = 32.0;
    c->beta_slow = 1.0;
    c->mscale = 1.0;
    c->mscale_all_dim = 0.0;
    if (!json_object_get(r, "factor"))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field %sfactor: expected a positive number, got nothing",
                          origin, pre);
    TRY(get_num(r, pre, "factor", origin, F_POS, &c->rope_factor));
    TRY(get_int(r, pre, "original_max_position_embeddings", origin, F_POS, &c->rope_original_max_pos));
    TRY(get_num(r, pre, "beta_fast", origin, F_POS, &c->beta_fast));
    TRY(get_num(r, pre, "beta_slow", origin, F_POS, &c->beta_slow));
    TRY(get_num(r, pre, "mscale", origin, F_NONNEG, &c->mscale));
    TRY(get_num(r, pre, "mscale_all_dim", origin, F_NONNEG, &c->mscale_all_dim));
    return MLA_OK;
}

static mla_status parse_quant(const json_t *q, const char *origin, mla_config *c)
{
    if (!json_is_object(q))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field quantization_config: expected an object, got %s", origin,
                          json_kind(q));
    const char *method = NULL;
    TRY(get_str(q, "quantization_config.", "quant_method", origin, &method));
    if (!method || strcmp(method, "fp8") != 0)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: field quantization_config.quant_method: expected \"fp8\", got %s%s%s", origin,
                          method ? "\"" : "", method ? method : "nothing", method ? "\"" : "");
    const char *fmt = NULL;
    TRY(get_str(q, "quantization_config.", "fmt", origin, &fmt));
    if (fmt && strcmp(fmt, "e4m3") != 0)
        return mla_errorf(MLA_ERR_FORMAT, "%s: field quantization_config.fmt: expected \"e4m3\", got \"%s\"",
                          origin, fmt);
    c->fp8_weights = 1;
    c->weight_block_size = 128;
    const json_t *b = json_object_get(q, "weight_block_size");
    if (b && !json_is_null(b)) {
        if (!json_is_array(b) || json_array_size(b) != 2 || !json_is_integer(json_array_get(b, 0)) ||
            !json_is_integer(json_array_get(b, 1)))
            return mla_errorf(MLA_ERR_FORMAT,
                              "%s: field quantization_config.weight_block_size: expected [n, n] integers, got %s",
                              origin, json_kind(b));
        json_int_t r = json_integer_value(json_array_get(b, 0)), k = json_integer_value(json_array_get(b, 1));
        if (r != k || r <= 0 || r > 1 << 20)
            return mla_errorf(MLA_ERR_FORMAT,
                              "%s: field quantization_config.weight_block_size: expected square blocks [n, n], "
                              "got [%lld, %lld]", origin, (long long)r, (long long)k);
        c->weight_block_size = (int)r;
    }
    return MLA_OK;
}

static mla_status parse_config(const json_t *root, const char *origin, mla_config *c)
{
    if (!json_is_object(root))
        return mla_errorf(MLA_ERR_FORMAT, "%s: expected a JSON object at the top level, got %s", origin,
                          json_kind(root));
    config_defaults(c);
    const char *mt = NULL;
    TRY(get_str(root, "", "model_type", origin, &mt));
    if (!mt) return mla_errorf(MLA_ERR_FORMAT, "%s: field model_type: expected a string, got nothing", origin);
    if (strcmp(mt, "deepseek_v2") && strcmp(mt, "deepseek_v3") && strcmp(mt, "kimi_k2"))
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: field model_type: expected deepseek_v2, deepseek_v3 or kimi_k2, got \"%s\"", origin,
                          mt);
    snprintf(c->model_type, sizeof c->model_type, "%s", mt);
    int v2 = strcmp(mt, "deepseek_v2") == 0;
    c->scoring_func = v2 ? MLA_SCORE_SOFTMAX : MLA_SCORE_SIGMOID;
    c->topk_method = v2 ? MLA_TOPK_GREEDY : MLA_TOPK_NOAUX_TC;
    c->norm_topk_prob = !v2;

    static const struct { const char *key; size_t off; int flags; } ints[] = {
#define I(f, fl) { #f, offsetof(mla_config, f), fl }
        I(vocab_size, F_POS), I(hidden_size, F_POS), I(num_hidden_layers, F_POS),
        I(num_attention_heads, F_POS), I(q_lora_rank, F_NONNEG | F_NULL_ZERO), I(kv_lora_rank, F_POS),
        I(qk_nope_head_dim, F_POS), I(qk_rope_head_dim, F_POS), I(v_head_dim, F_POS),
        I(intermediate_size, F_POS), I(moe_intermediate_size, F_POS), I(first_k_dense_replace, F_NONNEG),
        I(moe_layer_freq, F_POS), I(n_routed_experts, F_NONNEG | F_NULL_ZERO),
        I(n_shared_experts, F_NONNEG | F_NULL_ZERO), I(num_experts_per_tok, F_NONNEG | F_NULL_ZERO),
        I(n_group, F_POS), I(topk_group, F_POS), I(max_position_embeddings, F_POS),
#undef I
    };
    /* The dimensions every real MLA checkpoint writes; a default here would silently build
     * DeepSeek-V3's shapes and the error would then blame a tensor. */
    static const char *required[] = { "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                      "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                      "v_head_dim", "intermediate_size", "n_routed_experts" };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        const json_t *v = json_object_get(root, required[i]);
        int null_ok = !strcmp(required[i], "q_lora_rank") || !strcmp(required[i], "n_routed_experts");
        if (!v || (json_is_null(v) && !null_ok))
            return mla_errorf(MLA_ERR_FORMAT, "%s: field %s: required (no default for a model dimension), got %s",
                              origin, required[i], v ? "null" : "nothing");
    }
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        TRY(get_int(root, "", ints[i].key, origin, ints[i].flags, (int *)((char *)c + ints[i].off)));
    if (c->n_routed_experts > 0) {
        static const char *moe_required[] = { "moe_intermediate_size", "num_experts_per_tok" };
        for (size_t i = 0; i < 2; i++) {
            const json_t *v = json_object_get(root, moe_required[i]);
            if (!v || json_is_null(v))
                return mla_errorf(MLA_ERR_FORMAT, "%s: field %s: required when n_routed_experts (%d) > 0, got %s",
                                  origin, moe_required[i], c->n_routed_experts, v ? "null" : "nothing");
        }
    }
    TRY(get_num(root, "", "routed_scaling_factor", origin, F_POS, &c->routed_scaling_factor));
    TRY(get_num(root, "", "rms_norm_eps", origin, F_POS, &c->rms_norm_eps));
    TRY(get_num(root, "", "rope_theta", origin, F_POS, &c->rope_theta));
    TRY(get_bool(root, "norm_topk_prob", origin, &c->norm_topk_prob));
    TRY(get_bool(root, "tie_word_embeddings", origin, &c->tie_word_embeddings));

    const char *s = NULL;
    TRY(get_str(root, "", "hidden_act", origin, &s));
    if (s && strcmp(s, "silu"))
        return mla_errorf(MLA_ERR_FORMAT, "%s: field hidden_act: expected \"silu\" (the engines' SwiGLU), got \"%s\"",
                          origin, s);
    int interleave = 1;
    TRY(get_bool(root, "rope_interleave", origin, &interleave));
    if (!interleave)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: field rope_interleave: expected true, got false (the engines implement the "
                          "interleaved GPT-J rope pairing of DeepSeek checkpoints only, mla-spec.md section c.3; "
                          "a half-split checkpoint would be computed wrongly)", origin);
    TRY(get_str(root, "", "scoring_func", origin, &s));
    if (s) {
        if (strcmp(s, "softmax") == 0) c->scoring_func = MLA_SCORE_SOFTMAX;
        else if (strcmp(s, "sigmoid") == 0) c->scoring_func = MLA_SCORE_SIGMOID;
        else
            return mla_errorf(MLA_ERR_FORMAT,
                              "%s: field scoring_func: expected \"softmax\" or \"sigmoid\", got \"%s\"", origin, s);
    }
    TRY(get_str(root, "", "topk_method", origin, &s));
    if (s) {
        if (strcmp(s, "greedy") == 0) c->topk_method = MLA_TOPK_GREEDY;
        else if (strcmp(s, "group_limited_greedy") == 0) c->topk_method = MLA_TOPK_GROUP_LIMITED;
        else if (strcmp(s, "noaux_tc") == 0) c->topk_method = MLA_TOPK_NOAUX_TC;
        else
            return mla_errorf(MLA_ERR_FORMAT,
                              "%s: field topk_method: expected \"greedy\", \"group_limited_greedy\" or "
                              "\"noaux_tc\", got \"%s\"", origin, s);
    }
    c->has_e_score_correction_bias = c->topk_method == MLA_TOPK_NOAUX_TC;

    /* transformers 5 writes rope_parameters; when both are present it is the newer one. */
    const json_t *rp = json_object_get(root, "rope_parameters");
    const json_t *rs = json_object_get(root, "rope_scaling");
    if (rp && !json_is_null(rp)) TRY(parse_rope(rp, "rope_parameters", origin, c));
    else if (rs && !json_is_null(rs)) TRY(parse_rope(rs, "rope_scaling", origin, c));

    const json_t *q = json_object_get(root, "quantization_config");
    if (q && !json_is_null(q)) TRY(parse_quant(q, origin, c));
    return MLA_OK;
}

/* Limits checked before anything is allocated from the config: the largest MLA checkpoint, Kimi-K2,
 * has 1.03e12 parameters and ~100k tensors (61 layers x 384 experts x 3 + scales); the bounds are
 * about twice and forty times that, far past any machine this runs on, yet small enough that a
 * config such as num_hidden_layers 1000000 is refused in microseconds instead of after minutes of
 * name lists. Each dimension is bounded first so that the 64-bit products below cannot overflow. */
#define CFG_MAX_DIM (1 << 24)
#define CFG_MAX_PARAMS (1ull << 41)
#define CFG_MAX_TENSORS (1ull << 22)

static uint64_t layer_params(const mla_config *c, int layer, uint64_t *tensors)
{
    uint64_t p = 0;
    *tensors = 0;
    for (int w = 0; w < MLA_LW_COUNT; w++) {
        int n = mla_lw_count(c, layer, (mla_layer_weight)w);
        int64_t sh[2];
        int nd = mla_lw_shape(c, (mla_layer_weight)w, sh);
        /* dims < 2^24 each (config_check_size), so a row's product fits; times n it may not: checked */
        uint64_t e = nd == 2 ? (uint64_t)sh[0] * (uint64_t)sh[1] : (uint64_t)sh[0], t;
        if (__builtin_mul_overflow(e, (uint64_t)n, &t) || __builtin_add_overflow(p, t, &p)) return UINT64_MAX;
        *tensors += (uint64_t)n;
    }
    return p;
}

mla_status config_param_count(const mla_config *c, uint64_t *params, uint64_t *tensors)
{
    uint64_t td = 0, tm = 0, n_moe = 0;
    /* MoE layers: l >= first_k_dense_replace with l % moe_layer_freq == 0 (mla_config_is_moe_layer) */
    if (c->n_routed_experts > 0 && c->num_hidden_layers > c->first_k_dense_replace) {
        int f = c->moe_layer_freq > 0 ? c->moe_layer_freq : 1;
        int first = (c->first_k_dense_replace + f - 1) / f * f;
        if (first < c->num_hidden_layers) n_moe = (uint64_t)((c->num_hidden_layers - 1 - first) / f + 1);
    }
    uint64_t n_dense = (uint64_t)c->num_hidden_layers - n_moe;
    int dense_layer = -1, moe_layer = -1;
    for (int l = 0; l < c->num_hidden_layers && (dense_layer < 0 || moe_layer < 0); l++) {
        if (mla_config_is_moe_layer(c, l)) { if (moe_layer < 0) moe_layer = l; }
        else if (dense_layer < 0) dense_layer = l;
        if (l > c->first_k_dense_replace + c->moe_layer_freq) break; /* both kinds seen by then */
    }
    uint64_t pd = dense_layer >= 0 ? layer_params(c, dense_layer, &td) : 0;
    uint64_t pm = moe_layer >= 0 ? layer_params(c, moe_layer, &tm) : 0;
    uint64_t emb = (uint64_t)c->vocab_size * (uint64_t)c->hidden_size, p = 0, a, b;
    int ok = pd != UINT64_MAX && pm != UINT64_MAX && !__builtin_mul_overflow(pd, n_dense, &a) &&
             !__builtin_mul_overflow(pm, n_moe, &b) && !__builtin_add_overflow(a, b, &p) &&
             !__builtin_add_overflow(p, emb * (c->tie_word_embeddings ? 1 : 2) + (uint64_t)c->hidden_size, &p);
    *params = ok ? p : UINT64_MAX;
    *tensors = td * n_dense + tm * n_moe + 3; /* < 2^6 * 2^31 + 2^24 * 2^31: no overflow */
    return MLA_OK;
}

static mla_status config_check_size(const mla_config *c, const char *origin)
{
    static const struct { const char *key; size_t off; } dims[] = {
#define D(f) { #f, offsetof(mla_config, f) }
        D(vocab_size), D(hidden_size), D(num_hidden_layers), D(num_attention_heads), D(q_lora_rank),
        D(kv_lora_rank), D(qk_nope_head_dim), D(qk_rope_head_dim), D(v_head_dim), D(intermediate_size),
        D(moe_intermediate_size), D(n_routed_experts), D(n_shared_experts), D(num_experts_per_tok),
        D(first_k_dense_replace), D(moe_layer_freq),
#undef D
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        int v = *(const int *)((const char *)c + dims[i].off);
        if (v > CFG_MAX_DIM)
            return mla_errorf(MLA_ERR_FORMAT, "%s: field %s: %d, expected at most %d", origin, dims[i].key, v,
                              CFG_MAX_DIM);
    }
    uint64_t params, tensors;
    config_param_count(c, &params, &tensors);
    if (params > CFG_MAX_PARAMS || tensors > CFG_MAX_TENSORS)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: the config describes %llu%s parameters in %llu tensors, expected at most %llu in "
                          "%llu (twice the largest MLA checkpoint, Kimi-K2)", origin,
                          params == UINT64_MAX ? (unsigned long long)UINT64_MAX : (unsigned long long)params,
                          params == UINT64_MAX ? "+ (overflow)" : "", (unsigned long long)tensors,
                          (unsigned long long)CFG_MAX_PARAMS, (unsigned long long)CFG_MAX_TENSORS);
    return MLA_OK;
}

mla_status mla_config_from_json(const char *text, const char *origin, mla_config *out)
{
    if (!origin) origin = "config.json";
    if (!text || !out) return mla_errorf(MLA_ERR_INVALID, "%s: no text or no output config", origin);
    json_error_t err;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return mla_errorf(MLA_ERR_FORMAT, "%s: invalid JSON at line %d column %d: %s", origin, err.line,
                          err.column, err.text);
    mla_config c;
    mla_status st = parse_config(root, origin, &c);
    json_decref(root);
    if (st != MLA_OK) return st;
    st = mla_config_validate(&c, origin);
    if (st == MLA_OK) st = config_check_size(&c, origin);
    if (st != MLA_OK) return st;
    *out = c;
    return MLA_OK;
}

#define BAD(field, ...) mla_errorf(MLA_ERR_INVALID, "%s: field " field ": " __VA_ARGS__)

mla_status mla_config_validate(const mla_config *c, const char *o)
{
    if (!o) o = "config";
    if (!c) return mla_errorf(MLA_ERR_INVALID, "%s: no config", o);
    if (strcmp(c->model_type, "deepseek_v2") && strcmp(c->model_type, "deepseek_v3") &&
        strcmp(c->model_type, "kimi_k2"))
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: field model_type: expected deepseek_v2, deepseek_v3 or kimi_k2, got \"%.32s\"", o,
                          c->model_type);
    static const struct { const char *key; size_t off; int min; } dims[] = {
#define D(f, m) { #f, offsetof(mla_config, f), m }
        D(vocab_size, 1), D(hidden_size, 1), D(num_hidden_layers, 1), D(num_attention_heads, 1),
        D(q_lora_rank, 0), D(kv_lora_rank, 1), D(qk_nope_head_dim, 1), D(qk_rope_head_dim, 2),
        D(v_head_dim, 1), D(first_k_dense_replace, 0), D(moe_layer_freq, 1), D(n_routed_experts, 0),
        D(n_shared_experts, 0), D(max_position_embeddings, 1),
#undef D
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        int v = *(const int *)((const char *)c + dims[i].off);
        if (v < dims[i].min)
            return mla_errorf(MLA_ERR_INVALID, "%s: field %s: expected an integer >= %d, got %d", o, dims[i].key,
                              dims[i].min, v);
    }
    if (c->qk_rope_head_dim % 2)
        return BAD("qk_rope_head_dim", "expected an even number (RoPE pairs), got %d", o, c->qk_rope_head_dim);
    int any_dense = c->n_routed_experts == 0 || c->first_k_dense_replace > 0 || c->moe_layer_freq > 1;
    if (any_dense && c->intermediate_size < 1)
        return BAD("intermediate_size", "expected a positive integer, got %d", o, c->intermediate_size);
    if (c->n_routed_experts > 0) {
        if (c->moe_intermediate_size < 1)
            return BAD("moe_intermediate_size", "expected a positive integer, got %d", o, c->moe_intermediate_size);
        if (c->num_experts_per_tok < 1 || c->num_experts_per_tok > c->n_routed_experts)
            return BAD("num_experts_per_tok", "expected 1..n_routed_experts (%d), got %d", o, c->n_routed_experts,
                       c->num_experts_per_tok);
        if (c->n_group < 1 || c->n_routed_experts % c->n_group)
            return BAD("n_group", "expected a divisor of n_routed_experts (%d), got %d", o, c->n_routed_experts,
                       c->n_group);
        if (c->topk_group < 1 || c->topk_group > c->n_group)
            return BAD("topk_group", "expected 1..n_group (%d), got %d", o, c->n_group, c->topk_group);
        if (c->topk_method != MLA_TOPK_GREEDY &&
            c->num_experts_per_tok > c->topk_group * (c->n_routed_experts / c->n_group))
            return BAD("num_experts_per_tok", "expected at most topk_group * experts per group (%d), got %d", o,
                       c->topk_group * (c->n_routed_experts / c->n_group), c->num_experts_per_tok);
    }
    if ((unsigned)c->scoring_func > MLA_SCORE_SIGMOID)
        return BAD("scoring_func", "expected softmax or sigmoid, got %d", o, (int)c->scoring_func);
    if ((unsigned)c->topk_method > MLA_TOPK_NOAUX_TC)
        return BAD("topk_method", "expected greedy, group_limited_greedy or noaux_tc, got %d", o,
                   (int)c->topk_method);
    if (!isfinite(c->routed_scaling_factor) || !(c->routed_scaling_factor > 0))
        return BAD("routed_scaling_factor", "expected a positive number, got %g", o, c->routed_scaling_factor);
    if (!isfinite(c->rms_norm_eps) || !(c->rms_norm_eps > 0))
        return BAD("rms_norm_eps", "expected a positive number, got %g", o, c->rms_norm_eps);
    if (!isfinite(c->rope_theta) || !(c->rope_theta > 1))
        return BAD("rope_theta", "expected a number > 1, got %g", o, c->rope_theta);
    if (c->has_yarn) {
        if (!isfinite(c->rope_factor) || !(c->rope_factor > 0))
            return BAD("rope_scaling.factor", "expected a positive number, got %g", o, c->rope_factor);
        if (c->rope_original_max_pos < 1)
            return BAD("rope_scaling.original_max_position_embeddings", "expected a positive integer, got %d", o,
                       c->rope_original_max_pos);
        if (!isfinite(c->beta_fast) || !isfinite(c->beta_slow) || !(c->beta_slow > 0) ||
            !(c->beta_fast >= c->beta_slow))
            return BAD("rope_scaling.beta_fast", "expected beta_fast >= beta_slow > 0, got %g and %g", o,
                       c->beta_fast, c->beta_slow);
        if (!isfinite(c->mscale) || c->mscale < 0 || !isfinite(c->mscale_all_dim) || c->mscale_all_dim < 0)
            return BAD("rope_scaling.mscale", "expected non-negative mscale and mscale_all_dim, got %g and %g", o,
                       c->mscale, c->mscale_all_dim);
    }
    if (c->fp8_weights && c->weight_block_size < 1)
        return BAD("quantization_config.weight_block_size", "expected a positive block size, got %d", o,
                   c->weight_block_size);
    return MLA_OK;
}

static const char *topk_names[] = { "greedy", "group_limited_greedy", "noaux_tc" };
static const char *score_names[] = { "softmax", "sigmoid" };

char *mla_config_to_json(const mla_config *c)
{
    json_t *o = json_object();
    if (!o) return NULL;
    int v2 = strcmp(c->model_type, "deepseek_v2") == 0;
    json_t *arch = json_array();
    json_array_append_new(arch, json_string(v2 ? "DeepseekV2ForCausalLM" : "DeepseekV3ForCausalLM"));
    json_object_set_new(o, "architectures", arch);
    json_object_set_new(o, "model_type", json_string(c->model_type));
#define SI(f) json_object_set_new(o, #f, json_integer(c->f))
#define SR(f) json_object_set_new(o, #f, json_real(c->f))
    SI(vocab_size);
    SI(hidden_size);
    SI(intermediate_size);
    SI(moe_intermediate_size);
    SI(num_hidden_layers);
    SI(num_attention_heads);
    json_object_set_new(o, "num_key_value_heads", json_integer(c->num_attention_heads));
    json_object_set_new(o, "q_lora_rank", c->q_lora_rank > 0 ? json_integer(c->q_lora_rank) : json_null());
    SI(kv_lora_rank);
    SI(qk_nope_head_dim);
    SI(qk_rope_head_dim);
    SI(v_head_dim);
    SI(first_k_dense_replace);
    SI(moe_layer_freq);
    SI(n_routed_experts);
    SI(n_shared_experts);
    SI(num_experts_per_tok);
    SI(n_group);
    SI(topk_group);
    json_object_set_new(o, "scoring_func", json_string(score_names[c->scoring_func == MLA_SCORE_SIGMOID]));
    json_object_set_new(o, "topk_method",
                        json_string(topk_names[(unsigned)c->topk_method <= 2 ? c->topk_method : 0]));
    json_object_set_new(o, "norm_topk_prob", json_boolean(c->norm_topk_prob));
    SR(routed_scaling_factor);
    SR(rms_norm_eps);
    SR(rope_theta);
    SI(max_position_embeddings);
    if (c->has_yarn) {
        json_t *r = json_object();
        json_object_set_new(r, "type", json_string("yarn"));
        json_object_set_new(r, "rope_type", json_string("yarn"));
        json_object_set_new(r, "factor", json_real(c->rope_factor));
        json_object_set_new(r, "original_max_position_embeddings", json_integer(c->rope_original_max_pos));
        json_object_set_new(r, "beta_fast", json_real(c->beta_fast));
        json_object_set_new(r, "beta_slow", json_real(c->beta_slow));
        json_object_set_new(r, "mscale", json_real(c->mscale));
        json_object_set_new(r, "mscale_all_dim", json_real(c->mscale_all_dim));
        json_object_set_new(o, "rope_scaling", r);
    } else {
        json_object_set_new(o, "rope_scaling", json_null());
    }
    json_object_set_new(o, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
    json_object_set_new(o, "hidden_act", json_string("silu"));
    json_object_set_new(o, "torch_dtype", json_string("bfloat16"));
    if (c->fp8_weights) {
        json_t *q = json_object();
        json_object_set_new(q, "quant_method", json_string("fp8"));
        json_object_set_new(q, "fmt", json_string("e4m3"));
        json_object_set_new(q, "activation_scheme", json_string("dynamic"));
        json_t *b = json_array();
        json_array_append_new(b, json_integer(c->weight_block_size));
        json_array_append_new(b, json_integer(c->weight_block_size));
        json_object_set_new(q, "weight_block_size", b);
        json_object_set_new(o, "quantization_config", q);
    }
#undef SI
#undef SR
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}
