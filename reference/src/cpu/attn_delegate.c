/* attn_delegate.c: the attention core of a layer handed to an attn_op.h operator (ref_hook.h), so an
 * attention-only plugin runs inside the reference model. Per sequence, one operator call (batch 1):
 * the sequence's cached rows are copied (through cache.c's API) into a contiguous pool in the
 * operator's format with an identity block table (rows past the sequence hold NaN, as the operator
 * suites do); the delegating ops take that pool, the weights, dims and numerics; the operator's
 * f32 results are then rounded at the reference's own storage points (NUMERICS.md), so in bf16 and
 * fp8 profiles the hybrid sees the same inputs and rounding points as attention.c. */
#include "mla/dtype.h"
#include "mla_ref/ref.h"
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
    /* a form without an entry is the reference's own (mla_ref_set_attn_ops_partial); a present one
     * must be supported */
    return (ops->mqa || ops->mha) && (!ops->mqa || ops->supports(MLA_ATTN_FEAT_MQA, 0)) &&
           (!ops->mha || ops->supports(MLA_ATTN_FEAT_MHA, 0)) &&
           ops->supports(MLA_ATTN_FEAT_KV_FORMAT, mla_ref_attn_kv_format(p));
}

/* Declined shapes are refused with the feature named (the profile check happened at open). */
static mla_status need(const mla_attn_ops *ops, mla_attn_feature f, int64_t v, const char *what)
{
    if (ops->supports(f, v)) return MLA_OK;
    return mla_errorf(MLA_ERR_UNSUPPORTED, "hybrid engine: attention operator %s declines %s = %lld",
                      ops->name ? ops->name : "?", what, (long long)v);
}

static mla_status check_shape(const mla_attn_ops *ops, ref_attn_dims d, const mla_attn_cache *kv)
{
    mla_status st = need(ops, MLA_ATTN_FEAT_NUM_HEADS, d.H, "num_heads");
    if (!st) st = need(ops, MLA_ATTN_FEAT_KV_LORA_RANK, d.C, "kv_lora_rank");
    if (!st) st = need(ops, MLA_ATTN_FEAT_ROPE_DIM, d.R, "rope_dim");
    if (!st) st = need(ops, MLA_ATTN_FEAT_PAGE_SIZE, kv->page_size, "page_size (block_size)");
    if (!st && kv->fp8_fnuz) st = need(ops, MLA_ATTN_FEAT_FP8_FNUZ, 1, "fp8 e4m3fnuz codes");
    return st;
}

void ref_attn_pool_free(ref_attn_pool *p)
{
    free(p->data);
    free(p->table);
    p->data = NULL;
    p->table = NULL;
}

