/* compare.c: per-tensor error metrics, routing-set and logits comparisons, the noise-floor rule.
 * Every value is widened to double first; sums use Neumaier-compensated long double so that
 * metrics near 1e-15 are not swamped by summation error. */
#include "mlacheck/compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

typedef struct {
    long double s, c;
} ksum;

static void ksum_add(ksum *k, long double x)
{
    long double t = k->s + x;
    if (fabsl(k->s) >= fabsl(x))
        k->c += (k->s - t) + x;
    else
        k->c += (x - t) + k->s;
    k->s = t;
}

static long double ksum_val(const ksum *k) { return k->s + k->c; }

/* Appends printf text to why[256], separated by "; ". */
static void why_add(char *why, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void why_add(char *why, size_t cap, const char *fmt, ...)
{
    size_t k = strlen(why);
    if (k && k + 2 < cap) {
        memcpy(why + k, "; ", 3);
        k += 2;
    }
    if (k + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + k, cap - k, fmt, ap);
    va_end(ap);
}

static void unravel(const mla_tensor *t, int64_t idx, int64_t *coord)
{
    for (int d = 0; d < 6; d++) coord[d] = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t s = t->shape[d] > 0 ? t->shape[d] : 1;
        coord[d] = idx % s;
        idx /= s;
    }
}

/* The k-th smallest (0-based) of v[m], by quickselect (v is reordered): O(m), where a full sort of
 * every tensor's ulp distances took a visible share of a long suite's time. */
static uint64_t select_k(uint64_t *v, int64_t m, int64_t k)
{
    int64_t lo = 0, hi = m - 1;
    while (lo < hi) {
        uint64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi]; /* median of three */
        uint64_t piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < piv) i++;
            while (v[j] > piv) j--;
            if (i <= j) {
                uint64_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

/* Nearest-rank percentile (p in percent) of v[m]: the ceil(p m / 100)-th smallest. */
static double pct(uint64_t *v, int64_t m, int p)
{
    if (m <= 0) return 0;
    int64_t r = (m * p + 99) / 100;
    if (r < 1) r = 1;
    return (double)select_k(v, m, r - 1);
}

static mla_status to_f64(const mla_tensor *t, double **out, const char *what)
{
    int64_t n = mla_tensor_numel(t);
    *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!*out) return mla_errorf(MLA_ERR_NOMEM, "compare: %s: %lld values", what, (long long)n);
    mla_tensor_to_f64(t, *out);
    return MLA_OK;
}

static const char *tname(const mla_tensor *t) { return t->name[0] ? t->name : "(unnamed)"; }

/* ---- tensors ---- */

static int nonfinite_same(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b; /* both inf here (one finite one inf differs): same sign required */
}

