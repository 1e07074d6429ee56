/* builtin.c: the built-in synthetic models (weights from a fixed seed, no download) and the
 * config-only presets of the real models (mla-spec.md §a.2).
 *
 * Weights: each run of 65536 elements of a tensor has its own stream, splitmix64 (mla/rng.h) sub-stream
 * "run index" of seed ^ FNV-1a(name) (mla/hash.h), so a tensor's values do not depend on which tensors were
 * asked for before it nor on how many threads generate it. Normals come from Box-Muller in
 * double. Linear weights N(0,1)/sqrt(in_features), norm weights 1 + 0.1 N(0,1), embeddings N(0,1),
 * all rounded once to bf16 (like a real checkpoint); e_score_correction_bias 0.05 N(0,1) in f32. */
#include "model_internal.h"
#include "mla_core/hash.h"
#include "mla_core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const mla_config cfg_tiny_v2_lite = {
    .model_type = "deepseek_v2", .vocab_size = 384, .hidden_size = 128, .num_hidden_layers = 3,
    .num_attention_heads = 4, .q_lora_rank = 0, .kv_lora_rank = 256, .qk_nope_head_dim = 32,
    .qk_rope_head_dim = 16, .v_head_dim = 32, .intermediate_size = 256, .moe_intermediate_size = 64,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 8, .n_shared_experts = 2,
    .num_experts_per_tok = 2, .n_group = 1, .topk_group = 1, .scoring_func = MLA_SCORE_SOFTMAX,
    .topk_method = MLA_TOPK_GREEDY, .norm_topk_prob = 0, .has_e_score_correction_bias = 0,
    .routed_scaling_factor = 1.0, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 8192, .has_yarn = 0, .tie_word_embeddings = 0, .weight_block_size = 128,
};

static const mla_config cfg_tiny_v3 = {
    .model_type = "deepseek_v3", .vocab_size = 512, .hidden_size = 256, .num_hidden_layers = 3,
    .num_attention_heads = 8, .q_lora_rank = 192, .kv_lora_rank = 256, .qk_nope_head_dim = 32,
    .qk_rope_head_dim = 16, .v_head_dim = 32, .intermediate_size = 384, .moe_intermediate_size = 96,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 16, .n_shared_experts = 1,
    .num_experts_per_tok = 4, .n_group = 4, .topk_group = 2, .scoring_func = MLA_SCORE_SIGMOID,
    .topk_method = MLA_TOPK_NOAUX_TC, .norm_topk_prob = 1, .has_e_score_correction_bias = 1,
    .routed_scaling_factor = 2.5, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 40960, .has_yarn = 1, .rope_factor = 40.0, .rope_original_max_pos = 1024,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 1.0, .mscale_all_dim = 1.0, .weight_block_size = 128,
};

/* The asym models: every dimension that can differ does, and none is a power of two where the
 * code allows it, so an index mistake that swaps two of them (the kv_b_proj split [P | V], W_UV vs
 * W_UK, C vs H*(P+V), heads vs groups, top-k vs shared experts) changes the numbers instead of
 * hiding. C is 384 because fp8_ds_mla needs a multiple of its 128-wide tile (three tiles here); the
 * GPU engine needs C <= 512, V <= 256, R even. D, q_lora and the intermediate sizes leave partial
 * 128x128 fp8w weight blocks. H 6 and 10 leave a partial group of the GPU decode kernel's 8 heads.
 * The YaRN original window (96, 112) is crossed by the ci prompts; max_position_embeddings is
 * factor x original, as HF derives the factor from the two. */
