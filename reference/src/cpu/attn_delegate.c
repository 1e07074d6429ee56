/* attn_delegate.c: the attention core of a layer handed to an attn_op.h operator (ref_hook.h), so an
 * attention-only plugin runs inside the reference model. Per sequence, one operator call (batch 1):
 * the sequence's cached rows are copied into a contiguous pool in the operator's format with an
 * identity block table (rows past the sequence hold NaN, as the operator suites do); the operator's
 * f32 results are then rounded at the reference's own storage points (NUMERICS.md), so in bf16 and
 * fp8 profiles the hybrid sees the same inputs and rounding points as attention.c. */
#include "mla/dtype.h"
#include "mla/ref_hook.h"
#include "ref_internal.h"

#include <stdlib.h>
#include <string.h>

mla_kv_format mla_ref_attn_kv_format(mla_profile p)
{
    switch (p) {
    case MLA_PROFILE_FP64: return MLA_KV_F32;
    case MLA_PROFILE_FP8KV: return MLA_KV_FP8;
    case MLA_PROFILE_FP8DS: return MLA_KV_FP8_DS;
    default: return MLA_KV_BF16; /* bf16, fp8w: the latent is stored bf16-rounded */
    }
}

int ref_attn_delegate_supports(const mla_attn_ops *ops, mla_profile p)
{
    if (!ops || (unsigned)p >= MLA_PROFILE_COUNT) return 0;
    return ops->mqa && ops->mha && ops->supports(MLA_ATTN_FEAT_MQA, 0) && ops->supports(MLA_ATTN_FEAT_MHA, 0) &&
           ops->supports(MLA_ATTN_FEAT_KV_FORMAT, mla_ref_attn_kv_format(p));
}

/* Declined shapes are refused with the feature named (the profile check happened at open). */
static mla_status need(const ref_ctx *c, mla_attn_feature f, int64_t v, const char *what)
{
    if (c->attn_ops->supports(f, v)) return MLA_OK;
    return mla_errorf(MLA_ERR_UNSUPPORTED, "hybrid engine: attention operator %s declines %s = %lld",
                      c->attn_ops->name ? c->attn_ops->name : "?", what, (long long)v);
}

/* fnuz codes only in the fp8kv cache: cache.c packs fp8_ds_mla rows as e4m3fn whatever the kind. */
static int fnuz_codes(const ref_ctx *c)
{
    return c->opts.profile == MLA_PROFILE_FP8KV && c->opts.fp8_kind == MLA_FP8_FNUZ;
}

static mla_status check_shape(const ref_ctx *c)
{
    const mla_config *cf = c->cfg;
    mla_status st = need(c, MLA_ATTN_FEAT_NUM_HEADS, cf->num_attention_heads, "num_heads");
    if (!st) st = need(c, MLA_ATTN_FEAT_KV_LORA_RANK, cf->kv_lora_rank, "kv_lora_rank");
    if (!st) st = need(c, MLA_ATTN_FEAT_ROPE_DIM, cf->qk_rope_head_dim, "rope_dim");
    if (!st) st = need(c, MLA_ATTN_FEAT_PAGE_SIZE, c->opts.block_size, "page_size (block_size)");
    if (!st && fnuz_codes(c)) st = need(c, MLA_ATTN_FEAT_FP8_FNUZ, 1, "fp8 e4m3fnuz codes");
    return st;
}

/* The paged cache of one sequence's first S rows, in the operator's format. */
typedef struct pool {
    uint8_t *data;
    int32_t *table;
    mla_attn_cache kv;
} pool;

static void pool_free(pool *p)
{
    free(p->data);
    free(p->table);
    p->data = NULL;
    p->table = NULL;
}