mla_status mla_cmp_tensor(const mla_tensor *a, const mla_tensor *b, const mla_cmp_limits *lim,
                          mla_cmp_result *out)
{
    memset(out, 0, sizeof *out);
    out->worst_index = -1;
    if (!mla_tensor_same_shape(a, b)) {
        char sa[96], sb[96];
        return mla_errorf(MLA_ERR_SHAPE, "compare %s: reference shape %s, candidate %s %s", tname(a),
                          mla_tensor_shape_str(a, sa, sizeof sa), tname(b),
                          mla_tensor_shape_str(b, sb, sizeof sb));
    }
    mla_cmp_limits none;
    memset(&none, 0, sizeof none);
    if (!lim) lim = &none;
    int64_t n = mla_tensor_numel(a);
    double *va = NULL, *vb = NULL;
    uint64_t *ulp = NULL;
    mla_status st = to_f64(a, &va, tname(a));
    if (!st) st = to_f64(b, &vb, tname(b));
    if (!st && !(ulp = malloc((size_t)(n > 0 ? n : 1) * sizeof *ulp)))
        st = mla_errorf(MLA_ERR_NOMEM, "compare %s: %lld ULP distances", tname(a), (long long)n);
    if (st) {
        free(va);
        free(vb);
        return st;
    }
    int abs_on = lim->max_abs > 0, rel_on = lim->max_rel > 0, elem_on = abs_on || rel_on;
    double floor_ = lim->rel_floor > 0 ? lim->rel_floor : 0;
    mla_dtype ud = lim->ulp_dtype < MLA_DTYPE_COUNT ? lim->ulp_dtype : MLA_F64;
    ksum se = {0, 0}, sr = {0, 0}, sab = {0, 0};
    int64_t m = 0, first_nf = -1, worst = -1;
    double worst_key = -1, max_ratio = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = va[i], y = vb[i];
        if (!isfinite(x) || !isfinite(y)) {
            if (!nonfinite_same(x, y)) {
                out->nonfinite_mismatch++;
                if (first_nf < 0) first_nf = i;
            }
            continue;
        }
        long double e = (long double)y - (long double)x;
        double ae = (double)fabsl(e);
        double den = fabs(x) + floor_;
        double re = ae == 0 ? 0 : (den > 0 ? ae / den : INFINITY);
        if (ae > out->max_abs) out->max_abs = ae;
        if (re > out->max_rel) out->max_rel = re;
        ksum_add(&se, e * e);
        ksum_add(&sr, (long double)x * x);
        ksum_add(&sab, (long double)x * x + (long double)y * y);
        ulp[m++] = mla_ulp_distance(ud, x, y);
        double key = ae;
        if (elem_on) {
            double ra = abs_on ? ae / lim->max_abs : INFINITY;
            double rr = rel_on ? re / lim->max_rel : INFINITY;
            key = ra < rr ? ra : rr;
            if (key > max_ratio) max_ratio = key;
            if ((!abs_on || ae > lim->max_abs) && (!rel_on || re > lim->max_rel)) out->n_mismatch++;
        }
        if (key > worst_key) {
            worst_key = key;
            worst = i;
        }
    }
    out->n = n;
    long double e2 = ksum_val(&se), r2 = ksum_val(&sr), ab2 = ksum_val(&sab);
    out->nmse = e2 == 0 ? 0 : (r2 > 0 ? (double)(e2 / r2) : INFINITY);
    out->nmse_db = out->nmse == 0 ? -999.0 : 10.0 * log10(out->nmse);
    out->cos_diff = ab2 > 0 ? (double)(e2 / ab2) : 0;
    out->rel_l2 = e2 == 0 ? 0 : (r2 > 0 ? (double)sqrtl(e2 / r2) : INFINITY);
    out->ulp_p50 = pct(ulp, m, 50);
    out->ulp_p99 = pct(ulp, m, 99);
    uint64_t umax = 0;
    for (int64_t i = 0; i < m; i++) umax = ulp[i] > umax ? ulp[i] : umax;
    out->ulp_max = (double)umax;
    if (first_nf >= 0) worst = first_nf;
    out->worst_index = worst;
    if (worst >= 0) {
        out->worst_ref = va[worst];
        out->worst_cand = vb[worst];
        unravel(a, worst, out->worst_coord);
    }

    /* Verdict and headroom. */
    double head = 0;
    char *why = out->why;
    if (out->nonfinite_mismatch) {
        head = INFINITY;
        why_add(why, sizeof out->why, "%lld NaN/Inf position mismatches (first at flat %lld: ref %g, "
                "cand %g)", (long long)out->nonfinite_mismatch, (long long)first_nf, va[first_nf],
                vb[first_nf]);
    }
    if (elem_on) {
        double allowed = lim->mismatch_frac > 0 ? lim->mismatch_frac : 0;
        double frac = n ? (double)out->n_mismatch / (double)n : 0;
        double h = allowed > 0 ? frac / allowed : max_ratio;
        if (h > head) head = h;
        if ((allowed > 0 && frac > allowed) || (allowed <= 0 && out->n_mismatch > 0))
            why_add(why, sizeof out->why, "%lld of %lld elements exceed abs %g and rel %g (%.3g%%, "
                    "allowed %.3g%%)", (long long)out->n_mismatch, (long long)n,
                    abs_on ? lim->max_abs : 0.0, rel_on ? lim->max_rel : 0.0, 100 * frac,
                    100 * allowed);
    }
#define CMP_CHECK(field, label)                                                              \
    if (lim->field > 0) {                                                                    \
        double h = out->field / lim->field;                                                  \
        if (h > head || isnan(h)) head = isnan(h) ? INFINITY : h;                            \
        if (!(out->field <= lim->field))                                                     \
            why_add(why, sizeof out->why, label " %.3e > limit %.3e", out->field, lim->field); \
    }
    CMP_CHECK(nmse, "nmse")
    CMP_CHECK(cos_diff, "cos_diff")
    CMP_CHECK(rel_l2, "rel_l2")
    CMP_CHECK(ulp_p99, "ulp_p99")