mla_status ref_attn_pool_build(ref_attn_pool *p, const ref_ctx *c, int layer, int seq, int64_t S)
{
    const mla_config *cf = c->cfg;
    int C = cf->kv_lora_rank, R = cf->qk_rope_head_dim, bs = c->opts.block_size;
    mla_kv_format f = mla_ref_attn_kv_format(c->opts.profile);
    size_t rb = mla_kv_row_bytes(f, C, R);
    int64_t nb = (S + bs - 1) / bs;
    /* fnuz codes only in the fp8kv cache: cache.c packs fp8_ds_mla rows as e4m3fn whatever the kind */
    int fnuz = c->opts.profile == MLA_PROFILE_FP8KV && c->opts.fp8_kind == MLA_FP8_FNUZ;
    memset(p, 0, sizeof *p);
    p->data = malloc((size_t)(nb * bs) * rb + 1);
    p->table = malloc((size_t)(nb + 1) * sizeof *p->table);
    double *row = malloc((size_t)(C + R) * sizeof(double));
    if (!p->data || !p->table || !row) {
        free(row);
        ref_attn_pool_free(p);
        return mla_errorf(MLA_ERR_NOMEM, "hybrid engine: cache pool of %lld rows", (long long)S);
    }
    memset(p->data, 0xFF, (size_t)(nb * bs) * rb + 1); /* NaN in bf16, f32, e4m3fn: unused rows */
    for (int64_t j = 0; j < S; j++) {
        uint8_t *dst = p->data + (size_t)j * rb;
        const uint8_t *raw = (f == MLA_KV_FP8 || f == MLA_KV_FP8_DS) ? ref_cache_raw_row(c, layer, seq, j) : NULL;
        if (raw) { /* the reference's own codes, bit for bit */
            memcpy(dst, raw, rb);
            continue;
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
        .fp8_fnuz = fnuz,
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

mla_status ref_attn_mqa_delegate(double *core, double *lse, double *q_abs, const double *q, int64_t n_past,
                                 int64_t n, const mla_attn_cache *kv, const double *kv_b, ref_attn_dims d,
                                 const ref_numerics *nm, const ref_faults *f, const mla_attn_ops *ops)
{
    int64_t H = d.H, P = d.P, R = d.R, V = d.V, C = d.C, W = P + V, L = C + R;
    mla_status st = check_shape(ops, d, kv);
    if (!st && n > 1) st = need(ops, MLA_ATTN_FEAT_MULTI_TOKEN_DECODE, n, "multi-token decode s_q");
    if (st || n == 0) return st;
    double *qf = malloc((size_t)(n * H * L) * sizeof(double)); /* rows (t, h) */
    float *out = malloc((size_t)(n * H * C) * sizeof(float));
    float *lsef = malloc((size_t)(n * H) * sizeof(float));
    double *ol = malloc((size_t)C * sizeof(double));
    float *q32 = NULL;
    if (!qf || !out || !lsef || !ol) {
        st = mla_errorf(MLA_ERR_NOMEM, "hybrid engine: mqa buffers of %lld tokens", (long long)n);
        goto done;
    }
    if ((st = ref_mqa_query(q_abs, qf, q, n, kv_b, d, nm))) goto done; /* as the reference's own decode */
    if (!(q32 = to_f32(qf, n * H * L))) {
        st = mla_errorf(MLA_ERR_NOMEM, "hybrid engine: mqa query");
        goto done;
    }
    int32_t cu[2] = {0, (int32_t)n}, sl[1] = {(int32_t)(n_past + n)};
    mla_mqa_args a = {
        .batch = 1, .num_heads = (int32_t)H, .kv_lora_rank = (int32_t)C, .rope_dim = (int32_t)R,
        .total_q = (int32_t)n, .cu_seqlens_q = cu, .seq_lens = sl, .softmax_scale = f->softmax_scale,
        .q = q32, .kv = *kv, .out = out, .lse = lsef,
    };
    if ((st = ops->mqa(&a))) goto done;
    for (int64_t i = 0; i < n * H; i++) {
        lse[i] = ref_rnd32(nm, lsef[i]);
        for (int64_t k = 0; k < C; k++) ol[k] = ref_rnd(nm, out[i * C + k]);
        int64_t h = i % H; /* o_latent[h] . W_UV[h]^T */
        ref_matmul_nt(ol, kv_b + (h * W + P) * C, 1, C, V, core + i * V);
    }
    ref_rnd_vec(nm, core, n * H * V);
done:
    free(qf); free(out); free(lsef); free(ol); free(q32);
    return st;
}

mla_status ref_attn_mha_delegate(double *core, double *lse, const double *q, const double *kv_c_new,
                                 const double *k_pe_new, int64_t n_past, int64_t n, const mla_attn_cache *kv,
                                 const double *kv_b, ref_attn_dims d, const ref_numerics *nm, const ref_faults *f,
                                 const mla_attn_ops *ops)
{
    int64_t H = d.H, P = d.P, R = d.R, V = d.V, C = d.C, Dqk = P + R, W = P + V;
    mla_status st = check_shape(ops, d, kv);
    if (!st && n_past > 0) st = need(ops, MLA_ATTN_FEAT_MHA_CONTEXT, n_past, "prefill with cached context");
    if (st || n == 0) return st;
    float *q32 = to_f32(q, n * H * Dqk), *kc32 = to_f32(kv_c_new, n * C), *kp32 = to_f32(k_pe_new, n * R);
    float *w32 = to_f32(kv_b, H * W * C);
    float *out = malloc((size_t)(n * H * V) * sizeof(float));
    float *lsef = malloc((size_t)(n * H) * sizeof(float));
    if (!q32 || !kc32 || !kp32 || !w32 || !out || !lsef) {
        st = mla_errorf(MLA_ERR_NOMEM, "hybrid engine: mha buffers of %lld tokens", (long long)n);
        goto done;
    }
    int32_t cu[2] = {0, (int32_t)n}, sl[1] = {(int32_t)(n_past + n)};
    mla_mha_args a = {
        .batch = 1, .num_heads = (int32_t)H, .kv_lora_rank = (int32_t)C, .rope_dim = (int32_t)R,
        .nope_dim = (int32_t)P, .v_dim = (int32_t)V, .total_q = (int32_t)n, .cu_seqlens_q = cu,
        .seq_lens = sl, .softmax_scale = f->softmax_scale, .q = q32, .kv_c = kc32, .k_pe = kp32,
        .w_kv_b = w32, .kv = *kv, .out = out, .lse = lsef,
    };
    if ((st = ops->mha(&a))) goto done;
    for (int64_t i = 0; i < n * H * V; i++) core[i] = ref_rnd(nm, out[i]);
    for (int64_t i = 0; i < n * H; i++) lse[i] = ref_rnd32(nm, lsef[i]);
done:
    free(q32); free(kc32); free(kp32); free(w32); free(out); free(lsef);
    return st;
}
