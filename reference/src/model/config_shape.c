/* config_shape.c: the HF tensor names a config implies and their shapes (mla-spec.md §a.3).
 * PyTorch Linear weights are [out, in]. Shared experts are one MLP of width
 * n_shared_experts * moe_intermediate_size (HF DeepseekV3MoE). */
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a decimal index without sign or leading zeros at *p; advances *p. -1 when none. */
static int parse_index(const char **p)
{
    const char *s = *p;
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9')) return -1;
    long v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > 1 << 24) return -1;
        s++;
    }
    *p = s;
    return (int)v;
}

static int set2(int *ndim, int64_t *shape, int64_t a, int64_t b)
{
    *ndim = 2;
    shape[0] = a;
    shape[1] = b;
    return 0;
}

static int set1(int *ndim, int64_t *shape, int64_t a)
{
    *ndim = 1;
    shape[0] = a;
    return 0;
}

/* gate_proj / up_proj / down_proj of an MLP of width w. */
static int mlp_shape(const mla_config *c, const char *s, int64_t w, int *ndim, int64_t *shape)
{
    if (!strcmp(s, "gate_proj.weight") || !strcmp(s, "up_proj.weight")) return set2(ndim, shape, w, c->hidden_size);
    if (!strcmp(s, "down_proj.weight")) return set2(ndim, shape, c->hidden_size, w);
    return -1;
}

static int layer_shape(const mla_config *c, int layer, const char *s, int *ndim, int64_t *shape)
{
    int64_t D = c->hidden_size, H = c->num_attention_heads, Lq = c->q_lora_rank, C = c->kv_lora_rank;
    int64_t P = c->qk_nope_head_dim, R = c->qk_rope_head_dim, V = c->v_head_dim;
    if (!strcmp(s, "input_layernorm.weight") || !strcmp(s, "post_attention_layernorm.weight"))
        return set1(ndim, shape, D);
    if (!strncmp(s, "self_attn.", 10)) {
        s += 10;
        if (Lq > 0) {
            if (!strcmp(s, "q_a_proj.weight")) return set2(ndim, shape, Lq, D);
            if (!strcmp(s, "q_a_layernorm.weight")) return set1(ndim, shape, Lq);
            if (!strcmp(s, "q_b_proj.weight")) return set2(ndim, shape, H * (P + R), Lq);
        } else if (!strcmp(s, "q_proj.weight")) {
            return set2(ndim, shape, H * (P + R), D);
        }
        if (!strcmp(s, "kv_a_proj_with_mqa.weight")) return set2(ndim, shape, C + R, D);
        if (!strcmp(s, "kv_a_layernorm.weight")) return set1(ndim, shape, C);
        if (!strcmp(s, "kv_b_proj.weight")) return set2(ndim, shape, H * (P + V), C);
        if (!strcmp(s, "o_proj.weight")) return set2(ndim, shape, D, H * V);
        return -1;
    }
    if (strncmp(s, "mlp.", 4)) return -1;
    s += 4;
    if (!mla_config_is_moe_layer(c, layer)) return mlp_shape(c, s, c->intermediate_size, ndim, shape);
    int64_t E = c->n_routed_experts, W = c->moe_intermediate_size;
    if (!strcmp(s, "gate.weight")) return set2(ndim, shape, E, D);
    if (!strcmp(s, "gate.e_score_correction_bias"))
        return c->has_e_score_correction_bias ? set1(ndim, shape, E) : -1;
    if (!strncmp(s, "shared_experts.", 15))
        return c->n_shared_experts > 0 ? mlp_shape(c, s + 15, (int64_t)c->n_shared_experts * W, ndim, shape) : -1;
    if (!strncmp(s, "experts.", 8)) {
        const char *p = s + 8;
        int e = parse_index(&p);
        if (e < 0 || e >= E || *p != '.') return -1;
        return mlp_shape(c, p + 1, W, ndim, shape);
    }
    return -1;
}

static int base_shape(const mla_config *c, const char *name, int *ndim, int64_t *shape)
{
    if (!strcmp(name, "model.embed_tokens.weight") || !strcmp(name, "lm_head.weight"))
        return set2(ndim, shape, c->vocab_size, c->hidden_size);
    if (!strcmp(name, "model.norm.weight")) return set1(ndim, shape, c->hidden_size);
    if (strncmp(name, "model.layers.", 13)) return -1;
    const char *p = name + 13;
    int layer = parse_index(&p);
    if (layer < 0 || layer >= c->num_hidden_layers || *p != '.') return -1;
    return layer_shape(c, layer, p + 1, ndim, shape);
}