#undef CMP_CHECK
    out->headroom = head;
    out->pass = why[0] == '\0';
    free(va);
    free(vb);
    free(ulp);
    return MLA_OK;
}

void mla_cmp_format(const mla_cmp_result *r, char *buf, size_t n)
{
    char coord[96];
    size_t k = 0;
    coord[0] = '\0';
    for (int d = 0; d < 6 && r->worst_index >= 0; d++)
        k += (size_t)snprintf(coord + k, k < sizeof coord ? sizeof coord - k : 0, "%s%lld",
                              d ? "," : "", (long long)r->worst_coord[d]);
    snprintf(buf, n,
             "%s n=%lld max_abs=%.3e max_rel=%.3e nmse=%.3e (%.1f dB) cos_diff=%.3e rel_l2=%.3e "
             "ulp p50/p99/max=%.0f/%.0f/%.0f mismatch=%lld nonfinite=%lld worst=%lld[%s] "
             "ref=%.9g cand=%.9g headroom=%.3g%s%s",
             r->pass ? "PASS" : "FAIL", (long long)r->n, r->max_abs, r->max_rel, r->nmse, r->nmse_db,
             r->cos_diff, r->rel_l2, r->ulp_p50, r->ulp_p99, r->ulp_max, (long long)r->n_mismatch,
             (long long)r->nonfinite_mismatch, (long long)r->worst_index, coord, r->worst_ref,
             r->worst_cand, r->headroom, r->why[0] ? " : " : "", r->why);
}

/* ---- routing ---- */

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Sorted, de-duplicated ids of one row; returns the set size. */
static int64_t row_set(const double *ids, int64_t k, int64_t *set)
{
    for (int64_t j = 0; j < k; j++) set[j] = (int64_t)ids[j];
    qsort(set, (size_t)k, sizeof *set, cmp_i64);
    int64_t m = 0;
    for (int64_t j = 0; j < k; j++)
        if (m == 0 || set[m - 1] != set[j]) set[m++] = set[j];
    return m;
}

static double score_of(const mla_tensor *s, int64_t tok, int64_t id)
{
    if (!s || id < 0 || id >= s->shape[1]) return NAN;
    return mla_tensor_get_f64(s, tok * s->shape[1] + id);
}

/* Selection scores of one token (mla_cmp_route_rule): s[E] from the logits row. */
static void select_scores(const mla_tensor *logits, int64_t tok, const mla_cmp_route_rule *rule, double *s)
{
    int64_t E = logits->shape[1];
    for (int64_t e = 0; e < E; e++) s[e] = mla_tensor_get_f64(logits, tok * E + e);
    if (rule->sigmoid) {
        for (int64_t e = 0; e < E; e++) s[e] = 1.0 / (1.0 + exp(-s[e]));
    } else {
        double mx = -INFINITY, sum = 0.0;
        for (int64_t e = 0; e < E; e++) mx = s[e] > mx ? s[e] : mx;
        for (int64_t e = 0; e < E; e++) sum += exp(s[e] - mx);
        for (int64_t e = 0; e < E; e++) s[e] = exp(s[e] - mx) / sum;
    }
    if (rule->bias)
        for (int64_t e = 0; e < E; e++) s[e] += rule->bias[e];
}

/* Group scores g[G] of s[E] and the kept groups (keep[g] = 1, ties to the lower group, as the
 * reference); returns the margin g(last kept) - g(best dropped), or NAN without groups. */
static double keep_groups(const double *s, int64_t E, const mla_cmp_route_rule *rule, double *g, unsigned char *keep)
{
    int G = rule->n_group > 1 ? rule->n_group : 1, per = (int)(E / G);
    for (int q = 0; q < G; q++) {
        double x = -INFINITY, y = -INFINITY;
        for (int i = 0; i < per; i++) {
            double v = s[q * per + i];
            if (v > x) y = x, x = v;
            else if (v > y) y = v;
        }
        g[q] = x + (rule->group_top2 && per > 1 ? y : 0.0);
        keep[q] = G == 1;
    }
    if (G == 1) return NAN;
    double last = INFINITY, dropped = -INFINITY;
    for (int k = 0; k < rule->topk_group && k < G; k++) {
        int best = -1;
        for (int q = 0; q < G; q++)
            if (!keep[q] && (best < 0 || g[q] > g[best])) best = q;
        keep[best] = 1;
        last = g[best];
    }
    for (int q = 0; q < G; q++)
        if (!keep[q] && g[q] > dropped) dropped = g[q];
    return dropped == -INFINITY ? NAN : last - dropped;
}

