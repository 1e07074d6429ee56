/* attention.c: MLA attention in both forms (mla-spec.md §b.2, §b.3) for one sequence.
 * Naive (MHA): keys/values expanded from kv_c with kv_b_proj, context and new tokens attended
 * separately and merged by log-sum-exp, as chunked prefill over a cache does.
 * Absorbed (MQA): q_nope folded through W_UK, attention over the 576-wide latent rows, W_UV after. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REF_QBLOCK 256 /* query rows per score block: bounds memory at long kv lengths */

double ref_softmax_scale(const ref_ctx *c)
{
    if (c->opts.faults & MLA_FAULT(MLA_FAULT_NO_MSCALE))
        return 1.0 / sqrt((double)(c->cfg->qk_nope_head_dim + c->cfg->qk_rope_head_dim));
    return mla_config_softmax_scale(c->cfg);
}

static int ref_mask_slack(const ref_ctx *c)
{
    return (c->opts.faults & MLA_FAULT(MLA_FAULT_CAUSAL_OFF_BY_ONE)) ? 1 : 0;
}

/* Row-wise softmax of s[m,nk] in place over the first vis[i] entries (the rest get p = 0).
 * lse[i] = ln sum exp(s). */
static void softmax_rows(double *s, int64_t m, int64_t nk, const int64_t *vis, double *lse)
{
    for (int64_t i = 0; i < m; i++) {
        double *r = s + i * nk;
        int64_t v = vis[i] < nk ? vis[i] : nk;
        if (v <= 0) {
            memset(r, 0, (size_t)nk * sizeof(double));
            lse[i] = -INFINITY;
            continue;
        }
        double mx = r[0];
        for (int64_t j = 1; j < v; j++)
            if (r[j] > mx) mx = r[j];
        double sum = 0.0;
        for (int64_t j = 0; j < v; j++) {
            r[j] = exp(r[j] - mx);
            sum += r[j];
        }
        for (int64_t j = 0; j < v; j++) r[j] /= sum;
        for (int64_t j = v; j < nk; j++) r[j] = 0.0;
        lse[i] = mx + log(sum);
    }
}

/* One attention part for head-major gathered operands:
 * q[n,dq], k[nk,dq], v[nk,dv]; query i sees keys j < vis_base + i + 1 (causal) or all (vis_base < 0).
 * o[n,dv], lse[n]. */
static void attn_part(const double *q, const double *k, const double *v, int64_t n, int64_t nk,
                      int64_t dq, int64_t dv, double scale, int64_t vis_base, int slack, double *o,
                      double *lse)
{
    if (nk == 0) {
        memset(o, 0, (size_t)(n * dv) * sizeof(double));
        for (int64_t i = 0; i < n; i++) lse[i] = -INFINITY;
        return;
    }
    double *s = malloc((size_t)(REF_QBLOCK * nk) * sizeof(double));
    int64_t *vis = malloc(REF_QBLOCK * sizeof(int64_t));
    for (int64_t i0 = 0; i0 < n; i0 += REF_QBLOCK) {
        int64_t m = n - i0 < REF_QBLOCK ? n - i0 : REF_QBLOCK;
        /* causal: no query of this block sees keys at or past vis_base + i0 + m + slack */
        int64_t kb = vis_base < 0 ? nk : vis_base + i0 + m + slack;
        if (kb > nk) kb = nk;
        ref_matmul_nt(q + i0 * dq, k, m, dq, kb, s);
        for (int64_t i = 0; i < m * kb; i++) s[i] *= scale;
        for (int64_t i = 0; i < m; i++) vis[i] = vis_base < 0 ? nk : vis_base + i0 + i + 1 + slack;
        softmax_rows(s, m, kb, vis, lse + i0);
        ref_matmul_nn(s, v, m, kb, dv, o + i0 * dv);
    }
    free(s);
    free(vis);
}

