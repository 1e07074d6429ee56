/* forward.c: the reference's forward pass, llm.c style. The taps are the activations: each layer's
 * tap tensors are made first (taps.h decides which the layer and the form produce), then the layer
 * is one op call per line over those pointers. Taps are f64 (topk_ids i32) and live in the context
 * until the next call. */
#include "ref_internal.h"

#include <stdlib.h>
#include <string.h>

void ref_taps_clear(ref_ctx *c)
{
    for (int t = 0; t < MLA_TAP_COUNT; t++) {
        mla_tensor_free(c->taps[t]);
        c->taps[t] = NULL;
    }
    if (!c->ltaps) return;
    for (int i = 0; i < c->cfg->num_hidden_layers * MLA_TAP_COUNT; i++) {
        mla_tensor_free(c->ltaps[i]);
        c->ltaps[i] = NULL;
    }
}

/* A new f64 (or i32) tap tensor of T tokens, kept in the context: its data, or NULL (out of memory). */
static void *tap_new(ref_ctx *c, int layer, mla_tap tap, int64_t T)
{
    int64_t shape[MLA_MAX_DIMS];
    int nd = mla_tap_shape(tap, c->cfg, T, shape);
    mla_tensor *t = NULL;
    mla_dtype dt = tap == MLA_TAP_TOPK_IDS ? MLA_I32 : MLA_F64;
    if (mla_tensor_new(&t, dt, nd, shape, mla_tap_name(tap))) return NULL;
    mla_tensor **slot = mla_tap_is_layer(tap) ? &c->ltaps[layer * MLA_TAP_COUNT + tap] : &c->taps[tap];
    mla_tensor_free(*slot);
    *slot = t;
    return t->data;
}

/* One layer's activations for this call: its taps (NULL for a tap the layer or form does not make). */
typedef struct layer_acts {
    double *attn_norm;                /* [T,D] */
    double *q_nope, *q_pe;            /* [T,H,P] [T,H,R] */
    double *kv_c, *k_pe;              /* [T,C] [T,R]: what the cache stores */
    double *q_abs;                    /* [T,H,C] absorbed form only */
    double *core, *lse;               /* [T,H,V] [T,H] */
    double *attn_out, *ffn_norm;      /* [T,D] */
    double *router_logits;            /* [T,E] MoE layers only */
    int32_t *topk_ids;                /* [T,K] */
    double *topk_weights;             /* [T,K] */
    double *ffn_out, *out;            /* [T,D] */
} layer_acts;

static mla_status layer_acts_new(ref_ctx *c, int l, int64_t T, int absorbed, layer_acts *a)
{
    void *p[MLA_TAP_COUNT] = {0};
    char skip = absorbed ? 'M' : 'Q'; /* taps of the other form */
    for (int t = 0; t < MLA_TAP_COUNT; t++) {
        if (!mla_tap_in_layer((mla_tap)t, c->cfg, l) || mla_tap_producer((mla_tap)t) == skip) continue;
        if (!(p[t] = tap_new(c, l, (mla_tap)t, T)))
            return mla_errorf(MLA_ERR_NOMEM, "reference: layer %d tap %s of %lld tokens", l,
                              mla_tap_name((mla_tap)t), (long long)T);
    }
    *a = (layer_acts){
        .attn_norm = p[MLA_TAP_ATTN_NORM], .q_nope = p[MLA_TAP_Q_NOPE], .q_pe = p[MLA_TAP_Q_PE],
        .kv_c = p[MLA_TAP_KV_C], .k_pe = p[MLA_TAP_K_PE], .q_abs = p[MLA_TAP_Q_ABSORBED],
        .core = p[MLA_TAP_ATTN_CORE], .lse = p[MLA_TAP_LSE], .attn_out = p[MLA_TAP_ATTN_OUT],
        .ffn_norm = p[MLA_TAP_FFN_NORM], .router_logits = p[MLA_TAP_ROUTER_LOGITS],
        .topk_ids = p[MLA_TAP_TOPK_IDS], .topk_weights = p[MLA_TAP_TOPK_WEIGHTS],
        .ffn_out = p[MLA_TAP_FFN_OUT], .out = p[MLA_TAP_OUT],
    };
    return MLA_OK;
}

