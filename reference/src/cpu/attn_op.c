/* attn_op.c: the reference attention operator of attn_op.h, in f64: the oracle external kernels are
 * checked against at operator level. Unlike attention.c it owns no context: everything comes in the
 * args (queries, the paged cache, block tables, scales), every argument is validated first, and
 * MHA attends to context + new tokens in one softmax (the f64 result of any split/merge order).
 * Matrix products go through ref_matmul_* (OpenBLAS dgemm, f64); softmax is scalar. */
#include "mla/attn_op.h"
#include "mla/dtype.h"
#include "mla/kv.h"
#include "mla/quant.h"
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- validation ---------------------------------------------------------------------------- */

static mla_status check_varlen(const char *who, int32_t B, int32_t T, const int32_t *cu,
                               const int32_t *seq_lens)
{
    if (B < 0) return mla_errorf(MLA_ERR_INVALID, "%s: field batch = %d: expected >= 0", who, B);
    if (!cu || !seq_lens)
        return mla_errorf(MLA_ERR_INVALID, "%s: field %s is NULL", who, cu ? "seq_lens" : "cu_seqlens_q");
    if (cu[0] != 0) return mla_errorf(MLA_ERR_INVALID, "%s: field cu_seqlens_q[0] = %d: expected 0", who, cu[0]);
    for (int32_t b = 0; b < B; b++) {
        int32_t n = cu[b + 1] - cu[b];
        if (n < 0)
            return mla_errorf(MLA_ERR_INVALID, "%s: field cu_seqlens_q[%d] = %d < cu_seqlens_q[%d] = %d: "
                              "expected non-decreasing", who, b + 1, cu[b + 1], b, cu[b]);
        if (seq_lens[b] < n)
            return mla_errorf(MLA_ERR_INVALID, "%s: field seq_lens[%d] = %d: expected >= s_q = %d", who, b,
                              seq_lens[b], n);
    }
    if (cu[B] != T)
        return mla_errorf(MLA_ERR_INVALID, "%s: field total_q = %d: expected cu_seqlens_q[%d] = %d", who, T,
                          B, cu[B]);
    return MLA_OK;
}

static mla_status check_cache(const char *who, const mla_attn_cache *kv, int32_t B, const int32_t *seq_lens,
                              int C)
{
    if ((unsigned)kv->format >= MLA_KV_FORMAT_COUNT)
        return mla_errorf(MLA_ERR_INVALID, "%s: field kv.format = %d: expected 0..%d", who, (int)kv->format,
                          MLA_KV_FORMAT_COUNT - 1);
    if (kv->format == MLA_KV_FP8_DS && C % MLA_DS_TILE)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "%s: kv.format fp8ds needs kv_lora_rank %% %d == 0, got %d", who,
                          MLA_DS_TILE, C);
    if (kv->page_size < 1 || kv->num_blocks < 0 || kv->max_blocks_per_seq < 0)
        return mla_errorf(MLA_ERR_INVALID, "%s: field kv.page_size/num_blocks/max_blocks_per_seq = %d/%d/%d: "
                          "expected positive", who, kv->page_size, kv->num_blocks, kv->max_blocks_per_seq);
    if (kv->format == MLA_KV_FP8 && !(kv->k_scale > 0 && isfinite(kv->k_scale)))
        return mla_errorf(MLA_ERR_INVALID, "%s: field kv.k_scale = %g: expected finite > 0", who, kv->k_scale);
    for (int32_t b = 0; b < B; b++) {
        int64_t nb = ((int64_t)seq_lens[b] + kv->page_size - 1) / kv->page_size;
        if (nb > kv->max_blocks_per_seq)
            return mla_errorf(MLA_ERR_INVALID, "%s: field seq_lens[%d] = %d needs %lld blocks: expected <= "
                              "kv.max_blocks_per_seq = %d", who, b, seq_lens[b], (long long)nb,
                              kv->max_blocks_per_seq);
        if (nb && (!kv->data || !kv->block_table))
            return mla_errorf(MLA_ERR_INVALID, "%s: field kv.%s is NULL", who, kv->data ? "block_table" : "data");
        for (int64_t i = 0; i < nb; i++) {
            int32_t p = kv->block_table[(int64_t)b * kv->max_blocks_per_seq + i];
            if (p < 0 || p >= kv->num_blocks)
                return mla_errorf(MLA_ERR_INVALID, "%s: field kv.block_table[%d][%lld] = %d: expected 0..%d", who,
                                  b, (long long)i, p, kv->num_blocks - 1);
        }
    }
    return MLA_OK;
}

