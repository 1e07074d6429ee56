/* config_math.c: constants derived from the config: softmax scale, YaRN inverse frequencies,
 * MoE layer placement (mla-spec.md §b.1, §c). Computed in double from the formulas. */
#include "mla/config.h"

#include <math.h>

double mla_config_yarn_mscale(double factor, double mscale)
{
    if (factor <= 1.0) return 1.0;
    return 0.1 * mscale * log(factor) + 1.0;
}

static int config_yarn_on(const mla_config *c) { return c->has_yarn && c->rope_factor > 1.0; }

double mla_config_softmax_scale(const mla_config *c)
{
    double s = 1.0 / sqrt((double)(c->qk_nope_head_dim + c->qk_rope_head_dim));
    if (config_yarn_on(c) && c->mscale_all_dim != 0.0) {
        double m = mla_config_yarn_mscale(c->rope_factor, c->mscale_all_dim);
        s *= m * m;
    }
    return s;
}

double mla_config_rope_attn_factor(const mla_config *c)
{
    if (!config_yarn_on(c)) return 1.0;
    return mla_config_yarn_mscale(c->rope_factor, c->mscale) /
           mla_config_yarn_mscale(c->rope_factor, c->mscale_all_dim);
}

/* dim * ln(L0 / (2 pi r)) / (2 ln base) */
static double yarn_corr_dim(double r, int dim, double base, double l0)
{
    return dim * log(l0 / (r * 2.0 * M_PI)) / (2.0 * log(base));
}

void mla_config_inv_freq(const mla_config *c, double *inv_freq)
{
    int dim = c->qk_rope_head_dim;
    double base = c->rope_theta;
    double low = 0, high = 0;
    int yarn = config_yarn_on(c);
    if (yarn) {
        low = floor(yarn_corr_dim(c->beta_fast, dim, base, c->rope_original_max_pos));
        high = ceil(yarn_corr_dim(c->beta_slow, dim, base, c->rope_original_max_pos));
        if (low < 0) low = 0;
        if (high > dim - 1) high = dim - 1;
        if (low == high) high += 0.001;
    }
    for (int i = 0; i < dim / 2; i++) {
        double theta = pow(base, -2.0 * i / dim);
        if (!yarn) {
            inv_freq[i] = theta;
            continue;
        }
        double ramp = (i - low) / (high - low);
        if (ramp < 0) ramp = 0;
        if (ramp > 1) ramp = 1;
        inv_freq[i] = theta * (1.0 - ramp) + theta / c->rope_factor * ramp;
    }
}

int mla_config_is_moe_layer(const mla_config *c, int layer)
{
    if (c->n_routed_experts <= 0) return 0;
    if (layer < c->first_k_dense_replace) return 0;
    int freq = c->moe_layer_freq > 0 ? c->moe_layer_freq : 1;
    return layer % freq == 0;
}