static const mla_config cfg_asym_v3 = {
    .model_type = "deepseek_v3", .vocab_size = 331, .hidden_size = 160, .num_hidden_layers = 3,
    .num_attention_heads = 6, .q_lora_rank = 144, .kv_lora_rank = 384, .qk_nope_head_dim = 40,
    .qk_rope_head_dim = 12, .v_head_dim = 28, .intermediate_size = 288, .moe_intermediate_size = 56,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 21, .n_shared_experts = 3,
    .num_experts_per_tok = 5, .n_group = 7, .topk_group = 2, .scoring_func = MLA_SCORE_SIGMOID,
    .topk_method = MLA_TOPK_NOAUX_TC, .norm_topk_prob = 1, .has_e_score_correction_bias = 1,
    .routed_scaling_factor = 2.5, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 1152, .has_yarn = 1, .rope_factor = 12.0, .rope_original_max_pos = 96,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 1.0, .mscale_all_dim = 1.0, .weight_block_size = 128,
};

/* mscale != mscale_all_dim: the cos/sin attention factor is 1.0607, not 1. hidden_size a multiple of
 * num_attention_heads: transformers' DeepseekV2Config refuses any other (the HF oracle runs it). */
static const mla_config cfg_asym_v2_lite = {
    .model_type = "deepseek_v2", .vocab_size = 277, .hidden_size = 140, .num_hidden_layers = 3,
    .num_attention_heads = 10, .q_lora_rank = 0, .kv_lora_rank = 384, .qk_nope_head_dim = 24,
    .qk_rope_head_dim = 14, .v_head_dim = 36, .intermediate_size = 232, .moe_intermediate_size = 44,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 13, .n_shared_experts = 3,
    .num_experts_per_tok = 5, .n_group = 1, .topk_group = 1, .scoring_func = MLA_SCORE_SOFTMAX,
    .topk_method = MLA_TOPK_GREEDY, .norm_topk_prob = 0, .has_e_score_correction_bias = 0,
    .routed_scaling_factor = 1.0, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 1120, .has_yarn = 1, .rope_factor = 10.0, .rope_original_max_pos = 112,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 0.9, .mscale_all_dim = 0.6, .weight_block_size = 128,
};

/* DeepSeek-V3's real attention in one dense layer. */
static const mla_config cfg_v3_layer = {
    .model_type = "deepseek_v3", .vocab_size = 1024, .hidden_size = 7168, .num_hidden_layers = 1,
    .num_attention_heads = 128, .q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
    .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate_size = 1024, .moe_intermediate_size = 2048,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 0, .n_shared_experts = 0,
    .num_experts_per_tok = 0, .n_group = 1, .topk_group = 1, .scoring_func = MLA_SCORE_SIGMOID,
    .topk_method = MLA_TOPK_NOAUX_TC, .norm_topk_prob = 1, .has_e_score_correction_bias = 1,
    .routed_scaling_factor = 2.5, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 163840, .has_yarn = 1, .rope_factor = 40.0, .rope_original_max_pos = 4096,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 1.0, .mscale_all_dim = 1.0, .weight_block_size = 128,
};

/* DeepSeek-V2-Lite's real attention (16 heads, no q_lora; also DeepSeek-V3's 128 heads under 8-way
 * tensor parallelism: the memory-bound decode shapes) in one dense layer. */
static const mla_config cfg_v2_lite_layer = {
    .model_type = "deepseek_v2", .vocab_size = 1024, .hidden_size = 2048, .num_hidden_layers = 1,
    .num_attention_heads = 16, .q_lora_rank = 0, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
    .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate_size = 1024, .moe_intermediate_size = 1408,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 0, .n_shared_experts = 0,
    .num_experts_per_tok = 0, .n_group = 1, .topk_group = 1, .scoring_func = MLA_SCORE_SOFTMAX,
    .topk_method = MLA_TOPK_GREEDY, .norm_topk_prob = 0, .has_e_score_correction_bias = 0,
    .routed_scaling_factor = 1.0, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 163840, .has_yarn = 1, .rope_factor = 40.0, .rope_original_max_pos = 4096,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 0.707, .mscale_all_dim = 0.707, .weight_block_size = 128,
};