/* LSE merge of two partial results (mla-spec.md §g.13); -inf parts contribute nothing. */
static void lse_merge(const ref_ctx *c, double *oa, double *la, const double *ob, const double *lb,
                      int64_t dv)
{
    double a = *la, b = *lb;
    if (c->opts.faults & MLA_FAULT(MLA_FAULT_LSE_BF16)) {
        a = mla_round_bf16(a);
        b = mla_round_bf16(b);
    }
    if (a == -INFINITY && b == -INFINITY) return;
    double m = a > b ? a : b;
    double wa = exp(a - m), wb = exp(b - m), den = wa + wb;
    double fa = wa / den, fb = wb / den;
    for (int64_t d = 0; d < dv; d++) oa[d] = ref_rnd(c, oa[d] * fa + ob[d] * fb);
    *la = ref_rnd32(c, log(den) + m);
}

/* Shared inputs of the per-head tasks of ref_attn_mha. */
typedef struct {
    const ref_ctx *c;
    int64_t n_past, n, H, P, R, V, Dqk, W;
    const double *q, *k_pe_new, *ctx_pe, *kv_ctx, *kv_new;
    double scale;
    int slack;
    double *core, *lse;
    int failed;
} mha_job;

/* One head: attention over the new tokens (causal), then over the context, merged by LSE. */
static void mha_head(void *arg, int64_t h)
{
    mha_job *J = arg;
    const ref_ctx *c = J->c;
    int64_t n = J->n, n_past = J->n_past, H = J->H, P = J->P, R = J->R, V = J->V, Dqk = J->Dqk, W = J->W;
    int64_t nmax = n_past > n ? n_past : n;
    double *qh = calloc((size_t)(n * Dqk + 1), sizeof(double));
    double *kh = calloc((size_t)(nmax * Dqk + 1), sizeof(double));
    double *vh = calloc((size_t)(nmax * V + 1), sizeof(double));
    double *oa = malloc((size_t)(n * V + 1) * sizeof(double));
    double *ob = malloc((size_t)(n * V + 1) * sizeof(double));
    double *la = malloc((size_t)(n + 1) * sizeof(double));
    double *lb = malloc((size_t)(n + 1) * sizeof(double));
    if (!qh || !kh || !vh || !oa || !ob || !la || !lb) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED); /* tasks run on several threads */
        goto done;
    }
    for (int64_t i = 0; i < n; i++) memcpy(qh + i * Dqk, J->q + (i * H + h) * Dqk, (size_t)Dqk * sizeof(double));
    for (int64_t j = 0; j < n; j++) { /* new tokens, causal */
        memcpy(kh + j * Dqk, J->kv_new + j * H * W + h * W, (size_t)P * sizeof(double));
        memcpy(kh + j * Dqk + P, J->k_pe_new + j * R, (size_t)R * sizeof(double));
        memcpy(vh + j * V, J->kv_new + j * H * W + h * W + P, (size_t)V * sizeof(double));
    }
    attn_part(qh, kh, vh, n, n, Dqk, V, J->scale, 0, J->slack, oa, la);
    if (n_past > 0) {
        for (int64_t i = 0; i < n * V; i++) oa[i] = ref_rnd(c, oa[i]);
        for (int64_t i = 0; i < n; i++) la[i] = ref_rnd32(c, la[i]);
        for (int64_t j = 0; j < n_past; j++) {
            memcpy(kh + j * Dqk, J->kv_ctx + j * H * W + h * W, (size_t)P * sizeof(double));
            memcpy(kh + j * Dqk + P, J->ctx_pe + j * R, (size_t)R * sizeof(double));
            memcpy(vh + j * V, J->kv_ctx + j * H * W + h * W + P, (size_t)V * sizeof(double));
        }
        attn_part(qh, kh, vh, n, n_past, Dqk, V, J->scale, -1, 0, ob, lb);
        for (int64_t i = 0; i < n * V; i++) ob[i] = ref_rnd(c, ob[i]);
        for (int64_t i = 0; i < n; i++) {
            lb[i] = ref_rnd32(c, lb[i]);
            lse_merge(c, oa + i * V, la + i, ob + i * V, lb + i, V);
        }
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t d = 0; d < V; d++) J->core[(i * H + h) * V + d] = ref_rnd(c, oa[i * V + d]);
        J->lse[i * H + h] = ref_rnd32(c, la[i]);
    }
