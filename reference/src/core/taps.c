/* taps.c: names, shapes and presence of tap points, all derived from MLA_TAP_LIST. */
#include "mla/taps.h"
#include "mla/config.h"

#include <string.h>

static const struct {
    const char *name;
    char scope;
    int dims;
    const char *shape;
    char prod;
    const char *op;
} tap_table[MLA_TAP_COUNT] = {
#define MLA_TAP_ROW(id, name, scope, dims, shape, prod, op) {name, scope, dims, shape, prod, op},
    MLA_TAP_LIST(MLA_TAP_ROW)
#undef MLA_TAP_ROW
};

const char *mla_tap_name(mla_tap t) { return (unsigned)t < MLA_TAP_COUNT ? tap_table[t].name : "?"; }

int mla_tap_from_name(const char *name, mla_tap *out)
{
    for (int i = 0; i < MLA_TAP_COUNT; i++)
        if (strcmp(tap_table[i].name, name) == 0) {
            *out = (mla_tap)i;
            return 0;
        }
    return -1;
}

int mla_tap_is_layer(mla_tap t) { return tap_table[t].scope == 'L'; }
char mla_tap_producer(mla_tap t) { return tap_table[t].prod; }
const char *mla_tap_op(mla_tap t) { return (unsigned)t < MLA_TAP_COUNT ? tap_table[t].op : "?"; }

static int64_t tap_symbol(char c, const mla_config *cfg, int64_t ntok)
{
    switch (c) {
    case 'T': return ntok;
    case 'D': return cfg->hidden_size;
    case 'H': return cfg->num_attention_heads;
    case 'P': return cfg->qk_nope_head_dim;
    case 'R': return cfg->qk_rope_head_dim;
    case 'C': return cfg->kv_lora_rank;
    case 'V': return cfg->v_head_dim;
    case 'E': return cfg->n_routed_experts;
    case 'K': return cfg->num_experts_per_tok;
    case 'N': return cfg->vocab_size;
    default: return -1;
    }
}

int mla_tap_shape(mla_tap t, const mla_config *cfg, int64_t ntok, int64_t *shape)
{
    const char *s = tap_table[t].shape;
    int n = 0;
    for (; *s; s++)
        if (*s != ',') shape[n++] = tap_symbol(*s, cfg, ntok);
    return n;
}

int mla_tap_in_layer(mla_tap t, const mla_config *cfg, int layer)
{
    if (!mla_tap_is_layer(t)) return 0;
    if (tap_table[t].prod == 'E') return mla_config_is_moe_layer(cfg, layer);
    return 1;
}