static const mla_config cfg_deepseek_v3 = {
    .model_type = "deepseek_v3", .vocab_size = 129280, .hidden_size = 7168, .num_hidden_layers = 61,
    .num_attention_heads = 128, .q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
    .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate_size = 18432, .moe_intermediate_size = 2048,
    .first_k_dense_replace = 3, .moe_layer_freq = 1, .n_routed_experts = 256, .n_shared_experts = 1,
    .num_experts_per_tok = 8, .n_group = 8, .topk_group = 4, .scoring_func = MLA_SCORE_SIGMOID,
    .topk_method = MLA_TOPK_NOAUX_TC, .norm_topk_prob = 1, .has_e_score_correction_bias = 1,
    .routed_scaling_factor = 2.5, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 163840, .has_yarn = 1, .rope_factor = 40.0, .rope_original_max_pos = 4096,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 1.0, .mscale_all_dim = 1.0, .fp8_weights = 1,
    .weight_block_size = 128,
};

static const mla_config cfg_deepseek_v2_lite = {
    .model_type = "deepseek_v2", .vocab_size = 102400, .hidden_size = 2048, .num_hidden_layers = 27,
    .num_attention_heads = 16, .q_lora_rank = 0, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
    .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate_size = 10944, .moe_intermediate_size = 1408,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 64, .n_shared_experts = 2,
    .num_experts_per_tok = 6, .n_group = 1, .topk_group = 1, .scoring_func = MLA_SCORE_SOFTMAX,
    .topk_method = MLA_TOPK_GREEDY, .norm_topk_prob = 0, .has_e_score_correction_bias = 0,
    .routed_scaling_factor = 1.0, .rms_norm_eps = 1e-6, .rope_theta = 10000.0,
    .max_position_embeddings = 163840, .has_yarn = 1, .rope_factor = 40.0, .rope_original_max_pos = 4096,
    .beta_fast = 32.0, .beta_slow = 1.0, .mscale = 0.707, .mscale_all_dim = 0.707, .weight_block_size = 128,
};

/* Kimi-K2-Instruct (July 2025); later Kimi versions differ (factor 64, 262144 positions). */
static const mla_config cfg_kimi_k2 = {
    .model_type = "kimi_k2", .vocab_size = 163840, .hidden_size = 7168, .num_hidden_layers = 61,
    .num_attention_heads = 64, .q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope_head_dim = 128,
    .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate_size = 18432, .moe_intermediate_size = 2048,
    .first_k_dense_replace = 1, .moe_layer_freq = 1, .n_routed_experts = 384, .n_shared_experts = 1,
    .num_experts_per_tok = 8, .n_group = 1, .topk_group = 1, .scoring_func = MLA_SCORE_SIGMOID,
    .topk_method = MLA_TOPK_NOAUX_TC, .norm_topk_prob = 1, .has_e_score_correction_bias = 1,
    .routed_scaling_factor = 2.827, .rms_norm_eps = 1e-6, .rope_theta = 50000.0,
    .max_position_embeddings = 131072, .has_yarn = 1, .rope_factor = 32.0, .rope_original_max_pos = 4096,
    .beta_fast = 1.0, .beta_slow = 1.0, .mscale = 1.0, .mscale_all_dim = 1.0, .fp8_weights = 1,
    .weight_block_size = 128,
};

static const struct {
    const char *name;
    const mla_config *cfg;
    uint64_t seed; /* 0: config-only preset */
} presets[] = {
    { "tiny-v2-lite", &cfg_tiny_v2_lite, 0x6d6c612d76326c31ull },
    { "tiny-v3", &cfg_tiny_v3, 0x6d6c612d76332d31ull },
    { "asym-v3", &cfg_asym_v3, 0x6d6c612d61733331ull },
    { "asym-v2-lite", &cfg_asym_v2_lite, 0x6d6c612d61733231ull },
    { "v3-layer", &cfg_v3_layer, 0x6d6c612d76336c31ull },
    { "v2-lite-layer", &cfg_v2_lite_layer, 0x6d6c612d326c6c31ull },
    { "deepseek-v3", &cfg_deepseek_v3, 0 },
    { "deepseek-v2-lite", &cfg_deepseek_v2_lite, 0 },
    { "kimi-k2", &cfg_kimi_k2, 0 },
};
#define N_PRESETS (sizeof presets / sizeof presets[0])