/* Scratch of one layer that is not a tap. */
typedef struct layer_scratch {
    double *q;   /* [T,H,P+R] the query heads, q_pe roped: what attention reads */
    double *cq;  /* [T,Lq] compressed query (q_lora_rank > 0) */
    double *kva; /* [T,C+R] kv_a_proj output */
    double *h;   /* [T,D] residual after attention */
} layer_scratch;

static void layer_scratch_free(layer_scratch *s)
{
    free(s->q);
    free(s->cq);
    free(s->kva);
    free(s->h);
}

static mla_status layer_scratch_new(layer_scratch *s, const mla_config *cf, int l, int64_t T)
{
    int64_t H = cf->num_attention_heads, Dqk = cf->qk_nope_head_dim + cf->qk_rope_head_dim;
    int64_t Lq = cf->q_lora_rank, CR = cf->kv_lora_rank + cf->qk_rope_head_dim;
    *s = (layer_scratch){
        .q = malloc((size_t)(T * H * Dqk + 1) * sizeof(double)),
        .cq = malloc((size_t)(T * Lq + 1) * sizeof(double)),
        .kva = malloc((size_t)(T * CR + 1) * sizeof(double)),
        .h = malloc((size_t)(T * cf->hidden_size + 1) * sizeof(double)),
    };
    if (s->q && s->cq && s->kva && s->h) return MLA_OK;
    layer_scratch_free(s);
    return mla_errorf(MLA_ERR_NOMEM, "reference: layer %d activations of %lld tokens", l, (long long)T);
}

/* q[T,H,P+R] from the normed input x[T,D]: through the compressed query cq[T,Lq] (q_a, its norm,
 * q_b) when q_lora_rank > 0, else one projection (mla-spec.md §b.1 (1)). */
static mla_status query_proj(double *q, double *cq, const double *x, const ref_layer *lw, int64_t T,
                             const mla_config *cf, const ref_numerics *nm)
{
    int64_t D = cf->hidden_size, Lq = cf->q_lora_rank;
    int64_t HDqk = (int64_t)cf->num_attention_heads * (cf->qk_nope_head_dim + cf->qk_rope_head_dim);
    if (!Lq) return ref_linear(q, x, lw->q, T, D, HDqk, 1, nm);
    mla_status st = ref_linear(cq, x, lw->q_a, T, D, Lq, 1, nm);
    if (st) return st;
    ref_rmsnorm(cq, Lq, cq, Lq, lw->q_a_norm, T, Lq, cf->rms_norm_eps, nm);
    return ref_linear(q, cq, lw->q_b, T, Lq, HDqk, 1, nm);
}

/* k_pe[T,R] = RoPE(kva[:, C:]) and q[T,H,P+R]'s rope parts roped in place, at positions pos[T]. */
static void rope_qk(double *q, double *k_pe, const double *kva, const int64_t *pos, int64_t T, const ref_ctx *c)
{
    ref_attn_dims d = c->ad;
    for (int64_t t = 0; t < T; t++) {
        memcpy(k_pe + t * d.R, kva + t * (d.C + d.R) + d.C, (size_t)d.R * sizeof(double));
        ref_rope(k_pe + t * d.R, pos[t], &c->rope, c->faults.rope_halfsplit, &c->nm);
        for (int64_t h = 0; h < d.H; h++)
            ref_rope(q + (t * d.H + h) * (d.P + d.R) + d.P, pos[t], &c->rope, c->faults.rope_halfsplit, &c->nm);
    }
}

