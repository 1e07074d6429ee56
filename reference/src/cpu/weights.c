/* weights.c: a layer's weights converted to double when first needed and stored as the profile
 * says: bf16-rounded for every low-precision profile, and 128x128 block-fp8 quantized then
 * dequantized for the fp8 linears of fp8w. Layers can be released after use so a checkpoint larger
 * than memory in f64 still runs one layer at a time. */
#include "ref_internal.h"
#include "mla/weights.h"
#include "mla_model/model.h"

#include <stdio.h>
#include <stdlib.h>

/* Loads one tensor in double, stored as `store` says (mla_lw_store, weights.h). */
static mla_status load_tensor(ref_ctx *c, const char *name, mla_lw_store store, double **out)
{
    int64_t n = 0;
    mla_status st = mla_model_tensor_f64(c->model, name, out, &n);
    if (st) return st;
    double *w = *out;
    if (c->round && store != MLA_LW_KEEP)
        for (int64_t i = 0; i < n; i++) w[i] = mla_round_bf16(w[i]);
    if (store == MLA_LW_FP8_LINEAR && ref_is_fp8_linear_profile(c)) {
        int nd;
        int64_t shape[MLA_MAX_DIMS];
        if (mla_config_tensor_shape(c->cfg, name, &nd, shape) != 0 || nd != 2)
            return mla_errorf(MLA_ERR_SHAPE, "reference: %s: expected a 2-d linear weight", name);
        int64_t rows = shape[0], cols = shape[1];
        int64_t nb = ((rows + 127) / 128) * ((cols + 127) / 128);
        uint8_t *code = malloc((size_t)n);
        float *sc = malloc((size_t)nb * sizeof(float));
        if (!code || !sc) {
            free(code);
            free(sc);
            return mla_errorf(MLA_ERR_NOMEM, "reference: fp8 weight %s", name);
        }
        mla_block_quant(w, rows, cols, 128, code, sc);
        mla_block_dequant(code, sc, rows, cols, 128, w);
        free(code);
        free(sc);
    }
    return MLA_OK;
}

/* Where row w (expert e) of the weight table lives in a ref_layer. */
static double **layer_slot(ref_layer *lw, mla_layer_weight w, int e)
{
    switch (w) {
    case MLA_LW_ATTN_NORM: return &lw->attn_norm;
    case MLA_LW_FFN_NORM: return &lw->ffn_norm;
    case MLA_LW_Q_A: return &lw->q_a;
    case MLA_LW_Q_A_NORM: return &lw->q_a_norm;
    case MLA_LW_Q_B: return &lw->q_b;
    case MLA_LW_Q: return &lw->q;
    case MLA_LW_KV_A: return &lw->kv_a;
    case MLA_LW_KV_A_NORM: return &lw->kv_a_norm;
    case MLA_LW_KV_B: return &lw->kv_b;
    case MLA_LW_O: return &lw->o;
    case MLA_LW_MLP_GATE: return &lw->w1;
    case MLA_LW_MLP_DOWN: return &lw->w2;
    case MLA_LW_MLP_UP: return &lw->w3;
    case MLA_LW_ROUTER: return &lw->gate;
    case MLA_LW_ROUTER_BIAS: return &lw->bias;
    case MLA_LW_EXPERT_GATE: return &lw->e_w1[e];
    case MLA_LW_EXPERT_DOWN: return &lw->e_w2[e];
    case MLA_LW_EXPERT_UP: return &lw->e_w3[e];
    case MLA_LW_SHARED_GATE: return &lw->s_w1;
    case MLA_LW_SHARED_DOWN: return &lw->s_w2;
    case MLA_LW_SHARED_UP: return &lw->s_w3;
    case MLA_LW_COUNT: break;
    }
    return NULL;
}

static mla_status load_one(ref_ctx *c, int l, mla_layer_weight w, int e)
{
    char name[160];
    if (mla_lw_name(name, sizeof name, l, w, e))
        return mla_errorf(MLA_ERR_INVALID, "reference: layer %d %s: name too long", l, mla_lw_suffix(w));
    return load_tensor(c, name, mla_lw_store_of(w), layer_slot(&c->layers[l], w, e));
}

/* Every tensor of layer l from the weight table, in its order; the experts one by one (gate, down,
 * up of expert 0, then of expert 1, ...). */
mla_status ref_layer_load(ref_ctx *c, int l)
{
    ref_layer *lw = &c->layers[l];
    if (lw->loaded) return MLA_OK;
    const mla_config *cf = c->cfg;
    mla_status st;
    int E = mla_lw_count(cf, l, MLA_LW_EXPERT_GATE);
    if (E > 0) {
        lw->e_w1 = calloc((size_t)E, sizeof(double *));
        lw->e_w2 = calloc((size_t)E, sizeof(double *));
        lw->e_w3 = calloc((size_t)E, sizeof(double *));
        if (!lw->e_w1 || !lw->e_w2 || !lw->e_w3) return mla_errorf(MLA_ERR_NOMEM, "reference: experts");
    }
    for (int w = 0; w < MLA_LW_COUNT; w++) {
        if (mla_lw_when_of((mla_layer_weight)w) == MLA_LW_EXPERT) {
            if (w != MLA_LW_EXPERT_GATE) continue; /* the three expert rows load together */
            for (int e = 0; e < E; e++)
                for (int k = MLA_LW_EXPERT_GATE; k <= MLA_LW_EXPERT_UP; k++)
                    if ((st = load_one(c, l, (mla_layer_weight)k, e)) != MLA_OK) return st;
            continue;
        }
        if (mla_lw_count(cf, l, (mla_layer_weight)w) && (st = load_one(c, l, (mla_layer_weight)w, 0)) != MLA_OK)
            return st;
    }
    lw->loaded = 1;
    return MLA_OK;
}

void ref_layer_release(ref_ctx *c, int l)
{
    ref_layer *lw = &c->layers[l];
    double **plain[] = {&lw->attn_norm, &lw->ffn_norm, &lw->q_a, &lw->q_a_norm, &lw->q_b, &lw->q,
                        &lw->kv_a, &lw->kv_a_norm, &lw->kv_b, &lw->o, &lw->w1, &lw->w2, &lw->w3,
                        &lw->gate, &lw->bias, &lw->s_w1, &lw->s_w2, &lw->s_w3};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        free(*plain[i]);
        *plain[i] = NULL;
    }
    if (lw->e_w1)
        for (int e = 0; e < c->cfg->n_routed_experts; e++) {
            free(lw->e_w1[e]);
            free(lw->e_w2[e]);
            free(lw->e_w3[e]);
        }
    free(lw->e_w1);
    free(lw->e_w2);
    free(lw->e_w3);
    lw->e_w1 = lw->e_w2 = lw->e_w3 = NULL;
    lw->loaded = 0;
}

mla_status ref_globals_load(ref_ctx *c)
{
    mla_status st;
    if ((st = load_tensor(c, "model.embed_tokens.weight", MLA_LW_BF16, &c->embed))) return st;
    if ((st = load_tensor(c, "model.norm.weight", MLA_LW_KEEP, &c->final_norm))) return st;
    if (c->cfg->tie_word_embeddings) return load_tensor(c, "model.embed_tokens.weight", MLA_LW_BF16, &c->lm_head);
    return load_tensor(c, "lm_head.weight", MLA_LW_BF16, &c->lm_head);
}
