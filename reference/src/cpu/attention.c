/* attention.c: MLA attention in both forms (mla-spec.md §b.2, §b.3) for one sequence.
 * Naive (MHA): keys/values expanded from kv_c with kv_b_proj, context and new tokens attended
 * separately and merged by log-sum-exp, as chunked prefill over a cache does.
 * Absorbed (MQA): q_nope folded through W_UK, attention over the 576-wide latent rows, W_UV after. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REF_QBLOCK 256 /* query rows per score block: bounds memory at long kv lengths */

/* One attention part for head-major gathered operands:
 * q[n,dq], k[nk,dq], v[nk,dv]; query i sees keys j < vis_base + i + 1 + slack (causal) or all
 * (vis_base < 0). o[n,dv], lse[n]. */
static mla_status attn_part(double *o, double *lse, const double *q, const double *k, const double *v, int64_t n,
                            int64_t nk, int64_t dq, int64_t dv, double scale, int64_t vis_base, int slack,
                            int64_t p_tile)
{
    if (nk == 0) {
        memset(o, 0, (size_t)(n * dv) * sizeof(double));
        for (int64_t i = 0; i < n; i++) lse[i] = -INFINITY;
        return MLA_OK;
    }
    double *s = malloc((size_t)(REF_QBLOCK * nk) * sizeof(double));
    int64_t *vis = malloc(REF_QBLOCK * sizeof(int64_t));
    if (!s || !vis) {
        free(s);
        free(vis);
        return mla_errorf(MLA_ERR_NOMEM, "reference attention: score block of %d x %lld", REF_QBLOCK,
                          (long long)nk);
    }
    for (int64_t i0 = 0; i0 < n; i0 += REF_QBLOCK) {
        int64_t m = n - i0 < REF_QBLOCK ? n - i0 : REF_QBLOCK;
        /* causal: no query of this block sees keys at or past vis_base + i0 + m + slack */
        int64_t kb = vis_base < 0 ? nk : vis_base + i0 + m + slack;
        if (kb > nk) kb = nk;
        ref_matmul_nt(q + i0 * dq, k, m, dq, kb, s);
        for (int64_t i = 0; i < m * kb; i++) s[i] *= scale;
        for (int64_t i = 0; i < m; i++) vis[i] = vis_base < 0 ? nk : vis_base + i0 + i + 1 + slack;
        ref_softmax_rows_tc(s, lse + i0, vis, m, kb, p_tile); /* p_tile 0: exact */
        ref_matmul_nn(s, v, m, kb, dv, o + i0 * dv);
    }
    free(s);
    free(vis);
    return MLA_OK;
}

/* An LSE as the merge reads it: bf16 under the lse-bf16 fault (a storage point that should be f32). */
static double lse_in(int lse_bf16, double x) { return lse_bf16 ? mla_round_bf16(x) : x; }

void ref_lse_merge(double *oa, double *la, const double *ob, const double *lb, int64_t dv, int lse_bf16,
                   const ref_numerics *nm)
{
    double a = lse_in(lse_bf16, *la), b = lse_in(lse_bf16, *lb);
    if (a == -INFINITY && b == -INFINITY) return;
    double m = a > b ? a : b;
    double wa = exp(a - m), wb = exp(b - m), den = wa + wb;
    double fa = wa / den, fb = wb / den;
    for (int64_t d = 0; d < dv; d++) oa[d] = ref_rnd(nm, oa[d] * fa + ob[d] * fb);
    *la = ref_rnd32(nm, log(den) + m);
}

/* Shared inputs of the per-head tasks of ref_attn_mha. */
typedef struct {
    int64_t n_past, n, H, P, R, V, Dqk, W;
    const double *q, *k_pe_new, *ctx_pe, *kv_ctx, *kv_new;
    const ref_numerics *nm;
    const ref_faults *f;
    double *core, *lse;
    int failed;
} mha_job;