static mla_status pool_build(const ref_ctx *c, int layer, int seq, int64_t S, pool *p)
{
    const mla_config *cf = c->cfg;
    int C = cf->kv_lora_rank, R = cf->qk_rope_head_dim, bs = c->opts.block_size;
    mla_kv_format f = mla_ref_attn_kv_format(c->opts.profile);
    size_t rb = mla_kv_row_bytes(f, C, R);
    int64_t nb = (S + bs - 1) / bs;
    memset(p, 0, sizeof *p);
    p->data = malloc((size_t)(nb * bs) * rb + 1);
    p->table = malloc((size_t)(nb + 1) * sizeof *p->table);
    double *row = malloc((size_t)(C + R) * sizeof(double));
    if (!p->data || !p->table || !row) {
        free(row);
        pool_free(p);
        return mla_errorf(MLA_ERR_NOMEM, "hybrid engine: cache pool of %lld rows", (long long)S);
    }
    memset(p->data, 0xFF, (size_t)(nb * bs) * rb + 1); /* NaN in bf16, f32, e4m3fn: unused rows */
    const ref_cache *k = &c->cache[layer];
    for (int64_t j = 0; j < S; j++) {
        uint8_t *dst = p->data + (size_t)j * rb;
        if (f == MLA_KV_FP8 || f == MLA_KV_FP8_DS) { /* the reference's own codes, bit for bit */
            int32_t pb = k->table[(int64_t)seq * k->blocks_per_seq + j / k->block_size];
            if (k->blocks[pb]) {
                memcpy(dst, k->blocks[pb] + (j % k->block_size) * k->row_bytes, rb);
                continue;
            }
        }
        ref_cache_read(c, layer, seq, j, row);
        for (int i = 0; i < C + R; i++) {
            if (f == MLA_KV_F32) {
                float v = (float)row[i];
                memcpy(dst + 4 * i, &v, 4);
            } else { /* bf16 profiles: already bf16-representable, the conversion is exact */
                uint16_t u = mla_f32_to_bf16((float)row[i]);
                memcpy(dst + 2 * i, &u, 2);
            }
        }
    }
    free(row);
    for (int64_t i = 0; i < nb; i++) p->table[i] = (int32_t)i;
    p->kv = (mla_attn_cache){
        .format = f,
        .fp8_fnuz = fnuz_codes(c),
        .data = p->data,
        .num_blocks = (int32_t)nb,
        .page_size = bs,
        .k_scale = (float)c->opts.kv_scale,
        .block_table = p->table,
        .max_blocks_per_seq = (int32_t)nb,
    };
    return MLA_OK;
}

static float *to_f32(const double *x, int64_t n)
{
    float *y = malloc((size_t)(n + 1) * sizeof(float));
    if (y)
        for (int64_t i = 0; i < n; i++) y[i] = (float)x[i];
    return y;
}

