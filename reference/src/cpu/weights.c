/* weights.c: a layer's weights converted to double when first needed and stored as the profile
 * says: bf16-rounded for every low-precision profile, and 128x128 block-fp8 quantized then
 * dequantized for the fp8 linears of fp8w. Layers can be released after use so a checkpoint larger
 * than memory in f64 still runs one layer at a time. */
#include "ref_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* kind: 0 = keep (norms, bias, fp64), 1 = bf16 storage, 2 = bf16 + fp8 linear under fp8w */
static mla_status load_tensor(ref_ctx *c, const char *name, int kind, double **out)
{
    int64_t n = 0;
    mla_status st = mla_model_tensor_f64(c->model, name, out, &n);
    if (st) return st;
    double *w = *out;
    if (c->round && kind >= 1)
        for (int64_t i = 0; i < n; i++) w[i] = mla_round_bf16(w[i]);
    if (kind == 2 && ref_is_fp8_linear_profile(c)) {
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

#define LOADW(field, suffix, kind)                                              \
    do {                                                                        \
        snprintf(name, sizeof name, "model.layers.%d.%s", l, suffix);           \
        if ((st = load_tensor(c, name, kind, &lw->field)) != MLA_OK) return st; \
    } while (0)

mla_status ref_layer_load(ref_ctx *c, int l)
{
    ref_layer *lw = &c->layers[l];
    if (lw->loaded) return MLA_OK;
    const mla_config *cf = c->cfg;
    char name[160];
    mla_status st;
    LOADW(attn_norm, "input_layernorm.weight", 0);
    LOADW(ffn_norm, "post_attention_layernorm.weight", 0);
    if (cf->q_lora_rank > 0) {
        LOADW(q_a, "self_attn.q_a_proj.weight", 2);
        LOADW(q_a_norm, "self_attn.q_a_layernorm.weight", 0);
        LOADW(q_b, "self_attn.q_b_proj.weight", 2);
    } else {
        LOADW(q, "self_attn.q_proj.weight", 2);
    }
    LOADW(kv_a, "self_attn.kv_a_proj_with_mqa.weight", 2);
    LOADW(kv_a_norm, "self_attn.kv_a_layernorm.weight", 0);
    LOADW(kv_b, "self_attn.kv_b_proj.weight", 1);
    LOADW(o, "self_attn.o_proj.weight", 2);
    if (mla_config_is_moe_layer(cf, l)) {
        int E = cf->n_routed_experts;
        LOADW(gate, "mlp.gate.weight", 0);
        if (cf->has_e_score_correction_bias) LOADW(bias, "mlp.gate.e_score_correction_bias", 0);
        lw->e_w1 = calloc((size_t)E, sizeof(double *));
        lw->e_w2 = calloc((size_t)E, sizeof(double *));
        lw->e_w3 = calloc((size_t)E, sizeof(double *));
        if (!lw->e_w1 || !lw->e_w2 || !lw->e_w3) return mla_errorf(MLA_ERR_NOMEM, "reference: experts");
        for (int e = 0; e < E; e++) {
            char sfx[96];
            snprintf(sfx, sizeof sfx, "mlp.experts.%d.gate_proj.weight", e);
            LOADW(e_w1[e], sfx, 2);
            snprintf(sfx, sizeof sfx, "mlp.experts.%d.down_proj.weight", e);
            LOADW(e_w2[e], sfx, 2);
            snprintf(sfx, sizeof sfx, "mlp.experts.%d.up_proj.weight", e);
            LOADW(e_w3[e], sfx, 2);
        }
        if (cf->n_shared_experts > 0) {
            LOADW(s_w1, "mlp.shared_experts.gate_proj.weight", 2);
            LOADW(s_w2, "mlp.shared_experts.down_proj.weight", 2);
            LOADW(s_w3, "mlp.shared_experts.up_proj.weight", 2);
        }
    } else {
        LOADW(w1, "mlp.gate_proj.weight", 2);
        LOADW(w2, "mlp.down_proj.weight", 2);
        LOADW(w3, "mlp.up_proj.weight", 2);
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
    if ((st = load_tensor(c, "model.embed_tokens.weight", 1, &c->embed))) return st;
    if ((st = load_tensor(c, "model.norm.weight", 0, &c->final_norm))) return st;
    if (c->cfg->tie_word_embeddings) return load_tensor(c, "model.embed_tokens.weight", 1, &c->lm_head);
    return load_tensor(c, "lm_head.weight", 1, &c->lm_head);
}
