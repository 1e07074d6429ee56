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

/* Group-limited masking (mla-spec.md §d): per group of E / n_group experts a score (the sum of the
 * two best with a bias, the best without); the experts of all but the topk_group best groups get
 * -inf. biased[E] in place. */
static mla_status mask_groups(double *biased, int has_bias, const ref_moe_cfg *m)
{
    int G = m->n_group, per = (int)m->E / G;
    double *gscore = malloc((size_t)G * sizeof(double));
    unsigned char *gtaken = calloc((size_t)G, 1);
    if (!gscore || !gtaken) {
        free(gscore);
        free(gtaken);
        return mla_errorf(MLA_ERR_NOMEM, "reference: router scores of %d groups", G);
    }
    for (int g = 0; g < G; g++) {
        const double *s = biased + g * per;
        if (has_bias) { /* sum of the two best in the group */
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
    for (int k = 0; k < m->topk_group && k < G; k++) gtaken[argmax_free(gscore, gtaken, G)] = 1;
    for (int g = 0; g < G; g++)
        if (!gtaken[g])
            for (int i = 0; i < per; i++) biased[g * per + i] = -INFINITY;
    free(gscore);
    free(gtaken);
    return MLA_OK;
}

mla_status ref_moe_route(int32_t *ids, double *w, const double *logits, const double *bias,
                         const ref_moe_cfg *m, const ref_numerics *nm)
{
    int E = (int)m->E, K = (int)m->K;
    double *score = malloc((size_t)E * sizeof(double));
    double *biased = malloc((size_t)E * sizeof(double));
    unsigned char *taken = calloc((size_t)E, 1);
    mla_status st = MLA_OK;
    if (!score || !biased || !taken) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: router scores of %d experts", E);
        goto done;
    }
    if (m->sigmoid) {
        for (int e = 0; e < E; e++) score[e] = ref_rnd32(nm, 1.0 / (1.0 + exp(-logits[e])));
    } else {
        double mx = logits[0], sum = 0.0;
        for (int e = 1; e < E; e++)
            if (logits[e] > mx) mx = logits[e];
        for (int e = 0; e < E; e++) sum += exp(logits[e] - mx);
        for (int e = 0; e < E; e++) score[e] = ref_rnd32(nm, exp(logits[e] - mx) / sum);
    }
    for (int e = 0; e < E; e++) biased[e] = bias ? ref_rnd32(nm, score[e] + bias[e]) : score[e];
    if (m->n_group > 1 && m->group_limited && (st = mask_groups(biased, bias != NULL, m))) goto done;
    double sum = 0.0;
    for (int k = 0; k < K; k++) {
        int e = argmax_free(biased, taken, E);
        taken[e] = 1;
        ids[k] = e;
        w[k] = score[e];
        sum += w[k];
    }
    for (int k = 0; k < K; k++) {
        double v = m->norm_topk_prob && sum > 0 ? w[k] / sum : w[k];
        w[k] = ref_rnd32(nm, v * m->routed_scale);
    }
done:
    free(score);
    free(biased);
    free(taken);
    return st;
}

mla_status ref_moe(double *y, double *router_logits, int32_t *ids, double *weights, const double *x, int64_t T,
                   const ref_layer *lw, const ref_moe_cfg *m, const ref_numerics *nm)
{
    int64_t D = m->D, E = m->E, K = m->K, Im = m->Im;
    ref_matmul_nt_batch(x, lw->gate, T, D, E, router_logits); /* the gate is never fp8 */
    ref_rnd32_vec(nm, router_logits, T * E);
    mla_status st = MLA_OK;
    for (int64_t t = 0; t < T && !st; t++)
        st = ref_moe_route(ids + t * K, weights + t * K, router_logits + t * E, lw->bias, m, nm);
    if (st) return st;

    /* routed experts: gather the tokens of each expert, run its MLP, accumulate w * y (fp32-like
     * accumulation in double, rounded once at the end) */
    double *acc = calloc((size_t)(T * D + 1), sizeof(double));
    double *xs = malloc((size_t)(T * D + 1) * sizeof(double));
    double *ys = malloc((size_t)(T * D + 1) * sizeof(double));
    int64_t *rows = malloc((size_t)(T + 1) * sizeof(int64_t));
    double *rw = malloc((size_t)(T + 1) * sizeof(double));
    if (!acc || !xs || !ys || !rows || !rw) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: MoE buffers for %lld tokens x %lld", (long long)T, (long long)D);
        goto done;
    }
    for (int64_t e = 0; e < E; e++) {
        int64_t n = 0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t k = 0; k < K; k++)
                if (ids[t * K + k] == e) {
                    rows[n] = t;
                    rw[n] = weights[t * K + k];
                    memcpy(xs + n * D, x + t * D, (size_t)D * sizeof(double));
                    n++;
                }
        if (!n) continue;
        if ((st = ref_mlp(ys, xs, lw->e_w1[e], lw->e_w2[e], lw->e_w3[e], n, D, Im, nm))) goto done;
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < D; d++) acc[rows[i] * D + d] += rw[i] * ys[i * D + d];
    }
    if (m->n_shared > 0) {
        if ((st = ref_mlp(ys, x, lw->s_w1, lw->s_w2, lw->s_w3, T, D, Im * m->n_shared, nm))) goto done;
        for (int64_t i = 0; i < T * D; i++) acc[i] += ys[i];
    }
    for (int64_t i = 0; i < T * D; i++) y[i] = ref_rnd(nm, acc[i]);
done:
    free(acc);
    free(xs);
    free(ys);
    free(rows);
    free(rw);
    return st;
}