typedef struct {
    double *sa, *sb, *ga, *gb;
    unsigned char *ka, *kb, *in_a;
} route_work;

/* Judges one flipped token: margins of the reference's decision (ids A[na]), the noise bound, and
 * whether the flip is benign. A flip that swaps kept groups is judged at group level, one inside the
 * same groups at expert level; a candidate expert in a group the reference dropped by more than the
 * group bound is clear. */
static void judge_token(const mla_tensor *la, const mla_tensor *lb, const mla_cmp_route_rule *rule, int64_t t,
                        const int64_t *A, int64_t na, const int64_t *B, int64_t nb, route_work *w, mla_cmp_flip *f)
{
    f->margin_expert = f->bound_expert = f->margin_group = f->bound_group = NAN;
    f->benign = f->group_swap = 0;
    if (!rule || !la || !lb) return;
    int64_t E = la->shape[1];
    int G = rule->n_group > 1 ? rule->n_group : 1, per = (int)(E / G);
    select_scores(la, t, rule, w->sa);
    select_scores(lb, t, rule, w->sb);
    /* d: the largest score difference, at least the f32 rounding of the scores (the engines round
     * sigmoid and + bias to f32, NUMERICS.md, a difference their logits cannot show) */
    double d = 0.0, smax = 0.0;
    for (int64_t e = 0; e < E; e++) {
        double x = fabs(w->sa[e] - w->sb[e]);
        d = x > d || isnan(x) ? x : d;
        smax = fabs(w->sa[e]) > smax ? fabs(w->sa[e]) : smax;
    }
    if (d < ldexp(smax, -23)) d = ldexp(smax, -23);
    f->margin_group = keep_groups(w->sa, E, rule, w->ga, w->ka);
    (void)keep_groups(w->sb, E, rule, w->gb, w->kb);
    memset(w->in_a, 0, (size_t)(E > 0 ? E : 0));
    double last = INFINITY, best_out = -INFINITY;
    for (int64_t i = 0; i < na; i++)
        if (A[i] >= 0 && A[i] < E) {
            w->in_a[A[i]] = 1;
            last = w->sa[A[i]] < last ? w->sa[A[i]] : last;
        }
    for (int64_t e = 0; e < E; e++)
        if (!w->in_a[e] && w->ka[e / per] && w->sa[e] > best_out) best_out = w->sa[e];
    f->margin_expert = best_out == -INFINITY ? NAN : last - best_out;
    f->bound_expert = rule->noise_k > 0 ? rule->noise_k * 2.0 * d : 0.0;
    f->bound_group = rule->noise_k > 0 ? rule->noise_k * 4.0 * d : 0.0;
    /* The groups the candidate used are read from its ids, not only from its logits: recomputed here in
     * double, a candidate's group near tie can come out the other way than in its own f32 sums (H200
     * 2026-12-04, tiny-v3-gpu --reseed 6, fp8ds chunked, L1 token 110: the candidate kept group 0 over
     * group 2, which its logits put 0.00328 behind at the reference, inside the bound 0.0111). So a
     * flip swaps groups when the kept sets differ or an id lies in a group the reference dropped, and
     * such an id is clear only when the reference dropped its group by more than the group bound. */
    int groups_swap = 0, outside = 0;
    double last_group = INFINITY;
    for (int q = 0; q < G; q++) {
        groups_swap |= w->ka[q] != w->kb[q];
        if (w->ka[q] && w->ga[q] < last_group) last_group = w->ga[q];
    }
    for (int64_t j = 0; j < nb; j++) {
        if (B[j] < 0 || B[j] >= E) {
            outside = 1;
            continue;
        }
        const int q = (int)(B[j] / per);
        if (w->ka[q]) continue;
        groups_swap = 1;
        outside |= !(last_group - w->ga[q] <= f->bound_group); /* NaN: not benign */
    }
    f->group_swap = groups_swap;
    double m = groups_swap ? f->margin_group : f->margin_expert;
    double bound = groups_swap ? f->bound_group : f->bound_expert;
    f->benign = !outside && bound > 0 && m <= bound; /* NaN margins or bounds are not benign */
}

