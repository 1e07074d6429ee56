/* config_shape.c: the HF tensor names a config implies and their shapes (mla-spec.md §a.3).
 * The per-layer names and shapes come from MLA_LAYER_WEIGHT_LIST (mla/weights.h); this file adds the
 * globals and the fp8 "_scale_inv" siblings. */
#include "model_internal.h"
#include "mla/weights.h"

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

/* Matches suffix s against row w's suffix, whose "%d" (expert rows) takes an index below n_idx. */
static int suffix_matches(const char *s, const char *pattern, int n_idx)
{
    const char *d = strstr(pattern, "%d");
    if (!d) return !strcmp(s, pattern);
    size_t k = (size_t)(d - pattern);
    if (strncmp(s, pattern, k)) return 0;
    const char *p = s + k;
    int e = parse_index(&p);
    return e >= 0 && e < n_idx && !strcmp(p, d + 2);
}

/* The row of MLA_LAYER_WEIGHT_LIST that layer `layer` holds under suffix s. */
static int layer_shape(const mla_config *c, int layer, const char *s, int *ndim, int64_t *shape)
{
    for (int w = 0; w < MLA_LW_COUNT; w++) {
        int n = mla_lw_count(c, layer, (mla_layer_weight)w);
        if (n > 0 && suffix_matches(s, mla_lw_suffix((mla_layer_weight)w), n)) {
            int64_t sh[2];
            int nd = mla_lw_shape(c, (mla_layer_weight)w, sh);
            return nd == 2 ? set2(ndim, shape, sh[0], sh[1]) : set1(ndim, shape, sh[0]);
        }
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

static mla_status name_add(name_list *l, const char *name)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return mla_errorf(MLA_ERR_NOMEM, "tensor name list: %d names", cap);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = strdup(name);
    if (!l->v[l->n]) return mla_errorf(MLA_ERR_NOMEM, "tensor name list: %s", name);
    l->n++;
    return MLA_OK;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

#define ADD(name)                                              \
    do {                                                       \
        mla_status st_ = name_add(out, name);                  \
        if (st_) {                                             \
            name_list_free(out);                               \
            return st_;                                        \
        }                                                      \
    } while (0)

mla_status model_required_names(const mla_config *c, name_list *out)
{
    memset(out, 0, sizeof *out);
    ADD("model.embed_tokens.weight");
    ADD("model.norm.weight");
    if (!c->tie_word_embeddings) ADD("lm_head.weight");
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int w = 0; w < MLA_LW_COUNT; w++) {
            int n = mla_lw_count(c, l, (mla_layer_weight)w);
            for (int e = 0; e < n; e++) {
                char nm[256];
                if (mla_lw_name(nm, sizeof nm, l, (mla_layer_weight)w, e)) {
                    name_list_free(out);
                    return mla_errorf(MLA_ERR_INVALID, "tensor name list: layer %d %s: name too long", l,
                                      mla_lw_suffix((mla_layer_weight)w));
                }
                ADD(nm);
            }
        }
    qsort(out->v, (size_t)out->n, sizeof *out->v, name_cmp);
    return MLA_OK;
}