done:
    free(qh); free(kh); free(vh); free(oa); free(ob); free(la); free(lb);
}

mla_status ref_attn_mha(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n, const double *q,
                        const double *kv_c_new, const double *k_pe_new, double *core, double *lse)
{
    const mla_config *cf = c->cfg;
    int64_t H = cf->num_attention_heads, P = cf->qk_nope_head_dim, R = cf->qk_rope_head_dim;
    int64_t V = cf->v_head_dim, C = cf->kv_lora_rank, W = P + V;
    const double *kvb = c->layers[layer].kv_b;

    /* context rows from the cache (dequantized), new rows fresh */
    double *ctx_c = malloc((size_t)(n_past * C + 1) * sizeof(double));
    double *ctx_pe = malloc((size_t)(n_past * R + 1) * sizeof(double));
    double *row = malloc((size_t)(C + R) * sizeof(double));
    double *kv_ctx = malloc((size_t)(n_past * H * W + 1) * sizeof(double));
    double *kv_new = malloc((size_t)(n * H * W + 1) * sizeof(double));
    mla_status st = MLA_OK;
    if (!ctx_c || !ctx_pe || !row || !kv_ctx || !kv_new) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference attention (layer %d): %lld context rows", layer, (long long)n_past);
        goto done;
    }
    for (int64_t j = 0; j < n_past; j++) {
        ref_cache_read(c, layer, seq, j, row);
        memcpy(ctx_c + j * C, row, (size_t)C * sizeof(double));
        memcpy(ctx_pe + j * R, row + C, (size_t)R * sizeof(double));
    }
    ref_linear(c, ctx_c, kvb, n_past, C, H * W, 0, kv_ctx);
    ref_linear(c, kv_c_new, kvb, n, C, H * W, 0, kv_new);
    mha_job J = {.c = c, .n_past = n_past, .n = n, .H = H, .P = P, .R = R, .V = V, .Dqk = P + cf->qk_rope_head_dim,
                 .W = W, .q = q, .k_pe_new = k_pe_new, .ctx_pe = ctx_pe, .kv_ctx = kv_ctx, .kv_new = kv_new,
                 .scale = ref_softmax_scale(c), .slack = ref_mask_slack(c), .core = core, .lse = lse};
    ref_parallel_for(H, mha_head, &J);
    if (J.failed)
        st = mla_errorf(MLA_ERR_NOMEM, "reference attention (layer %d): per-head buffers for %lld tokens", layer,
                        (long long)(n_past + n));
done:
    free(ctx_c); free(ctx_pe); free(row); free(kv_ctx); free(kv_new);
    return st;
}