/* The judged margin over its bound (<= 1 for a benign flip), INFINITY for a clear one. */
static double flip_ratio(const mla_cmp_flip *f)
{
    if (!f->benign) return INFINITY;
    double r = f->group_swap ? f->margin_group / f->bound_group : f->margin_expert / f->bound_expert;
    return r > 0 ? r : 0;
}

mla_status mla_cmp_routing(const mla_tensor *ids_a, const mla_tensor *ids_b,
                           const mla_tensor *scores_a, const mla_tensor *scores_b,
                           const mla_cmp_route_rule *rule, mla_cmp_routing_result *out)
{
    memset(out, 0, sizeof *out);
    char sa[96], sb[96];
    if (ids_a->ndim != 2 || !mla_tensor_same_shape(ids_a, ids_b))
        return mla_errorf(MLA_ERR_SHAPE, "routing %s: ids shapes %s and %s, expected equal [T, K]",
                          tname(ids_a), mla_tensor_shape_str(ids_a, sa, sizeof sa),
                          mla_tensor_shape_str(ids_b, sb, sizeof sb));
    int64_t T = ids_a->shape[0], K = ids_a->shape[1];
    const mla_tensor *sc[2] = {scores_a, scores_b};
    for (int i = 0; i < 2; i++)
        if (sc[i] && (sc[i]->ndim != 2 || sc[i]->shape[0] != T || sc[i]->shape[1] != sc[0]->shape[1]))
            return mla_errorf(MLA_ERR_SHAPE, "routing %s: scores %s shape %s, expected [%lld, E]",
                              tname(ids_a), tname(sc[i]), mla_tensor_shape_str(sc[i], sa, sizeof sa),
                              (long long)T);
    int64_t E = scores_a ? scores_a->shape[1] : 0;
    if (!scores_b) E = 0;
    if (rule && E > 0) {
        if (rule->n_group > 1 && E % rule->n_group)
            return mla_errorf(MLA_ERR_SHAPE, "routing %s: %lld experts, expected a multiple of n_group %d",
                              tname(ids_a), (long long)E, rule->n_group);
        if (rule->bias && rule->n_bias != E)
            return mla_errorf(MLA_ERR_SHAPE, "routing %s: bias of %lld experts, expected %lld",
                              tname(ids_a), (long long)rule->n_bias, (long long)E);
    }
    double *va = NULL, *vb = NULL;
    int64_t *set = malloc((size_t)(4 * (K > 0 ? K : 1)) * sizeof *set);
    route_work w = {0};
    size_t ne = (size_t)(E > 0 ? E : 1);
    w.sa = malloc(4 * ne * sizeof(double));
    w.ka = malloc(3 * ne);
    mla_status st = set && w.sa && w.ka ? MLA_OK
                                        : mla_errorf(MLA_ERR_NOMEM, "routing: %lld ids, %lld experts", (long long)K,
                                                     (long long)E);
    if (!st) st = to_f64(ids_a, &va, tname(ids_a));
    if (!st) st = to_f64(ids_b, &vb, tname(ids_b));
    if (st) goto done;
    w.sb = w.sa + ne, w.ga = w.sa + 2 * ne, w.gb = w.sa + 3 * ne;
    w.kb = w.ka + ne, w.in_a = w.ka + 2 * ne;
    const mla_tensor *la = E > 0 ? scores_a : NULL, *lb = E > 0 ? scores_b : NULL;
    int64_t *A = set, *B = set + K, *onlya = set + 2 * K, *onlyb = set + 3 * K;
    out->n_tokens = T;
    /* pass 0 counts and records the clear flips, pass 1 records benign ones in the space left */
    for (int pass = 0; pass < 2; pass++)
        for (int64_t t = 0; t < T; t++) {
            int64_t na = row_set(va + t * K, K, A), nb = row_set(vb + t * K, K, B);
            int64_t i = 0, j = 0, oa = 0, ob = 0;
            while (i < na || j < nb) {
                if (j >= nb || (i < na && A[i] < B[j])) onlya[oa++] = A[i++];
                else if (i >= na || B[j] < A[i]) onlyb[ob++] = B[j++];
                else i++, j++;
            }
            if (!oa && !ob) continue;
            mla_cmp_flip judged;
            judge_token(la, lb, la ? rule : NULL, t, A, na, B, nb, &w, &judged);
            if (pass == 0) {
                out->n_flipped_tokens++;
                out->n_flipped_experts += oa;
                out->n_clear_tokens += !judged.benign;
                double r = flip_ratio(&judged);
                out->worst_ratio = r > out->worst_ratio ? r : out->worst_ratio;
            }
            if (judged.benign != pass) continue;
            for (int64_t p = 0; p < (oa > ob ? oa : ob) && out->n_flips < MLA_CMP_MAX_FLIPS; p++) {
                mla_cmp_flip *f = &out->flips[out->n_flips++];
                *f = judged;
                f->token = t;
                f->expert_a = p < oa ? (int32_t)onlya[p] : -1;
                f->expert_b = p < ob ? (int32_t)onlyb[p] : -1;
                f->a_score_a = score_of(scores_a, t, f->expert_a);
                f->a_score_b = score_of(scores_a, t, f->expert_b);
                f->b_score_a = score_of(scores_b, t, f->expert_a);
                f->b_score_b = score_of(scores_b, t, f->expert_b);
            }
        }
    out->pass = out->n_clear_tokens == 0;
    if (out->n_flipped_tokens) {
        const mla_cmp_flip *f = &out->flips[0];
        snprintf(out->why, sizeof out->why,
                 "%lld of %lld tokens flip, %lld clear; %s: token %lld expert %d (a %.9g, b %.9g) -> %d "
                 "(a %.9g, b %.9g)%s; margins expert %.3g group %.3g, bounds %.3g %.3g",
                 (long long)out->n_flipped_tokens, (long long)T, (long long)out->n_clear_tokens,
                 f->benign ? "first (near tie)" : "first clear",
                 (long long)f->token, f->expert_a, f->a_score_a, f->b_score_a, f->expert_b, f->a_score_b,
                 f->b_score_b, f->group_swap ? " groups swap" : "", f->margin_expert, f->margin_group, f->bound_expert, f->bound_group);
    }
done:
    free(set);
    free(va);
    free(vb);
    free(w.sa);
    free(w.ka);
    return st;
}