static const char *const builtin_names[] = { "tiny-v2-lite", "tiny-v3", "asym-v3", "asym-v2-lite", "v3-layer",
                                             "v2-lite-layer", NULL };

const char *const *mla_builtin_models(void) { return builtin_names; }

mla_status mla_config_preset(const char *name, mla_config *out)
{
    for (size_t i = 0; name && i < N_PRESETS; i++)
        if (!strcmp(name, presets[i].name)) {
            *out = *presets[i].cfg;
            return MLA_OK;
        }
    return mla_errorf(MLA_ERR_NOT_FOUND,
                      "config preset %s: expected tiny-v2-lite, tiny-v3, asym-v3, asym-v2-lite, v3-layer, deepseek-v3, "
                      "deepseek-v2-lite or kimi-k2", name ? name : "(null)");
}

int builtin_lookup(const char *name, mla_config *cfg, uint64_t *seed)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (presets[i].seed && !strcmp(name, presets[i].name)) {
            *cfg = *presets[i].cfg;
            *seed = presets[i].seed;
            return 0;
        }
    return -1;
}

static int ends_with(const char *s, const char *sfx)
{
    size_t n = strlen(s), k = strlen(sfx);
    return n >= k && !strcmp(s + n - k, sfx);
}

/* Nearest bf16 of a double, ties to even, in one rounding. The bit trick covers the normal bf16
 * range; everything else (tiny, huge, non-finite) goes through the general converter. Checked equal
 * to mla_store_f64(MLA_BF16) on 2e8 random doubles, exact ties included. */
static uint16_t bf16_from_double(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint64_t a = u & 0x7fffffffffffffffull;
    if (a < (897ull << 52) || a >= (1150ull << 52)) { /* |x| < 2^-126 or >= 2^127 */
        uint16_t b;
        mla_store_f64(MLA_BF16, &b, x);
        return b;
    }
    u += 0x0fffffffffffull + ((u >> 45) & 1); /* keep 7 of 52 mantissa bits, RNE */
    u &= ~0x1fffffffffffull;
    double r;
    memcpy(&r, &u, sizeof r);
    float f = (float)r; /* exact: 8 significant bits, f32 normal range */
    uint32_t fb;
    memcpy(&fb, &f, sizeof fb);
    return (uint16_t)(fb >> 16);
}

/* Values come in chunks of GEN_CHUNK elements, each chunk its own stream, so threads can share a
 * big tensor and the bytes do not depend on the thread count. */
#define GEN_CHUNK 65536
#define GEN_MAX_THREADS 16

typedef struct {
    uint64_t base;
    double scale, offset;
    mla_dtype dtype;
    void *data;
    int64_t n, n_chunks;
    int64_t next; /* next chunk to take (atomic) */
} gen_job;

static void gen_chunk(const gen_job *j, int64_t c)
{
    mla_rng_normal_state r = {mla_rng_stream(j->base, (uint64_t)c), 0, 0.0};
    int64_t i0 = c * GEN_CHUNK, i1 = i0 + GEN_CHUNK < j->n ? i0 + GEN_CHUNK : j->n;
    if (j->dtype == MLA_BF16) {
        uint16_t *d = j->data;
        for (int64_t i = i0; i < i1; i++) d[i] = bf16_from_double(j->offset + j->scale * mla_rng_normal(&r));
        return;
    }
    size_t es = mla_dtype_size(j->dtype);
    for (int64_t i = i0; i < i1; i++)
        mla_store_f64(j->dtype, (char *)j->data + (size_t)i * es, j->offset + j->scale * mla_rng_normal(&r));
}