/* q[n,P+R] rows -> q_nope[n,P], q_pe[n,R]. */
static void split_q(double *q_nope, double *q_pe, const double *q, int64_t n, int64_t P, int64_t R)
{
    for (int64_t i = 0; i < n; i++) {
        memcpy(q_nope + i * P, q + i * (P + R), (size_t)P * sizeof(double));
        memcpy(q_pe + i * R, q + i * (P + R) + P, (size_t)R * sizeof(double));
    }
}

/* y[n] = x + r, one rounding (a residual add). */
static void residual(double *y, const double *x, const double *r, int64_t n, const ref_numerics *nm)
{
    for (int64_t i = 0; i < n; i++) y[i] = ref_rnd(nm, x[i] + r[i]);
}

/* Attention of one sequence's n new tokens (rows of the layer's taps at that sequence, q of the
 * scratch): the new rows go into the cache first, then either the delegated operator reads the cache,
 * or the context (MHA: rows [0, np)) or everything (MQA: rows [0, np+n)) is read back dequantized. */
static mla_status seq_attention(ref_ctx *c, int l, int seq, int64_t np, int64_t n, int absorbed,
                                const double *q, const double *kv_c, const double *k_pe, double *q_abs,
                                double *core, double *lse)
{
    ref_attn_dims d = c->ad;
    mla_status st = MLA_OK;
    for (int64_t i = 0; i < n && !st; i++) st = ref_cache_write(c, l, seq, np + i, kv_c + i * d.C, k_pe + i * d.R);
    if (st) return st;
    const double *kv_b = c->layers[l].kv_b;
    /* a partial operator (mla_ref_set_attn_ops_partial) leaves its missing form to the reference */
    if (c->attn_ops && (absorbed ? c->attn_ops->mqa != NULL : c->attn_ops->mha != NULL)) {
        ref_attn_pool p;
        if ((st = ref_attn_pool_build(&p, c, l, seq, np + n))) return st;
        if (absorbed)
            st = ref_attn_mqa_delegate(core, lse, q_abs, q, np, n, &p.kv, kv_b, d, &c->nm, &c->faults, c->attn_ops);
        else
            st = ref_attn_mha_delegate(core, lse, q, kv_c, k_pe, np, n, &p.kv, kv_b, d, &c->nm, &c->faults,
                                       c->attn_ops);
        ref_attn_pool_free(&p);
        return st;
    }
    int64_t S = absorbed ? np + n : np;
    double *rows = malloc((size_t)(S * (d.C + d.R) + 1) * sizeof(double));
    if (!rows)
        return mla_errorf(MLA_ERR_NOMEM, "reference: layer %d: %lld cache rows of sequence %d", l, (long long)S, seq);
    for (int64_t j = 0; j < S; j++) ref_cache_read(c, l, seq, j, rows + j * (d.C + d.R));
    if (absorbed)
        st = ref_attn_mqa(core, lse, q_abs, q, rows, np, n, kv_b, d, &c->nm, &c->faults);
    else
        st = ref_attn_mha(core, lse, q, kv_c, k_pe, rows, np, n, kv_b, d, &c->nm, &c->faults);
    free(rows);
    return st;
}

