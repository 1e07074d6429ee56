/* engine.c: the reference backend (the vtable of backend.h). The forward pass is a flat list of
 * op calls per layer; taps of the last call are kept in f64 (topk_ids in i32). */
#include "mla/ref_hook.h"
#include "ref_internal.h"
#include "mla/abi_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layers whose f64 weights exceed this many bytes in total are released after each use. */
#define REF_RESIDENT_BYTES ((int64_t)8 << 30)

typedef struct ref_engine {
    ref_ctx c;
    int stream_weights;
} ref_engine;

static mla_status ref_create(void **out)
{
    ref_engine *e = calloc(1, sizeof *e);
    if (!e) return mla_errorf(MLA_ERR_NOMEM, "reference: context");
    mla_run_opts_default(&e->c.opts);
    *out = e;
    return MLA_OK;
}

static int ref_supports(void *ctx, mla_feature f)
{
    const ref_engine *e = ctx;
    if (e && e->c.attn_ops && f >= MLA_FEAT_PROFILE_FP64 && f < MLA_FEAT_PROFILE_FP64 + MLA_PROFILE_COUNT)
        return ref_attn_delegate_supports(e->c.attn_ops, (mla_profile)(f - MLA_FEAT_PROFILE_FP64));
    if (e && e->c.attn_ops && f == MLA_FEAT_FAULTS) return 0; /* mask/scale faults live in attention.c */
    return f < MLA_FEAT_COUNT;
}

static void ref_taps_clear(ref_ctx *c)
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

static void ref_destroy(void *ctx)
{
    ref_engine *e = ctx;
    if (!e) return;
    ref_ctx *c = &e->c;
    if (c->cfg) {
        ref_taps_clear(c);
        for (int l = 0; l < c->cfg->num_hidden_layers; l++) ref_layer_release(c, l);
        ref_cache_free(c);
    }
    free(c->ltaps);
    free(c->layers);
    free(c->embed);
    free(c->final_norm);
    free(c->lm_head);
    free(c->inv_freq);
    free(e);
}

static int64_t layer_param_count(const mla_config *cf, int l)
{
    int64_t D = cf->hidden_size, H = cf->num_attention_heads, C = cf->kv_lora_rank;
    int64_t Dqk = cf->qk_nope_head_dim + cf->qk_rope_head_dim, W = cf->qk_nope_head_dim + cf->v_head_dim;
    int64_t n = cf->q_lora_rank ? (int64_t)cf->q_lora_rank * (D + H * Dqk) : D * H * Dqk;
    n += (C + cf->qk_rope_head_dim) * D + H * W * C + D * H * cf->v_head_dim;
    if (mla_config_is_moe_layer(cf, l))
        n += (int64_t)3 * D * cf->moe_intermediate_size * (cf->n_routed_experts + cf->n_shared_experts);
    else
        n += (int64_t)3 * D * cf->intermediate_size;
    return n;
}

static mla_status ref_load(void *ctx, mla_model *model, const mla_run_opts *opts)
{
    ref_engine *e = ctx;
    ref_ctx *c = &e->c;
    if (c->cfg) return mla_errorf(MLA_ERR_INVALID, "reference: load called twice");
    c->model = model;
    c->cfg = mla_model_config(model);
    c->opts = *opts;
    if (c->opts.kv_scale <= 0) c->opts.kv_scale = 1.0;
    if (c->opts.q_scale <= 0) c->opts.q_scale = 1.0;
    if (c->opts.block_size <= 0) c->opts.block_size = 64;
    if (c->opts.max_seqs <= 0) c->opts.max_seqs = 1;
    if (c->opts.max_seq_len <= 0) c->opts.max_seq_len = 4096;
    c->round = opts->profile != MLA_PROFILE_FP64;
    int L = c->cfg->num_hidden_layers;
    c->layers = calloc((size_t)L, sizeof *c->layers);
    c->ltaps = calloc((size_t)L * MLA_TAP_COUNT, sizeof *c->ltaps);
    c->inv_freq = malloc((size_t)(c->cfg->qk_rope_head_dim / 2 + 1) * sizeof(double));
    if (!c->layers || !c->ltaps || !c->inv_freq) return mla_errorf(MLA_ERR_NOMEM, "reference: load");
    mla_config_inv_freq(c->cfg, c->inv_freq);
    int64_t total = 0;
    for (int l = 0; l < L; l++) total += layer_param_count(c->cfg, l) * (int64_t)sizeof(double);
    e->stream_weights = total > REF_RESIDENT_BYTES;
    mla_status st = ref_globals_load(c);
    if (st) return st;
    return ref_cache_init(c);
}