static void *gen_worker(void *arg)
{
    gen_job *j = arg;
    for (;;) {
        int64_t c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (c >= j->n_chunks) return NULL;
        gen_chunk(j, c);
    }
}

mla_status builtin_generate(mla_model *m, model_entry *e)
{
    mla_tensor *t = &e->t;
    int64_t n = mla_tensor_numel(t);
    size_t es = mla_dtype_size(t->dtype);
    void *data = malloc(n ? (size_t)n * es : 1);
    if (!data) return mla_errorf(MLA_ERR_NOMEM, "%s: tensor %s: %lld elements", m->source, e->name, (long long)n);
    gen_job j = { .base = m->seed ^ mla_fnv1a_str(MLA_FNV1A_INIT, e->name), .scale = 1.0, .offset = 0.0,
                  .dtype = t->dtype,
                  .data = data, .n = n, .n_chunks = (n + GEN_CHUNK - 1) / GEN_CHUNK, .next = 0 };
    if (ends_with(e->name, "e_score_correction_bias")) j.scale = 0.05;
    else if (t->ndim == 1) {
        j.scale = 0.1; /* RMSNorm weights */
        j.offset = 1.0;
    } else if (strcmp(e->name, "model.embed_tokens.weight") != 0) {
        j.scale = 1.0 / sqrt((double)t->shape[1]); /* Linear [out, in] */
        /* Router gates 4x wider: trained routers are decisive, and with near-uniform random logits
         * bf16 noise would flip experts on most tokens instead of on the rare near-tie. */
        if (ends_with(e->name, "mlp.gate.weight")) j.scale *= 4.0;
    }
    pthread_t th[GEN_MAX_THREADS];
    int nt = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int want = j.n_chunks >= 16 ? (int)(ncpu < GEN_MAX_THREADS ? ncpu : GEN_MAX_THREADS) - 1 : 0;
    for (; nt < want; nt++)
        if (pthread_create(&th[nt], NULL, gen_worker, &j)) break; /* fewer threads is fine */
    gen_worker(&j);
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    e->owned = data;
    t->data = data;
    e->ready = 1;
    return MLA_OK;
}

mla_status builtin_open(const char *name, mla_model **out)
{
    mla_config cfg;
    uint64_t seed;
    if (builtin_lookup(name, &cfg, &seed)) return mla_errorf(MLA_ERR_NOT_FOUND, "%s: not a built-in model", name);
    mla_status st = mla_config_validate(&cfg, name);
    if (st) return st;
    name_list names;
    st = model_required_names(&cfg, &names);
    if (st) return st;
    mla_model *m = model_alloc(name);
    if (!m) {
        name_list_free(&names);
        return mla_errorf(MLA_ERR_NOMEM, "%s: model", name);
    }
    m->cfg = cfg;
    m->builtin = 1;
    m->seed = seed;
    m->entries = calloc((size_t)names.n, sizeof *m->entries);
    if (!m->entries) {
        name_list_free(&names);
        mla_model_free(m);
        return mla_errorf(MLA_ERR_NOMEM, "%s: %d tensor entries", name, names.n);
    }
    for (int i = 0; i < names.n; i++) {
        model_entry *e = &m->entries[i];
        e->name = names.v[i]; /* ownership moves to the model */
        names.v[i] = NULL;
        e->file = -1;
        m->n_entries++;
        int nd;
        int64_t shape[MLA_MAX_DIMS];
        mla_config_tensor_shape(&cfg, e->name, &nd, shape);
        mla_dtype dt = ends_with(e->name, "e_score_correction_bias") ? MLA_F32 : MLA_BF16;
        /* A view with no data yet: builtin_generate fills it on first request. */
        mla_tensor *v;
        st = mla_tensor_view(&v, dt, nd, shape, NULL, e->name);
        if (st) {
            name_list_free(&names);
            mla_model_free(m);
            return st;
        }
        e->t = *v;
        mla_tensor_free(v);
    }
    name_list_free(&names);
    *out = m;
    return MLA_OK;
}