/* ---- cache rows ---------------------------------------------------------------------------- */

/* Token j of sequence b, dequantized through mla/kv.h: row[C+R]. fp8 widens in f32 as GPU readers do. */
static void op_kv_row(const mla_attn_cache *kv, int C, int R, int32_t b, int64_t j, double *row)
{
    const mla_kv_codec k = {.format = kv->format, .fp8_fnuz = kv->fp8_fnuz, .c = C, .r = R, .k_scale = kv->k_scale};
    size_t rb = mla_kv_row_bytes(kv->format, C, R);
    int32_t p = kv->block_table[(int64_t)b * kv->max_blocks_per_seq + j / kv->page_size];
    const uint8_t *src = (const uint8_t *)kv->data + ((int64_t)p * kv->page_size + j % kv->page_size) * rb;
    mla_kv_load_row_f64(k, src, row);
}

/* ---- MQA ----------------------------------------------------------------------------------- */

static mla_status ref_op_mqa(const mla_mqa_args *a)
{
    const char *who = "attn op mqa";
    if (!a) return mla_errorf(MLA_ERR_INVALID, "%s: args is NULL", who);
    int64_t H = a->num_heads, C = a->kv_lora_rank, R = a->rope_dim, L = C + R;
    if (H < 1 || C < 1 || R < 0)
        return mla_errorf(MLA_ERR_INVALID, "%s: fields num_heads/kv_lora_rank/rope_dim = %lld/%lld/%lld: "
                          "expected positive", who, (long long)H, (long long)C, (long long)R);
    mla_status st = check_varlen(who, a->batch, a->total_q, a->cu_seqlens_q, a->seq_lens);
    if (!st) st = check_cache(who, &a->kv, a->batch, a->seq_lens, (int)C);
    if (st) return st;
    if (a->total_q > 0 && (!a->q || !a->out || !a->lse))
        return mla_errorf(MLA_ERR_INVALID, "%s: field %s is NULL", who, !a->q ? "q" : !a->out ? "out" : "lse");
    int64_t Smax = 0;
    for (int32_t b = 0; b < a->batch; b++) Smax = a->seq_lens[b] > Smax ? a->seq_lens[b] : Smax;

    double *kc = malloc((size_t)(Smax * L + 1) * sizeof(double));
    double *vc = malloc((size_t)(Smax * C + 1) * sizeof(double));
    double *qh = malloc((size_t)(H * L) * sizeof(double));
    double *s = malloc((size_t)(H * Smax + 1) * sizeof(double));
    double *o = malloc((size_t)(H * C) * sizeof(double));
    double *lse = malloc((size_t)H * sizeof(double));
    int64_t *vis = malloc((size_t)H * sizeof(int64_t));
    if (!kc || !vc || !qh || !s || !o || !lse || !vis) {
        st = mla_errorf(MLA_ERR_NOMEM, "%s: %lld keys x %lld", who, (long long)Smax, (long long)L);
        goto done;
    }
    for (int32_t b = 0; b < a->batch; b++) {
        int64_t S = a->seq_lens[b], n = a->cu_seqlens_q[b + 1] - a->cu_seqlens_q[b];
        if (n == 0) continue;
        for (int64_t j = 0; j < S; j++) {
            op_kv_row(&a->kv, (int)C, (int)R, b, j, kc + j * L);
            memcpy(vc + j * C, kc + j * L, (size_t)C * sizeof(double));
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t t = a->cu_seqlens_q[b] + i;
            for (int64_t k = 0; k < H * L; k++) qh[k] = a->q[t * H * L + k];
            ref_matmul_nt(qh, kc, H, L, S, s); /* [H, S] */
            for (int64_t k = 0; k < H * S; k++) s[k] *= a->softmax_scale;
            for (int64_t h = 0; h < H; h++) vis[h] = S - n + i + 1;
            ref_softmax_rows(s, lse, vis, H, S);
            if (S > 0) ref_matmul_nn(s, vc, H, S, C, o); /* [H, C] */
            for (int64_t k = 0; k < H * C; k++) a->out[t * H * C + k] = S > 0 ? (float)o[k] : 0.0f;
            for (int64_t h = 0; h < H; h++) a->lse[t * H + h] = (float)lse[h];
        }
    }
done:
    free(kc); free(vc); free(qh); free(s); free(o); free(lse); free(vis);
    return st;
}