mla_status ref_attn_mqa_delegate(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n,
                                 const double *q, double *q_abs, double *core, double *lse)
{
    const mla_config *cf = c->cfg;
    int64_t H = cf->num_attention_heads, P = cf->qk_nope_head_dim, R = cf->qk_rope_head_dim;
    int64_t V = cf->v_head_dim, C = cf->kv_lora_rank, W = P + V, L = C + R;
    const double *kvb = c->layers[layer].kv_b;
    mla_status st = check_shape(c);
    if (!st && n > 1) st = need(c, MLA_ATTN_FEAT_MULTI_TOKEN_DECODE, n, "multi-token decode s_q");
    if (st || n == 0) return st;
    pool p;
    if ((st = pool_build(c, layer, seq, n_past + n, &p))) return st;
    double *qf = malloc((size_t)(n * H * L) * sizeof(double)); /* rows (t, h) */
    float *out = malloc((size_t)(n * H * C) * sizeof(float));
    float *lsef = malloc((size_t)(n * H) * sizeof(float));
    double *ol = malloc((size_t)C * sizeof(double));
    float *q32 = NULL;
    if (!qf || !out || !lsef || !ol) {
        st = mla_errorf(MLA_ERR_NOMEM, "hybrid engine: mqa layer %d", layer);
        goto done;
    }
    if ((st = ref_mqa_query(q_abs, qf, q, n, kvb, c->ad, &c->nm))) goto done; /* as the reference's own decode */
    if (!(q32 = to_f32(qf, n * H * L))) {
        st = mla_errorf(MLA_ERR_NOMEM, "hybrid engine: mqa query");
        goto done;
    }
    int32_t cu[2] = {0, (int32_t)n}, sl[1] = {(int32_t)(n_past + n)};
    mla_mqa_args a = {
        .batch = 1, .num_heads = (int32_t)H, .kv_lora_rank = (int32_t)C, .rope_dim = (int32_t)R,
        .total_q = (int32_t)n, .cu_seqlens_q = cu, .seq_lens = sl, .softmax_scale = c->faults.softmax_scale,
        .q = q32, .kv = p.kv, .out = out, .lse = lsef,
    };
    if ((st = c->attn_ops->mqa(&a))) goto done;
    for (int64_t i = 0; i < n * H; i++) {
        lse[i] = ref_rnd32(&c->nm, lsef[i]);
        for (int64_t d = 0; d < C; d++) ol[d] = ref_rnd(&c->nm, out[i * C + d]);
        int64_t h = i % H; /* o_latent[h] . W_UV[h]^T */
        ref_matmul_nt(ol, kvb + (h * W + P) * C, 1, C, V, core + i * V);
    }
    ref_rnd_vec(&c->nm, core, n * H * V);
done:
    pool_free(&p);
    free(qf); free(out); free(lsef); free(ol); free(q32);
    return st;
}

mla_status ref_attn_mha_delegate(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n,
                                 const double *q, const double *kv_c_new, const double *k_pe_new,
                                 double *core, double *lse)
{
    const mla_config *cf = c->cfg;
    int64_t H = cf->num_attention_heads, P = cf->qk_nope_head_dim, R = cf->qk_rope_head_dim;
    int64_t V = cf->v_head_dim, C = cf->kv_lora_rank, Dqk = P + R, W = P + V;
    mla_status st = check_shape(c);
    if (!st && n_past > 0) st = need(c, MLA_ATTN_FEAT_MHA_CONTEXT, n_past, "prefill with cached context");
    if (st || n == 0) return st;
    pool p;
    if ((st = pool_build(c, layer, seq, n_past + n, &p))) return st;
    float *q32 = to_f32(q, n * H * Dqk), *kc32 = to_f32(kv_c_new, n * C), *kp32 = to_f32(k_pe_new, n * R);
    float *w32 = to_f32(c->layers[layer].kv_b, H * W * C);
    float *out = malloc((size_t)(n * H * V) * sizeof(float));
    float *lsef = malloc((size_t)(n * H) * sizeof(float));
    if (!q32 || !kc32 || !kp32 || !w32 || !out || !lsef) {
        st = mla_errorf(MLA_ERR_NOMEM, "hybrid engine: mha layer %d", layer);
        goto done;
    }
    int32_t cu[2] = {0, (int32_t)n}, sl[1] = {(int32_t)(n_past + n)};
    mla_mha_args a = {
        .batch = 1, .num_heads = (int32_t)H, .kv_lora_rank = (int32_t)C, .rope_dim = (int32_t)R,
        .nope_dim = (int32_t)P, .v_dim = (int32_t)V, .total_q = (int32_t)n, .cu_seqlens_q = cu,
        .seq_lens = sl, .softmax_scale = c->faults.softmax_scale, .q = q32, .kv_c = kc32, .k_pe = kp32,
        .w_kv_b = w32, .kv = p.kv, .out = out, .lse = lsef,
    };
    if ((st = c->attn_ops->mha(&a))) goto done;
    for (int64_t i = 0; i < n * H * V; i++) core[i] = ref_rnd(&c->nm, out[i]);
    for (int64_t i = 0; i < n * H; i++) lse[i] = ref_rnd32(&c->nm, lsef[i]);
done:
    pool_free(&p);
    free(q32); free(kc32); free(kp32); free(w32); free(out); free(lsef);
    return st;
}