mla_status ref_mqa_query(const ref_ctx *c, int layer, int64_t n, const double *q, double *q_abs, double *qf)
{
    const mla_config *cf = c->cfg;
    int64_t H = cf->num_attention_heads, P = cf->qk_nope_head_dim, R = cf->qk_rope_head_dim;
    int64_t V = cf->v_head_dim, C = cf->kv_lora_rank, Dqk = P + R, W = P + V, L = C + R;
    const double *kvb = c->layers[layer].kv_b;
    double *qn = malloc((size_t)(n * P + 1) * sizeof(double));
    double *qa = malloc((size_t)(n * C + 1) * sizeof(double));
    if (!qn || !qa) {
        free(qn);
        free(qa);
        return mla_errorf(MLA_ERR_NOMEM, "reference attention (layer %d): decode query of %lld tokens", layer,
                          (long long)n);
    }
    for (int64_t h = 0; h < H; h++) {
        for (int64_t t = 0; t < n; t++) memcpy(qn + t * P, q + (t * H + h) * Dqk, (size_t)P * sizeof(double));
        ref_matmul_nn(qn, kvb + h * W * C, n, P, C, qa); /* q_nope[h] . W_UK[h] */
        for (int64_t t = 0; t < n; t++) {
            double *dst = qf + (t * H + h) * L;
            for (int64_t d = 0; d < C; d++) q_abs[(t * H + h) * C + d] = dst[d] = ref_rnd(c, qa[t * C + d]);
            memcpy(dst + C, q + (t * H + h) * Dqk + P, (size_t)R * sizeof(double));
        }
    }
    free(qn);
    free(qa);
    /* [q_absorbed | q_pe] quantized to fp8 and back, when the profile or a fault says so */
    int fault = (c->opts.faults & MLA_FAULT(MLA_FAULT_FP8_Q_SATURATION)) != 0;
    int want = c->opts.profile == MLA_PROFILE_FP8KV && c->opts.fp8_query;
    if (!fault && !want) return MLA_OK;
    mla_dtype ty = (want && c->opts.fp8_kind == MLA_FP8_FNUZ) ? MLA_E4M3FNUZ : MLA_E4M3FN;
    float s = want ? (float)c->opts.q_scale : 1.0f;
    for (int64_t i = 0; i < n * H * L; i++)
        qf[i] = (double)(float)((double)mla_fp8_decode(ty, mla_fp8_encode(ty, (float)qf[i] / s)) * s);
    return MLA_OK;
}

mla_status ref_attn_mqa(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n, const double *q,
                        double *q_abs, double *core, double *lse)
{
    const mla_config *cf = c->cfg;
    int64_t H = cf->num_attention_heads, P = cf->qk_nope_head_dim, R = cf->qk_rope_head_dim;
    int64_t V = cf->v_head_dim, C = cf->kv_lora_rank, W = P + V, L = C + R;
    int64_t S = n_past + n;
    const double *kvb = c->layers[layer].kv_b;
    double scale = ref_softmax_scale(c);
    int slack = ref_mask_slack(c);

    double *qf = malloc((size_t)(n * H * L + 1) * sizeof(double)); /* rows (t, h) */
    double *kc = malloc((size_t)(S * L + 1) * sizeof(double));
    double *vc = malloc((size_t)(S * C + 1) * sizeof(double));
    double *s = malloc((size_t)(H * S + 1) * sizeof(double));
    int64_t *vis = malloc((size_t)H * sizeof(int64_t));
    double *ol = malloc((size_t)(H * C) * sizeof(double));
    mla_status st = (qf && kc && vc && s && vis && ol)
                        ? MLA_OK
                        : mla_errorf(MLA_ERR_NOMEM, "reference attention (layer %d): decode over %lld rows", layer,
                                     (long long)S);
    if (!st) st = ref_mqa_query(c, layer, n, q, q_abs, qf);
    if (st) goto done;
    for (int64_t j = 0; j < S; j++) {
        ref_cache_read(c, layer, seq, j, kc + j * L);
        memcpy(vc + j * C, kc + j * L, (size_t)C * sizeof(double));
    }
    for (int64_t t = 0; t < n; t++) {
        ref_matmul_nt(qf + t * H * L, kc, H, L, S, s);
        for (int64_t i = 0; i < H * S; i++) s[i] *= scale;
        for (int64_t h = 0; h < H; h++) vis[h] = n_past + t + 1 + slack;
        softmax_rows(s, H, S, vis, lse + t * H);
        for (int64_t h = 0; h < H; h++) lse[t * H + h] = ref_rnd32(c, lse[t * H + h]);
        ref_matmul_nn(s, vc, H, S, C, ol);
        ref_rnd_vec(c, ol, H * C);
        for (int64_t h = 0; h < H; h++) /* o_latent[h] . W_UV[h]^T */
            ref_matmul_nt(ol + h * C, kvb + (h * W + P) * C, 1, C, V, core + (t * H + h) * V);
    }
    ref_rnd_vec(c, core, n * H * V);
done:
    free(qf); free(kc); free(vc); free(s); free(vis); free(ol);
    return st;
}