static mla_status ref_reset(void *ctx)
{
    ref_ctx *c = &((ref_engine *)ctx)->c;
    if (!c->cfg) return mla_errorf(MLA_ERR_INVALID, "reference: reset before load");
    memset(c->seq_len, 0, (size_t)c->opts.max_seqs * sizeof *c->seq_len);
    ref_taps_clear(c);
    return MLA_OK;
}

/* A new f64 (or i32) tap tensor for this call, kept in the context. */
static double *tap_new(ref_ctx *c, int layer, mla_tap tap, int64_t T)
{
    int64_t shape[MLA_MAX_DIMS];
    int nd = mla_tap_shape(tap, c->cfg, T, shape);
    mla_tensor *t = NULL;
    mla_dtype dt = tap == MLA_TAP_TOPK_IDS ? MLA_I32 : MLA_F64;
    if (mla_tensor_new(&t, dt, nd, shape, mla_tap_name(tap))) return NULL;
    if (mla_tap_is_layer(tap)) {
        mla_tensor **slot = &c->ltaps[layer * MLA_TAP_COUNT + tap];
        mla_tensor_free(*slot);
        *slot = t;
    } else {
        mla_tensor_free(c->taps[tap]);
        c->taps[tap] = t;
    }
    return t->data;
}

/* The batch contract of backend.h (mla_batch_validate), against this engine's cache. */
static mla_status check_batch(const ref_ctx *c, const mla_batch *b)
{
    if (!c->cfg) return mla_errorf(MLA_ERR_INVALID, "reference: forward before load");
    mla_batch_limits lim = {.max_seqs = c->opts.max_seqs,
                            .max_seq_len = c->opts.max_seq_len,
                            .vocab_size = c->cfg->vocab_size,
                            .cached = c->seq_len};
    return mla_batch_validate("reference", b, &lim);
}

#define TAP(var, layer, tap)                                                         \
    double *var = tap_new(c, layer, tap, T);                                         \
    if (!var) {                                                                      \
        st = mla_errorf(MLA_ERR_NOMEM, "reference: tap %s", mla_tap_name(tap));       \
        goto done;                                                                   \
    }