void mla_cmp_format_routing(const mla_cmp_routing_result *r, char *buf, size_t n)
{
    if (!r->n_flipped_tokens)
        snprintf(buf, n, "PASS routing: %lld tokens, no expert flips", (long long)r->n_tokens);
    else
        snprintf(buf, n, "%s routing: %s", r->pass ? "PASS" : "FAIL", r->why);
}

/* ---- logits ---- */

/* log-softmax of x[n] into lp[n]; -1 when the row has NaN, +inf or no finite entry. */
static int log_softmax(const double *x, int64_t n, double *lp)
{
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) || x[i] == INFINITY) return -1;
        if (x[i] > mx) mx = x[i];
    }
    if (mx == -INFINITY) return -1;
    ksum s = {0, 0};
    for (int64_t i = 0; i < n; i++) ksum_add(&s, (long double)exp(x[i] - mx));
    double lse = (double)logl(ksum_val(&s));
    for (int64_t i = 0; i < n; i++) lp[i] = (x[i] - mx) - lse;
    return 0;
}

/* Indices of the k largest x (lower index first on ties). */
static void top_k(const double *x, int64_t n, int k, int64_t *idx)
{
    for (int j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; i++) {
            int taken = 0;
            for (int q = 0; q < j && !taken; q++) taken = idx[q] == i;
            if (!taken && (best < 0 || x[i] > x[best])) best = i;
        }
        idx[j] = best;
    }
}

/* sum p (lp - lq) over entries with p > 0; never below 0 (negatives are rounding). */
static double kl_row(const double *lp, const double *lq, int64_t n)
{
    ksum s = {0, 0};
    for (int64_t i = 0; i < n; i++) {
        double p = exp(lp[i]);
        if (p > 0) ksum_add(&s, (long double)p * ((long double)lp[i] - lq[i]));
    }
    double v = (double)ksum_val(&s);
    return v > 0 ? v : 0;
}

