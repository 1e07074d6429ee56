/* engine.c: the reference backend (the vtable of backend.h): create, load (numerics and faults
 * resolved once, numerics.h), reset, read_tap, read_kv. The forward pass itself is forward.c. */
#include "mla_ref/ref.h"
#include "ref_internal.h"
#include "mla/abi_check.h"
#include "mla_model/model.h"

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
    /* the mask and LSE faults act inside attention.c, which the operator replaces */
    if (e && e->c.attn_ops && f == MLA_FEAT_FAULTS) return 0;
    return f < MLA_FEAT_COUNT;
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
    ref_numerics_resolve(c->cfg, &c->opts, &c->nm, &c->faults);
    const mla_config *cf = c->cfg;
    c->ad = (ref_attn_dims){.H = cf->num_attention_heads, .P = cf->qk_nope_head_dim, .R = cf->qk_rope_head_dim,
                            .V = cf->v_head_dim, .C = cf->kv_lora_rank};
    c->moe = (ref_moe_cfg){
        .D = cf->hidden_size, .E = cf->n_routed_experts, .K = cf->num_experts_per_tok,
        .Im = cf->moe_intermediate_size, .n_shared = cf->n_shared_experts, .n_group = cf->n_group,
        .topk_group = cf->topk_group, .group_limited = cf->topk_method != MLA_TOPK_GREEDY,
        .sigmoid = cf->scoring_func == MLA_SCORE_SIGMOID, .norm_topk_prob = cf->norm_topk_prob,
        .routed_scale = c->faults.routed_scale,
    };
    int L = c->cfg->num_hidden_layers;
    c->layers = calloc((size_t)L, sizeof *c->layers);
    c->ltaps = calloc((size_t)L * MLA_TAP_COUNT, sizeof *c->ltaps);
    c->inv_freq = malloc((size_t)(c->cfg->qk_rope_head_dim / 2 + 1) * sizeof(double));
    if (!c->layers || !c->ltaps || !c->inv_freq) return mla_errorf(MLA_ERR_NOMEM, "reference: load");
    mla_config_inv_freq(c->cfg, c->inv_freq);
    c->rope = (ref_rope_table){.R = cf->qk_rope_head_dim, .inv_freq = c->inv_freq,
                               .mag = mla_config_rope_attn_factor(cf)};
    int64_t total = 0;
    for (int l = 0; l < L; l++) total += layer_param_count(c->cfg, l) * (int64_t)sizeof(double);
    e->stream_weights = total > REF_RESIDENT_BYTES;
    mla_status st = ref_globals_load(c);
    if (st) return st;
    return ref_cache_init(c);
}

int ref_is_fp8_linear_profile(const ref_ctx *c) { return c->nm.fp8_linear; }

static mla_status ref_reset(void *ctx)
{
    ref_ctx *c = &((ref_engine *)ctx)->c;
    if (!c->cfg) return mla_errorf(MLA_ERR_INVALID, "reference: reset before load");
    memset(c->seq_len, 0, (size_t)c->opts.max_seqs * sizeof *c->seq_len);
    ref_taps_clear(c);
    return MLA_OK;
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

/* A forward call: the batch checked against this context, then the flat pass of forward.c. */
static mla_status ref_forward_checked(ref_engine *e, const mla_batch *b, int absorbed)
{
    mla_status st = check_batch(&e->c, b);
    if (st) return st;
    mla_batch nb; /* n_new == 0 entries are no-ops (rule 4): the forward pass never sees them */
    int32_t *buf;
    if ((st = mla_batch_drop_empty(b, &nb, &buf))) return st;
    if (nb.n_seqs == 0) ref_taps_clear(&e->c);
    else st = ref_forward(&e->c, &nb, absorbed, e->stream_weights);
    free(buf);
    return st;
}

static mla_status ref_forward_mha(void *ctx, const mla_batch *b) { return ref_forward_checked(ctx, b, 0); }
static mla_status ref_forward_mqa(void *ctx, const mla_batch *b) { return ref_forward_checked(ctx, b, 1); }

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

/* use: MLA_ATTN_USE_MODEL (both forms) or MLA_ATTN_USE_OPS (one form; the reference does the other). */
static mla_status set_attn(void *ctx, const mla_attn_ops *ops, mla_attn_use use)
{
    ref_engine *e = ctx;
    if (!e) return mla_errorf(MLA_ERR_INVALID, "reference: set_attn_ops: context is NULL");
    if (ops) {
        char who[160];
        snprintf(who, sizeof who, "reference: attention operator %s", ops->name ? ops->name : "?");
        mla_status st = mla_attn_ops_check(ops, use, who);
        if (st) return st;
    }
    e->c.attn_ops = ops;
    return MLA_OK;
}

/* the hybrid runs whole models: both forms (mla/abi_check.h) */
mla_status mla_ref_set_attn_ops(void *ctx, const mla_attn_ops *ops) { return set_attn(ctx, ops, MLA_ATTN_USE_MODEL); }

mla_status mla_ref_set_attn_ops_partial(void *ctx, const mla_attn_ops *ops)
{
    return set_attn(ctx, ops, MLA_ATTN_USE_OPS);
}