/* One transformer layer over the batch; x[T,D] is updated in place to the layer output. */
static mla_status ref_layer_forward(ref_ctx *c, int l, const mla_batch *b, const int64_t *pos,
                                    int absorbed, double *x, int64_t T)
{
    const mla_config *cf = c->cfg;
    const ref_layer *lw = &c->layers[l];
    int64_t D = cf->hidden_size, H = cf->num_attention_heads, P = cf->qk_nope_head_dim;
    int64_t R = cf->qk_rope_head_dim, V = cf->v_head_dim, C = cf->kv_lora_rank, Dqk = P + R;
    int64_t Lq = cf->q_lora_rank;
    mla_status st = MLA_OK;
    double *q = malloc((size_t)(T * H * Dqk) * sizeof(double));
    double *cq = malloc((size_t)(T * (Lq ? Lq : 1)) * sizeof(double));
    double *kva = malloc((size_t)(T * (C + R)) * sizeof(double));
    double *hbuf = malloc((size_t)(T * D) * sizeof(double));
    if (!q || !cq || !kva || !hbuf) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: layer %d activations", l);
        goto done;
    }
    TAP(attn_norm, l, MLA_TAP_ATTN_NORM);
    ref_rmsnorm(c, x, D, lw->attn_norm, T, D, cf->rms_norm_eps, attn_norm, D);
    if (Lq) {
        ref_linear(c, attn_norm, lw->q_a, T, D, Lq, 1, cq);
        ref_rmsnorm(c, cq, Lq, lw->q_a_norm, T, Lq, cf->rms_norm_eps, cq, Lq);
        ref_linear(c, cq, lw->q_b, T, Lq, H * Dqk, 1, q);
    } else {
        ref_linear(c, attn_norm, lw->q, T, D, H * Dqk, 1, q);
    }
    ref_linear(c, attn_norm, lw->kv_a, T, D, C + R, 1, kva);
    TAP(kv_c, l, MLA_TAP_KV_C);
    TAP(k_pe, l, MLA_TAP_K_PE);
    ref_rmsnorm(c, kva, C + R, lw->kv_a_norm, T, C, cf->rms_norm_eps, kv_c, C);
    for (int64_t t = 0; t < T; t++) {
        memcpy(k_pe + t * R, kva + t * (C + R) + C, (size_t)R * sizeof(double));
        ref_rope(c, k_pe + t * R, pos[t]);
        for (int64_t h = 0; h < H; h++) ref_rope(c, q + (t * H + h) * Dqk + P, pos[t]);
    }
    TAP(q_nope, l, MLA_TAP_Q_NOPE);
    TAP(q_pe, l, MLA_TAP_Q_PE);
    for (int64_t i = 0; i < T * H; i++) {
        memcpy(q_nope + i * P, q + i * Dqk, (size_t)P * sizeof(double));
        memcpy(q_pe + i * R, q + i * Dqk + P, (size_t)R * sizeof(double));
    }
    TAP(core, l, MLA_TAP_ATTN_CORE);
    TAP(lse, l, MLA_TAP_LSE);
    double *q_abs = absorbed ? tap_new(c, l, MLA_TAP_Q_ABSORBED, T) : NULL;
    if (absorbed && !q_abs) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: tap q_absorbed");
        goto done;
    }
    if (!absorbed) { /* a tap of the other form must not survive from an earlier call */
        mla_tensor_free(c->ltaps[l * MLA_TAP_COUNT + MLA_TAP_Q_ABSORBED]);
        c->ltaps[l * MLA_TAP_COUNT + MLA_TAP_Q_ABSORBED] = NULL;
    }
    for (int s = 0, t0 = 0; s < b->n_seqs; t0 += b->n_new[s], s++) {
        int seq = b->seq_ids[s], n = b->n_new[s];
        int64_t np = b->n_past[s];
        if (c->attn_ops) { /* hybrid: the operator reads the new rows from the cache too */
            for (int i = 0; i < n; i++)
                if ((st = ref_cache_write(c, l, seq, np + i, kv_c + (t0 + i) * C, k_pe + (t0 + i) * R)))
                    goto done;
            st = absorbed ? ref_attn_mqa_delegate(c, l, seq, np, n, q + t0 * H * Dqk, q_abs + t0 * H * C,
                                                  core + t0 * H * V, lse + t0 * H)
                          : ref_attn_mha_delegate(c, l, seq, np, n, q + t0 * H * Dqk, kv_c + t0 * C,
                                                  k_pe + t0 * R, core + t0 * H * V, lse + t0 * H);
            if (st) goto done;
            continue;
        }
        if (!absorbed && (st = ref_attn_mha(c, l, seq, np, n, q + t0 * H * Dqk, kv_c + t0 * C, k_pe + t0 * R,
                                            core + t0 * H * V, lse + t0 * H)))
            goto done;
        for (int i = 0; i < n; i++)
            if ((st = ref_cache_write(c, l, seq, np + i, kv_c + (t0 + i) * C, k_pe + (t0 + i) * R)))
                goto done;
        if (absorbed && (st = ref_attn_mqa(c, l, seq, np, n, q + t0 * H * Dqk, q_abs + t0 * H * C,
                                           core + t0 * H * V, lse + t0 * H)))
            goto done;
    }
    TAP(attn_out, l, MLA_TAP_ATTN_OUT);
    ref_linear(c, core, lw->o, T, H * V, D, 1, attn_out);
    for (int64_t i = 0; i < T * D; i++) hbuf[i] = ref_rnd(c, x[i] + attn_out[i]);
    TAP(ffn_norm, l, MLA_TAP_FFN_NORM);
    ref_rmsnorm(c, hbuf, D, lw->ffn_norm, T, D, cf->rms_norm_eps, ffn_norm, D);
    TAP(ffn_out, l, MLA_TAP_FFN_OUT);
    if (mla_config_is_moe_layer(cf, l)) {
        TAP(rl, l, MLA_TAP_ROUTER_LOGITS);
        TAP(ids, l, MLA_TAP_TOPK_IDS);
        TAP(tw, l, MLA_TAP_TOPK_WEIGHTS);
        ref_moe(c, lw, ffn_norm, T, rl, (int32_t *)ids, tw, ffn_out);
    } else {
        ref_mlp(c, ffn_norm, T, lw->w1, lw->w2, lw->w3, cf->intermediate_size, ffn_out);
    }
    TAP(out, l, MLA_TAP_OUT);
    for (int64_t i = 0; i < T * D; i++) x[i] = out[i] = ref_rnd(c, hbuf[i] + ffn_out[i]);
done:
    free(q);
    free(cq);
    free(kva);
    free(hbuf);
    return st;
}