/* ---- MHA ----------------------------------------------------------------------------------- */

static mla_status ref_op_mha(const mla_mha_args *a)
{
    const char *who = "attn op mha";
    if (!a) return mla_errorf(MLA_ERR_INVALID, "%s: args is NULL", who);
    int64_t H = a->num_heads, C = a->kv_lora_rank, R = a->rope_dim, P = a->nope_dim, V = a->v_dim;
    int64_t Dqk = P + R, W = P + V;
    if (H < 1 || C < 1 || R < 0 || P < 0 || V < 1)
        return mla_errorf(MLA_ERR_INVALID, "%s: fields num_heads/kv_lora_rank/rope_dim/nope_dim/v_dim = "
                          "%lld/%lld/%lld/%lld/%lld: expected positive", who, (long long)H, (long long)C,
                          (long long)R, (long long)P, (long long)V);
    mla_status st = check_varlen(who, a->batch, a->total_q, a->cu_seqlens_q, a->seq_lens);
    if (!st) st = check_cache(who, &a->kv, a->batch, a->seq_lens, (int)C);
    if (st) return st;
    if (a->total_q > 0 && (!a->q || !a->kv_c || !a->k_pe || !a->w_kv_b || !a->out || !a->lse))
        return mla_errorf(MLA_ERR_INVALID, "%s: a field of q, kv_c, k_pe, w_kv_b, out, lse is NULL", who);
    int64_t Smax = 0, Nmax = 0;
    for (int32_t b = 0; b < a->batch; b++) {
        int64_t n = a->cu_seqlens_q[b + 1] - a->cu_seqlens_q[b];
        Smax = a->seq_lens[b] > Smax ? a->seq_lens[b] : Smax;
        Nmax = n > Nmax ? n : Nmax;
    }
    double *lat = malloc((size_t)(Smax * C + 1) * sizeof(double));  /* [S, C] keys' latent */
    double *pe = malloc((size_t)(Smax * R + 1) * sizeof(double));   /* [S, R] */
    double *wh = malloc((size_t)(W * C) * sizeof(double));          /* W_kvb rows of one head */
    double *kvh = malloc((size_t)(Smax * W + 1) * sizeof(double));  /* [S, P+V] expanded */
    double *kh = malloc((size_t)(Smax * Dqk + 1) * sizeof(double));
    double *vh = malloc((size_t)(Smax * V + 1) * sizeof(double));
    double *qh = malloc((size_t)(Nmax * Dqk + 1) * sizeof(double));
    double *s = malloc((size_t)(Nmax * Smax + 1) * sizeof(double));
    double *o = malloc((size_t)(Nmax * V + 1) * sizeof(double));
    double *lse = malloc((size_t)(Nmax + 1) * sizeof(double));
    int64_t *vis = malloc((size_t)(Nmax + 1) * sizeof(int64_t));
    double *row = malloc((size_t)(C + R) * sizeof(double));
    if (!lat || !pe || !wh || !kvh || !kh || !vh || !qh || !s || !o || !lse || !vis || !row) {
        st = mla_errorf(MLA_ERR_NOMEM, "%s: %lld keys", who, (long long)Smax);
        goto done;
    }
    for (int32_t b = 0; b < a->batch; b++) {
        int64_t S = a->seq_lens[b], t0 = a->cu_seqlens_q[b], n = a->cu_seqlens_q[b + 1] - t0, ctx = S - n;
        if (n == 0) continue;
        for (int64_t j = 0; j < ctx; j++) { /* context from the cache */
            op_kv_row(&a->kv, (int)C, (int)R, b, j, row);
            memcpy(lat + j * C, row, (size_t)C * sizeof(double));
            memcpy(pe + j * R, row + C, (size_t)R * sizeof(double));
        }
        for (int64_t i = 0; i < n; i++) { /* new tokens as given */
            for (int64_t k = 0; k < C; k++) lat[(ctx + i) * C + k] = a->kv_c[(t0 + i) * C + k];
            for (int64_t k = 0; k < R; k++) pe[(ctx + i) * R + k] = a->k_pe[(t0 + i) * R + k];
        }
        for (int64_t i = 0; i < n; i++) vis[i] = ctx + i + 1;
        for (int64_t h = 0; h < H; h++) {
            for (int64_t k = 0; k < W * C; k++) wh[k] = a->w_kv_b[h * W * C + k];
            ref_matmul_nt(lat, wh, S, C, W, kvh); /* [S, P+V] = lat . W_h^T */
            for (int64_t j = 0; j < S; j++) {
                memcpy(kh + j * Dqk, kvh + j * W, (size_t)P * sizeof(double));
                memcpy(kh + j * Dqk + P, pe + j * R, (size_t)R * sizeof(double));
                memcpy(vh + j * V, kvh + j * W + P, (size_t)V * sizeof(double));
            }
            for (int64_t i = 0; i < n; i++)
                for (int64_t k = 0; k < Dqk; k++) qh[i * Dqk + k] = a->q[((t0 + i) * H + h) * Dqk + k];
            ref_matmul_nt(qh, kh, n, Dqk, S, s); /* [n, S] */
            for (int64_t k = 0; k < n * S; k++) s[k] *= a->softmax_scale;
            ref_softmax_rows(s, lse, vis, n, S);
            ref_matmul_nn(s, vh, n, S, V, o); /* [n, V] */
            for (int64_t i = 0; i < n; i++) {
                for (int64_t d = 0; d < V; d++) a->out[((t0 + i) * H + h) * V + d] = (float)o[i * V + d];
                a->lse[(t0 + i) * H + h] = (float)lse[i];
            }
        }
    }
done:
    free(lat); free(pe); free(wh); free(kvh); free(kh); free(vh); free(qh); free(s); free(o);
    free(lse); free(vis); free(row);
    return st;
}

static int ref_op_supports(mla_attn_feature f, int64_t value)
{
    switch (f) {
    case MLA_ATTN_FEAT_KV_FORMAT: return value >= 0 && value < MLA_KV_FORMAT_COUNT;
    case MLA_ATTN_FEAT_PAGE_SIZE:
    case MLA_ATTN_FEAT_NUM_HEADS:
    case MLA_ATTN_FEAT_KV_LORA_RANK: return value >= 1;
    case MLA_ATTN_FEAT_ROPE_DIM: return value >= 0;
    default: return (unsigned)f < MLA_ATTN_FEAT_COUNT;
    }
}

static const mla_attn_ops ref_attn_ops = {
    .abi_version = MLA_ATTN_ABI_VERSION,
    .name = "ref-attn-f64",
    .supports = ref_op_supports,
    .mqa = ref_op_mqa,
    .mha = ref_op_mha,
};

const mla_attn_ops *mla_ref_attn_ops(void) { return &ref_attn_ops; }