/* One head: attention over the new tokens (causal), then over the context, merged by LSE. */
static void mha_head(void *arg, int64_t h)
{
    mha_job *J = arg;
    const ref_numerics *nm = J->nm;
    const ref_faults *f = J->f;
    int64_t n = J->n, n_past = J->n_past, H = J->H, P = J->P, R = J->R, V = J->V, Dqk = J->Dqk, W = J->W;
    int64_t nmax = n_past > n ? n_past : n;
    double *qh = calloc((size_t)(n * Dqk + 1), sizeof(double));
    double *kh = calloc((size_t)(nmax * Dqk + 1), sizeof(double));
    double *vh = calloc((size_t)(nmax * V + 1), sizeof(double));
    double *oa = malloc((size_t)(n * V + 1) * sizeof(double));
    double *ob = malloc((size_t)(n * V + 1) * sizeof(double));
    double *la = malloc((size_t)(n + 1) * sizeof(double));
    double *lb = malloc((size_t)(n + 1) * sizeof(double));
    if (!qh || !kh || !vh || !oa || !ob || !la || !lb) goto fail;
    for (int64_t i = 0; i < n; i++) memcpy(qh + i * Dqk, J->q + (i * H + h) * Dqk, (size_t)Dqk * sizeof(double));
    for (int64_t j = 0; j < n; j++) { /* new tokens, causal */
        memcpy(kh + j * Dqk, J->kv_new + j * H * W + h * W, (size_t)P * sizeof(double));
        memcpy(kh + j * Dqk + P, J->k_pe_new + j * R, (size_t)R * sizeof(double));
        memcpy(vh + j * V, J->kv_new + j * H * W + h * W + P, (size_t)V * sizeof(double));
    }
    if (attn_part(oa, la, qh, kh, vh, n, n, Dqk, V, f->softmax_scale, 0, f->mask_slack, nm->p_tile_prefill)) goto fail;
    if (n_past > 0) {
        for (int64_t i = 0; i < n * V; i++) oa[i] = ref_rnd(nm, oa[i]);
        for (int64_t i = 0; i < n; i++) la[i] = ref_rnd32(nm, la[i]);
        for (int64_t j = 0; j < n_past; j++) {
            memcpy(kh + j * Dqk, J->kv_ctx + j * H * W + h * W, (size_t)P * sizeof(double));
            memcpy(kh + j * Dqk + P, J->ctx_pe + j * R, (size_t)R * sizeof(double));
            memcpy(vh + j * V, J->kv_ctx + j * H * W + h * W + P, (size_t)V * sizeof(double));
        }
        if (attn_part(ob, lb, qh, kh, vh, n, n_past, Dqk, V, f->softmax_scale, -1, 0, nm->p_tile_prefill)) goto fail;
        for (int64_t i = 0; i < n * V; i++) ob[i] = ref_rnd(nm, ob[i]);
        for (int64_t i = 0; i < n; i++) {
            lb[i] = ref_rnd32(nm, lb[i]);
            ref_lse_merge(oa + i * V, la + i, ob + i * V, lb + i, V, f->lse_bf16, nm);
        }
    }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t d = 0; d < V; d++) J->core[(i * H + h) * V + d] = ref_rnd(nm, oa[i * V + d]);
        J->lse[i * H + h] = ref_rnd32(nm, la[i]);
    }
    goto done;
fail:
    __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED); /* tasks run on several threads */
done:
    free(qh); free(kh); free(vh); free(oa); free(ob); free(la); free(lb);
}

mla_status ref_attn_mha(double *core, double *lse, const double *q, const double *kv_c_new,
                        const double *k_pe_new, const double *ctx, int64_t n_past, int64_t n,
                        const double *kv_b, ref_attn_dims d, const ref_numerics *nm, const ref_faults *f)
{
    int64_t H = d.H, P = d.P, R = d.R, V = d.V, C = d.C, W = P + V;
    /* the context's latent and rope parts, each contiguous for the products */
    double *ctx_c = malloc((size_t)(n_past * C + 1) * sizeof(double));
    double *ctx_pe = malloc((size_t)(n_past * R + 1) * sizeof(double));
    double *kv_ctx = malloc((size_t)(n_past * H * W + 1) * sizeof(double));
    double *kv_new = malloc((size_t)(n * H * W + 1) * sizeof(double));
    mla_status st = MLA_OK;
    if (!ctx_c || !ctx_pe || !kv_ctx || !kv_new) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference attention: %lld context rows", (long long)n_past);
        goto done;
    }
    for (int64_t j = 0; j < n_past; j++) {
        memcpy(ctx_c + j * C, ctx + j * (C + R), (size_t)C * sizeof(double));
        memcpy(ctx_pe + j * R, ctx + j * (C + R) + C, (size_t)R * sizeof(double));
    }
    if ((st = ref_linear(kv_ctx, ctx_c, kv_b, n_past, C, H * W, 0, nm))) goto done;
    if ((st = ref_linear(kv_new, kv_c_new, kv_b, n, C, H * W, 0, nm))) goto done;
    mha_job J = {.n_past = n_past, .n = n, .H = H, .P = P, .R = R, .V = V, .Dqk = P + R, .W = W, .q = q,
                 .k_pe_new = k_pe_new, .ctx_pe = ctx_pe, .kv_ctx = kv_ctx, .kv_new = kv_new, .nm = nm, .f = f,
                 .core = core, .lse = lse};
    ref_parallel_for(H, mha_head, &J);
    if (J.failed)
        st = mla_errorf(MLA_ERR_NOMEM, "reference attention: per-head buffers for %lld tokens",
                        (long long)(n_past + n));