int mla_config_tensor_shape(const mla_config *c, const char *hf_name, int *ndim, int64_t *shape)
{
    if (!c || !hf_name || !ndim || !shape) return -1;
    static const char sfx[] = "_scale_inv";
    size_t n = strlen(hf_name), k = sizeof sfx - 1;
    if (n > k && !strcmp(hf_name + n - k, sfx)) {
        /* 128x128 block scales of a 2-D weight: [ceil(out/B), ceil(in/B)] */
        char base[512];
        if (n - k >= sizeof base) return -1;
        memcpy(base, hf_name, n - k);
        base[n - k] = '\0';
        int64_t s[MLA_MAX_DIMS];
        int nd;
        if (base_shape(c, base, &nd, s) || nd != 2) return -1;
        int64_t B = c->weight_block_size > 0 ? c->weight_block_size : 128;
        return set2(ndim, shape, (s[0] + B - 1) / B, (s[1] + B - 1) / B);
    }
    return base_shape(c, hf_name, ndim, shape);
}

void name_list_free(name_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static mla_status name_add(name_list *l, const char *fmt_prefix, int layer, const char *suffix)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return mla_errorf(MLA_ERR_NOMEM, "tensor name list: %d names", cap);
        l->v = v;
        l->cap = cap;
    }
    char buf[256];
    if (layer >= 0) snprintf(buf, sizeof buf, "%s%d.%s", fmt_prefix, layer, suffix);
    else snprintf(buf, sizeof buf, "%s%s", fmt_prefix, suffix);
    l->v[l->n] = strdup(buf);
    if (!l->v[l->n]) return mla_errorf(MLA_ERR_NOMEM, "tensor name list: %s", buf);
    l->n++;
    return MLA_OK;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

#define ADD(pre, layer, sfx)                                   \
    do {                                                       \
        mla_status st_ = name_add(out, pre, layer, sfx);       \
        if (st_) {                                             \
            name_list_free(out);                               \
            return st_;                                        \
        }                                                      \
    } while (0)

mla_status model_required_names(const mla_config *c, name_list *out)
{
    memset(out, 0, sizeof *out);
    static const char *mlp[] = { "gate_proj.weight", "up_proj.weight", "down_proj.weight" };
    ADD("model.embed_tokens.weight", -1, "");
    ADD("model.norm.weight", -1, "");
    if (!c->tie_word_embeddings) ADD("lm_head.weight", -1, "");
    for (int l = 0; l < c->num_hidden_layers; l++) {
        const char *pre = "model.layers.";
        ADD(pre, l, "input_layernorm.weight");
        ADD(pre, l, "post_attention_layernorm.weight");
        if (c->q_lora_rank > 0) {
            ADD(pre, l, "self_attn.q_a_proj.weight");
            ADD(pre, l, "self_attn.q_a_layernorm.weight");
            ADD(pre, l, "self_attn.q_b_proj.weight");
        } else {
            ADD(pre, l, "self_attn.q_proj.weight");
        }
        ADD(pre, l, "self_attn.kv_a_proj_with_mqa.weight");
        ADD(pre, l, "self_attn.kv_a_layernorm.weight");
        ADD(pre, l, "self_attn.kv_b_proj.weight");
        ADD(pre, l, "self_attn.o_proj.weight");
        char sfx[96];
        if (!mla_config_is_moe_layer(c, l)) {
            for (int k = 0; k < 3; k++) {
                snprintf(sfx, sizeof sfx, "mlp.%s", mlp[k]);
                ADD(pre, l, sfx);
            }
            continue;
        }
        ADD(pre, l, "mlp.gate.weight");
        if (c->has_e_score_correction_bias) ADD(pre, l, "mlp.gate.e_score_correction_bias");
        for (int e = 0; e < c->n_routed_experts; e++)
            for (int k = 0; k < 3; k++) {
                snprintf(sfx, sizeof sfx, "mlp.experts.%d.%s", e, mlp[k]);
                ADD(pre, l, sfx);
            }
        if (c->n_shared_experts > 0)
            for (int k = 0; k < 3; k++) {
                snprintf(sfx, sizeof sfx, "mlp.shared_experts.%s", mlp[k]);
                ADD(pre, l, sfx);
            }
    }
    qsort(out->v, (size_t)out->n, sizeof *out->v, name_cmp);
    return MLA_OK;
}