/* One transformer layer over the batch; x[T,D] is updated in place to the layer output. */
static mla_status ref_layer_forward(ref_ctx *c, int l, const mla_batch *b, const int64_t *pos, int absorbed,
                                    double *x, int64_t T)
{
    const mla_config *cf = c->cfg;
    const ref_layer *lw = &c->layers[l];
    const ref_numerics *nm = &c->nm;
    int64_t D = cf->hidden_size, H = c->ad.H, P = c->ad.P, R = c->ad.R, V = c->ad.V, C = c->ad.C;
    int64_t Dqk = P + R;
    double eps = cf->rms_norm_eps;
    layer_acts a = {0};
    layer_scratch s = {0};
    mla_status st = layer_acts_new(c, l, T, absorbed, &a);
    if (st) return st;
    if ((st = layer_scratch_new(&s, cf, l, T))) return st;

    ref_rmsnorm(a.attn_norm, D, x, D, lw->attn_norm, T, D, eps, nm);
    if ((st = query_proj(s.q, s.cq, a.attn_norm, lw, T, cf, nm))) goto done;
    if ((st = ref_linear(s.kva, a.attn_norm, lw->kv_a, T, D, C + R, 1, nm))) goto done;
    ref_rmsnorm(a.kv_c, C, s.kva, C + R, lw->kv_a_norm, T, C, eps, nm);
    rope_qk(s.q, a.k_pe, s.kva, pos, T, c);
    split_q(a.q_nope, a.q_pe, s.q, T * H, P, R);
    for (int i = 0, t0 = 0; i < b->n_seqs; t0 += b->n_new[i], i++)
        if ((st = seq_attention(c, l, b->seq_ids[i], b->n_past[i], b->n_new[i], absorbed, s.q + t0 * H * Dqk,
                                a.kv_c + t0 * C, a.k_pe + t0 * R, absorbed ? a.q_abs + t0 * H * C : NULL,
                                a.core + t0 * H * V, a.lse + t0 * H)))
            goto done;
    if ((st = ref_linear(a.attn_out, a.core, lw->o, T, H * V, D, 1, nm))) goto done;
    residual(s.h, x, a.attn_out, T * D, nm);
    ref_rmsnorm(a.ffn_norm, D, s.h, D, lw->ffn_norm, T, D, eps, nm);
    if (a.router_logits)
        st = ref_moe(a.ffn_out, a.router_logits, a.topk_ids, a.topk_weights, a.ffn_norm, T, lw, &c->moe, nm);
    else
        st = ref_mlp(a.ffn_out, a.ffn_norm, lw->w1, lw->w2, lw->w3, T, D, cf->intermediate_size, nm);
    if (st) goto done;
    residual(a.out, s.h, a.ffn_out, T * D, nm);
    memcpy(x, a.out, (size_t)(T * D) * sizeof(double));
done:
    layer_scratch_free(&s);
    return st;
}

mla_status ref_forward(ref_ctx *c, const mla_batch *b, int absorbed, int stream_weights)
{
    const mla_config *cf = c->cfg;
    int64_t T = mla_batch_tokens(b), D = cf->hidden_size, N = cf->vocab_size;
    ref_taps_clear(c);
    double *x = malloc((size_t)(T * D + 1) * sizeof(double));
    int64_t *pos = malloc((size_t)(T + 1) * sizeof(int64_t));
    double *embed = tap_new(c, 0, MLA_TAP_EMBED, T);
    mla_status st = MLA_OK;
    if (!x || !pos || !embed) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: activations of %lld tokens", (long long)T);
        goto done;
    }
    for (int s = 0, t = 0; s < b->n_seqs; s++)
        for (int i = 0; i < b->n_new[s]; i++, t++) pos[t] = b->n_past[s] + i;
    for (int64_t t = 0; t < T; t++)
        for (int64_t d = 0; d < D; d++) x[t * D + d] = embed[t * D + d] = c->embed[(int64_t)b->tokens[t] * D + d];
    for (int l = 0; l < cf->num_hidden_layers; l++) {
        if ((st = ref_layer_load(c, l))) goto done;
        st = ref_layer_forward(c, l, b, pos, absorbed, x, T);
        if (stream_weights) ref_layer_release(c, l);
        if (st) goto done;
    }
    double *fin = tap_new(c, 0, MLA_TAP_FINAL_NORM, T), *logits = tap_new(c, 0, MLA_TAP_LOGITS, T);
    if (!fin || !logits) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: final norm and logits of %lld tokens", (long long)T);
        goto done;
    }
    ref_rmsnorm(fin, D, x, D, c->final_norm, T, D, cf->rms_norm_eps, &c->nm);
    ref_matmul_nt_batch(fin, c->lm_head, T, D, N, logits);
    ref_rnd32_vec(&c->nm, logits, T * N);
    for (int s = 0; s < b->n_seqs; s++) c->seq_len[b->seq_ids[s]] += b->n_new[s];
done:
    free(x);
    free(pos);
    return st;
}
