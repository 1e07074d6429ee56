/* moe.c: DeepSeek MoE routing and experts (mla-spec.md §d), the DeepSeek reference / vLLM way:
 * group masking with -inf, top-k on biased scores, weights from unbiased scores, renormalize when
 * norm_topk_prob, then routed_scaling_factor. Ties go to the lower expert index. */
#include "ref_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Index of the largest of v[0..n) not yet taken; ties -> lowest index. */
static int argmax_free(const double *v, const unsigned char *taken, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!taken[i] && (best < 0 || v[i] > v[best])) best = i;
    return best;
}

/* Routing of one token: logits[E] -> ids[K], w[K]. */
static void route_token(const ref_ctx *c, const ref_layer *lw, const double *logits, int32_t *ids,
                        double *w)
{
    const mla_config *cf = c->cfg;
    int E = cf->n_routed_experts, K = cf->num_experts_per_tok;
    double *score = malloc((size_t)E * sizeof(double));
    double *biased = malloc((size_t)E * sizeof(double));
    unsigned char *taken = calloc((size_t)E, 1);
    if (cf->scoring_func == MLA_SCORE_SIGMOID) {
        for (int e = 0; e < E; e++) score[e] = ref_rnd32(c, 1.0 / (1.0 + exp(-logits[e])));
    } else {
        double mx = logits[0], sum = 0.0;
        for (int e = 1; e < E; e++)
            if (logits[e] > mx) mx = logits[e];
        for (int e = 0; e < E; e++) sum += exp(logits[e] - mx);
        for (int e = 0; e < E; e++) score[e] = ref_rnd32(c, exp(logits[e] - mx) / sum);
    }
    for (int e = 0; e < E; e++) biased[e] = lw->bias ? ref_rnd32(c, score[e] + lw->bias[e]) : score[e];

    int G = cf->n_group > 1 ? cf->n_group : 1;
    if (G > 1 && cf->topk_method != MLA_TOPK_GREEDY) {
        int per = E / G;
        double *gscore = malloc((size_t)G * sizeof(double));
        unsigned char *gtaken = calloc((size_t)G, 1);
        for (int g = 0; g < G; g++) {
            const double *s = biased + g * per;
            if (lw->bias) { /* sum of the two best in the group */
                double a = -INFINITY, b = -INFINITY;
                for (int i = 0; i < per; i++) {
                    if (s[i] > a) {
                        b = a;
                        a = s[i];
                    } else if (s[i] > b) {
                        b = s[i];
                    }
                }
                gscore[g] = a + (per > 1 ? b : 0.0);
            } else {
                double a = -INFINITY;
                for (int i = 0; i < per; i++)
                    if (s[i] > a) a = s[i];
                gscore[g] = a;
            }
        }
        for (int k = 0; k < cf->topk_group && k < G; k++) gtaken[argmax_free(gscore, gtaken, G)] = 1;
        for (int g = 0; g < G; g++)
            if (!gtaken[g])
                for (int i = 0; i < per; i++) biased[g * per + i] = -INFINITY;
        free(gscore);
        free(gtaken);
    }
    double sum = 0.0;
    for (int k = 0; k < K; k++) {
        int e = argmax_free(biased, taken, E);
        taken[e] = 1;
        ids[k] = e;
        w[k] = score[e];
        sum += w[k];
    }
    double routed = (c->opts.faults & MLA_FAULT(MLA_FAULT_ROUTED_SCALING)) ? 1.0 : cf->routed_scaling_factor;
    for (int k = 0; k < K; k++) {
        double v = cf->norm_topk_prob && sum > 0 ? w[k] / sum : w[k];
        w[k] = ref_rnd32(c, v * routed);
    }
    free(score);
    free(biased);
    free(taken);
}

void ref_moe(const ref_ctx *c, const ref_layer *lw, const double *x, int64_t T, double *router_logits,
             int32_t *ids, double *weights, double *y)
{
    const mla_config *cf = c->cfg;
    int64_t D = cf->hidden_size, E = cf->n_routed_experts, K = cf->num_experts_per_tok;
    int64_t Im = cf->moe_intermediate_size;
    ref_matmul_nt_batch(x, lw->gate, T, D, E, router_logits); /* the gate is never fp8 */
    ref_rnd32_vec(c, router_logits, T * E);
    for (int64_t t = 0; t < T; t++) route_token(c, lw, router_logits + t * E, ids + t * K, weights + t * K);

    /* routed experts: gather the tokens of each expert, run its MLP, accumulate w * y (fp32-like
     * accumulation in double, rounded once at the end) */
    double *acc = calloc((size_t)(T * D), sizeof(double));
    double *xs = malloc((size_t)(T * D) * sizeof(double));
    double *ys = malloc((size_t)(T * D) * sizeof(double));
    int64_t *rows = malloc((size_t)T * sizeof(int64_t));
    double *rw = malloc((size_t)T * sizeof(double));
    for (int64_t e = 0; e < E; e++) {
        int64_t m = 0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t k = 0; k < K; k++)
                if (ids[t * K + k] == e) {
                    rows[m] = t;
                    rw[m] = weights[t * K + k];
                    memcpy(xs + m * D, x + t * D, (size_t)D * sizeof(double));
                    m++;
                }
        if (!m) continue;
        ref_mlp(c, xs, m, lw->e_w1[e], lw->e_w2[e], lw->e_w3[e], Im, ys);
        for (int64_t i = 0; i < m; i++)
            for (int64_t d = 0; d < D; d++) acc[rows[i] * D + d] += rw[i] * ys[i * D + d];
    }
    if (cf->n_shared_experts > 0) {
        ref_mlp(c, x, T, lw->s_w1, lw->s_w2, lw->s_w3, Im * cf->n_shared_experts, ys);
        for (int64_t i = 0; i < T * D; i++) acc[i] += ys[i];
    }
    for (int64_t i = 0; i < T * D; i++) y[i] = ref_rnd(c, acc[i]);
    free(acc);
    free(xs);
    free(ys);
    free(rows);
    free(rw);
}