int mla_cmp_log_softmax(const double *x, int64_t n, double *lp) { return log_softmax(x, n, lp); }

mla_status mla_cmp_logits(const mla_tensor *a, const mla_tensor *b, mla_cmp_logits_result *out)
{
    memset(out, 0, sizeof *out);
    char sa[96], sb[96];
    if (a->ndim != 2 || !mla_tensor_same_shape(a, b) || a->shape[1] < 1)
        return mla_errorf(MLA_ERR_SHAPE, "logits %s: shapes %s and %s, expected equal [T, N], N >= 1",
                          tname(a), mla_tensor_shape_str(a, sa, sizeof sa),
                          mla_tensor_shape_str(b, sb, sizeof sb));
    int64_t T = a->shape[0], N = a->shape[1];
    double *va = NULL, *vb = NULL, *la = malloc((size_t)N * sizeof *la),
           *lb = malloc((size_t)N * sizeof *lb);
    mla_status st = la && lb ? MLA_OK : mla_errorf(MLA_ERR_NOMEM, "logits: %lld entries", (long long)N);
    if (!st) st = to_f64(a, &va, tname(a));
    if (!st) st = to_f64(b, &vb, tname(b));
    if (st) goto done;
    out->n_tokens = T;
    out->vocab = N;
    int k5 = N < 5 ? (int)N : 5;
    ksum kab = {0, 0}, kba = {0, 0}, ov = {0, 0};
    int64_t agree = 0;
    for (int64_t t = 0; t < T; t++) {
        const double *xa = va + t * N, *xb = vb + t * N;
        if (log_softmax(xa, N, la) || log_softmax(xb, N, lb)) {
            st = mla_errorf(MLA_ERR_NONFINITE, "logits %s: token %lld has NaN, +inf or no finite "
                            "value in the %s", tname(a), (long long)t,
                            log_softmax(xa, N, la) ? "reference" : "candidate");
            goto done;
        }
        double ab = kl_row(la, lb, N), ba = kl_row(lb, la, N);
        ksum_add(&kab, ab);
        ksum_add(&kba, ba);
        if (ab > out->kl_ab_max || t == 0) {
            out->kl_ab_max = ab;
            out->kl_worst_token = t;
        }
        if (ba > out->kl_ba_max) out->kl_ba_max = ba;
        for (int64_t i = 0; i < N; i++) {
            double dp = fabs(exp(la[i]) - exp(lb[i]));
            if (dp > out->max_dp) out->max_dp = dp;
        }
        int64_t ta[5], tb[5];
        top_k(xa, N, k5, ta);
        top_k(xb, N, k5, tb);
        agree += ta[0] == tb[0];
        int common = 0;
        for (int i = 0; i < k5; i++)
            for (int j = 0; j < k5; j++) common += ta[i] == tb[j];
        ksum_add(&ov, (long double)common / k5);
    }
    if (T > 0) {
        out->kl_ab_mean = (double)(ksum_val(&kab) / T);
        out->kl_ba_mean = (double)(ksum_val(&kba) / T);
        out->top1_agree = (double)agree / (double)T;
        out->top5_overlap = (double)(ksum_val(&ov) / T);
    }
done:
    free(va);
    free(vb);
    free(la);
    free(lb);
    return st;
}

void mla_cmp_format_logits(const mla_cmp_logits_result *r, char *buf, size_t n)
{
    snprintf(buf, n,
             "logits T=%lld N=%lld KL(a||b) mean=%.3e max=%.3e (token %lld) KL(b||a) mean=%.3e "
             "max=%.3e top1=%.4f top5=%.4f max_dp=%.3e",
             (long long)r->n_tokens, (long long)r->vocab, r->kl_ab_mean, r->kl_ab_max,
             (long long)r->kl_worst_token, r->kl_ba_mean, r->kl_ba_max, r->top1_agree,
             r->top5_overlap, r->max_dp);
}

int mla_cmp_noise_floor(double cand_err_vs_fp64, double ref_err_vs_fp64, double k, double abs_slack)
{
    return cand_err_vs_fp64 <= k * ref_err_vs_fp64 + abs_slack;
}