static mla_status ref_forward(ref_engine *e, const mla_batch *b, int absorbed)
{
    ref_ctx *c = &e->c;
    mla_status st = check_batch(c, b);
    if (st) return st;
    const mla_config *cf = c->cfg;
    int64_t T = mla_batch_tokens(b), D = cf->hidden_size, N = cf->vocab_size;
    ref_taps_clear(c);
    double *x = malloc((size_t)(T * D + 1) * sizeof(double));
    int64_t *pos = malloc((size_t)(T + 1) * sizeof(int64_t));
    if (!x || !pos) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: activations");
        goto done;
    }
    for (int s = 0, t = 0; s < b->n_seqs; s++)
        for (int i = 0; i < b->n_new[s]; i++, t++) pos[t] = b->n_past[s] + i;
    TAP(embed, 0, MLA_TAP_EMBED);
    for (int64_t t = 0; t < T; t++)
        for (int64_t d = 0; d < D; d++) x[t * D + d] = embed[t * D + d] = c->embed[(int64_t)b->tokens[t] * D + d];
    for (int l = 0; l < cf->num_hidden_layers; l++) {
        if ((st = ref_layer_load(c, l))) goto done;
        st = ref_layer_forward(c, l, b, pos, absorbed, x, T);
        if (e->stream_weights) ref_layer_release(c, l);
        if (st) goto done;
    }
    TAP(fin, 0, MLA_TAP_FINAL_NORM);
    ref_rmsnorm(c, x, D, c->final_norm, T, D, cf->rms_norm_eps, fin, D);
    TAP(logits, 0, MLA_TAP_LOGITS);
    ref_matmul_nt_batch(fin, c->lm_head, T, D, N, logits);
    ref_rnd32_vec(c, logits, T * N);
    for (int s = 0; s < b->n_seqs; s++) c->seq_len[b->seq_ids[s]] += b->n_new[s];
done:
    free(x);
    free(pos);
    return st;
}

static mla_status ref_forward_mha(void *ctx, const mla_batch *b) { return ref_forward(ctx, b, 0); }
static mla_status ref_forward_mqa(void *ctx, const mla_batch *b) { return ref_forward(ctx, b, 1); }

static mla_status ref_read_tap(void *ctx, int layer, mla_tap tap, mla_tensor **out)
{
    ref_ctx *c = &((ref_engine *)ctx)->c;
    *out = NULL;
    if (!c->cfg) return mla_errorf(MLA_ERR_INVALID, "reference: read_tap before load");
    if ((unsigned)tap >= MLA_TAP_COUNT) return mla_errorf(MLA_ERR_INVALID, "reference: tap %d", (int)tap);
    const mla_tensor *t;
    if (mla_tap_is_layer(tap)) {
        if (layer < 0 || layer >= c->cfg->num_hidden_layers)
            return mla_errorf(MLA_ERR_INVALID, "reference: layer %d: expected 0..%d", layer,
                              c->cfg->num_hidden_layers - 1);
        t = c->ltaps[layer * MLA_TAP_COUNT + tap];
    } else {
        t = c->taps[tap];
    }
    if (!t)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "reference: tap %s not produced by the last call (layer %d)",
                          mla_tap_name(tap), layer);
    return mla_tensor_clone(t, out);
}

static mla_status ref_read_kv(void *ctx, int layer, int seq_id, mla_tensor **out)
{
    ref_ctx *c = &((ref_engine *)ctx)->c;
    *out = NULL;
    if (!c->cfg || layer < 0 || layer >= c->cfg->num_hidden_layers || seq_id < 0 ||
        seq_id >= c->opts.max_seqs)
        return mla_errorf(MLA_ERR_INVALID, "reference: read_kv layer %d seq %d out of range", layer, seq_id);
    int64_t shape[2] = {c->seq_len[seq_id], c->cfg->kv_lora_rank + c->cfg->qk_rope_head_dim};
    mla_status st = mla_tensor_new(out, MLA_F64, 2, shape, "kv");
    if (st) return st;
    for (int64_t j = 0; j < shape[0]; j++)
        ref_cache_read(c, layer, seq_id, j, (double *)(*out)->data + j * shape[1]);
    return MLA_OK;
}

static const mla_backend_ops ref_ops = {
    .abi_version = MLA_BACKEND_ABI_VERSION,
    .name = "ref",
    .create = ref_create,
    .supports = ref_supports,
    .load = ref_load,
    .reset = ref_reset,
    .forward_mha = ref_forward_mha,
    .forward_mqa = ref_forward_mqa,
    .read_tap = ref_read_tap,
    .read_kv = ref_read_kv,
    .destroy = ref_destroy,
};

const mla_backend_ops *mla_ref_backend(void) { return &ref_ops; }

mla_status mla_ref_set_attn_ops(void *ctx, const mla_attn_ops *ops)
{
    ref_engine *e = ctx;
    if (!e) return mla_errorf(MLA_ERR_INVALID, "reference: set_attn_ops: context is NULL");
    if (ops) { /* the hybrid runs whole models: both forms (mla/abi_check.h) */
        char who[160];
        snprintf(who, sizeof who, "reference: attention operator %s", ops->name ? ops->name : "?");
        mla_status st = mla_attn_ops_check(ops, MLA_ATTN_USE_MODEL, who);
        if (st) return st;
    }
    e->c.attn_ops = ops;
    return MLA_OK;
}