done:
    free(ctx_c); free(ctx_pe); free(kv_ctx); free(kv_new);
    return st;
}

mla_status ref_mqa_query(double *q_abs, double *qf, const double *q, int64_t n, const double *kv_b,
                         ref_attn_dims d, const ref_numerics *nm)
{
    int64_t H = d.H, P = d.P, R = d.R, V = d.V, C = d.C, Dqk = P + R, W = P + V, L = C + R;
    double *qn = malloc((size_t)(n * P + 1) * sizeof(double));
    double *qa = malloc((size_t)(n * C + 1) * sizeof(double));
    if (!qn || !qa) {
        free(qn);
        free(qa);
        return mla_errorf(MLA_ERR_NOMEM, "reference attention: decode query of %lld tokens", (long long)n);
    }
    for (int64_t h = 0; h < H; h++) {
        for (int64_t t = 0; t < n; t++) memcpy(qn + t * P, q + (t * H + h) * Dqk, (size_t)P * sizeof(double));
        ref_matmul_nn(qn, kv_b + h * W * C, n, P, C, qa); /* q_nope[h] . W_UK[h] */
        for (int64_t t = 0; t < n; t++) {
            double *dst = qf + (t * H + h) * L;
            for (int64_t k = 0; k < C; k++) q_abs[(t * H + h) * C + k] = dst[k] = ref_rnd(nm, qa[t * C + k]);
            memcpy(dst + C, q + (t * H + h) * Dqk + P, (size_t)R * sizeof(double));
        }
    }
    free(qn);
    free(qa);
    if (!nm->q_fp8) return MLA_OK;
    mla_dtype ty = nm->q_fp8_type;
    float s = (float)nm->q_fp8_scale;
    for (int64_t i = 0; i < n * H * L; i++)
        qf[i] = (double)(float)((double)mla_fp8_decode(ty, mla_fp8_encode(ty, (float)qf[i] / s)) * s);
    return MLA_OK;
}

mla_status ref_attn_mqa(double *core, double *lse, double *q_abs, const double *q, const double *rows,
                        int64_t n_past, int64_t n, const double *kv_b, ref_attn_dims d, const ref_numerics *nm,
                        const ref_faults *f)
{
    int64_t H = d.H, P = d.P, R = d.R, V = d.V, C = d.C, W = P + V, L = C + R;
    int64_t S = n_past + n;
    double *qf = malloc((size_t)(n * H * L + 1) * sizeof(double)); /* rows (t, h) */
    double *vc = malloc((size_t)(S * C + 1) * sizeof(double));      /* the latent part of rows */
    double *s = malloc((size_t)(H * S + 1) * sizeof(double));
    int64_t *vis = malloc((size_t)H * sizeof(int64_t));
    double *ol = malloc((size_t)(H * C) * sizeof(double));
    mla_status st = (qf && vc && s && vis && ol)
                        ? MLA_OK
                        : mla_errorf(MLA_ERR_NOMEM, "reference attention: decode over %lld rows", (long long)S);
    if (!st) st = ref_mqa_query(q_abs, qf, q, n, kv_b, d, nm);
    if (st) goto done;
    for (int64_t j = 0; j < S; j++) memcpy(vc + j * C, rows + j * L, (size_t)C * sizeof(double));
    for (int64_t t = 0; t < n; t++) {
        ref_matmul_nt(qf + t * H * L, rows, H, L, S, s);
        for (int64_t i = 0; i < H * S; i++) s[i] *= f->softmax_scale;
        for (int64_t h = 0; h < H; h++) vis[h] = n_past + t + 1 + f->mask_slack;
        /* p_tile_decode 0: exact; else one KV split, tiles from key 0 (NUMERICS.md) */
        ref_softmax_rows_tc(s, lse + t * H, vis, H, S, nm->p_tile_decode);
        for (int64_t h = 0; h < H; h++) lse[t * H + h] = ref_rnd32(nm, lse[t * H + h]);
        ref_matmul_nn(s, vc, H, S, C, ol);
        ref_rnd_vec(nm, ol, H * C);
        for (int64_t h = 0; h < H; h++) /* o_latent[h] . W_UV[h]^T */
            ref_matmul_nt(ol + h * C, kv_b + (h * W + P) * C, 1, C, V, core + (t * H + h) * V);
    }
    ref_rnd_vec(nm, core, n * H * V);
done:
    free(qf); free(vc); free(s); free(vis); free(ol);
    return st;
}
