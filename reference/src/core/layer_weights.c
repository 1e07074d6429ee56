/* layer_weights.c: lookups over MLA_LAYER_WEIGHT_LIST (weights.h), the one per-layer weight table. */
#include "mla/weights.h"

#include <stdio.h>

const char *mla_lw_suffix(mla_layer_weight w)
{
    switch (w) {
#define LW_SUFFIX(id, sfx, when, store, ndim, d0, d1) \
    case id:                                          \
        return sfx;
        MLA_LAYER_WEIGHT_LIST(LW_SUFFIX, c)
#undef LW_SUFFIX
    default:
        return "?";
    }
}

mla_lw_when mla_lw_when_of(mla_layer_weight w)
{
    switch (w) {
#define LW_WHEN(id, sfx, when, store, ndim, d0, d1) \
    case id:                                        \
        return when;
        MLA_LAYER_WEIGHT_LIST(LW_WHEN, c)
#undef LW_WHEN
    default:
        return MLA_LW_EVERY;
    }
}

mla_lw_store mla_lw_store_of(mla_layer_weight w)
{
    switch (w) {
#define LW_STORE(id, sfx, when, store, ndim, d0, d1) \
    case id:                                         \
        return store;
        MLA_LAYER_WEIGHT_LIST(LW_STORE, c)
#undef LW_STORE
    default:
        return MLA_LW_KEEP;
    }
}

int mla_lw_count(const mla_config *c, int layer, mla_layer_weight w)
{
    int moe = mla_config_is_moe_layer(c, layer);
    switch (mla_lw_when_of(w)) {
    case MLA_LW_EVERY: return 1;
    case MLA_LW_Q_LORA: return c->q_lora_rank > 0;
    case MLA_LW_NO_Q_LORA: return c->q_lora_rank <= 0;
    case MLA_LW_DENSE: return !moe;
    case MLA_LW_MOE: return moe;
    case MLA_LW_MOE_BIAS: return moe && c->has_e_score_correction_bias;
    case MLA_LW_EXPERT: return moe ? c->n_routed_experts : 0;
    case MLA_LW_SHARED: return moe && c->n_shared_experts > 0;
    }
    return 0;
}

int mla_lw_shape(const mla_config *c, mla_layer_weight w, int64_t shape[2])
{
    switch (w) {
#define LW_SHAPE(id, sfx, when, store, ndim, d0, d1) \
    case id:                                         \
        shape[0] = d0;                               \
        shape[1] = d1;                               \
        return ndim;
        MLA_LAYER_WEIGHT_LIST(LW_SHAPE, c)
#undef LW_SHAPE
    default:
        shape[0] = shape[1] = 0;
        return 0;
    }
}

int mla_lw_name(char *buf, size_t n, int layer, mla_layer_weight w, int e)
{
    int k = snprintf(buf, n, "model.layers.%d.", layer);
    if (k < 0 || (size_t)k >= n) return -1;
    /* The suffix is a format from the table above: it holds at most one "%d". */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    int m = snprintf(buf + k, n - (size_t)k, mla_lw_suffix(w), e);
#pragma GCC diagnostic pop
    return m < 0 || (size_t)m >= n - (size_t)k ? -1 : 0;
}
