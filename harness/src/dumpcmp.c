/* dumpcmp.c: dump-against-dump comparison in computation order (embed, each layer's taps in the
 * order of taps.h, final_norm, logits), so the first failing tap is the first divergence. */
#include "mlacheck/dumpcmp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A copy of t with only the token rows r in [lo, hi) whose mask[r] == 0. */
static mla_status rows_subset(const mla_tensor *t, int lo, int hi, const unsigned char *mask, mla_tensor **out)
{
    int64_t rows = t->shape[0], per = rows ? mla_tensor_numel(t) / rows : 0;
    int64_t keep = 0;
    for (int64_t r = lo; r < hi && r < rows; r++) keep += !(mask && mask[r]);
    int64_t shape[MLA_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[0] = keep;
    mla_status st = mla_tensor_new(out, t->dtype, t->ndim, shape, t->name);
    if (st) return st;
    size_t es = mla_dtype_size(t->dtype), rb = (size_t)per * es;
    int64_t k = 0;
    for (int64_t r = lo; r < hi && r < rows; r++)
        if (!(mask && mask[r])) memcpy((char *)(*out)->data + (size_t)k++ * rb, (const char *)t->data + (size_t)r * rb, rb);
    return MLA_OK;
}

/* Per token, (id, weight) pairs sorted by id, so engines that order top-k differently compare. */
static void canonical_topk(mla_tensor *ids, mla_tensor *w)
{
    int64_t T = ids->shape[0], K = ids->ndim > 1 ? ids->shape[1] : 1;
    int32_t *id = ids->data;
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 1; i < K; i++)
            for (int64_t j = i; j > 0 && id[t * K + j - 1] > id[t * K + j]; j--) {
                int32_t x = id[t * K + j];
                id[t * K + j] = id[t * K + j - 1];
                id[t * K + j - 1] = x;
                if (w) {
                    char tmp[8];
                    size_t es = mla_dtype_size(w->dtype);
                    char *p = (char *)w->data + (size_t)(t * K + j) * es, *q = p - es;
                    memcpy(tmp, p, es);
                    memcpy(p, q, es);
                    memcpy(q, tmp, es);
                }
            }
}

typedef struct {
    const mla_dcmp_ctx *c;
    mla_dcmp_result *out;
    unsigned char *mask; /* tokens whose routing flipped at or before the current point */
    unsigned char *both; /* scratch: mask plus the rows a partial tap lacks on either side */
    int partial;         /* 1 while mask is both (bit_one then compares rows, not whole tensors) */
    int lo, hi;
    int ref_layers; /* the reference's layer count: a candidate layer past it is extra, not missing */
    /* the first divergence by noise (dumpcmp.h): taps seen so far, the largest headroom before the
     * current tap, the earliest standing-out tap and the first tap over its limit */
    int idx;
    double prior_max;
    int so_idx, so_layer;
    char so_tap[32];
    double so_h, so_jump, so_rel_l2;
    int over_idx;
    char over_why[320];
} dcmp_state;

/* Rules see layer taps as "L<layer>/<tap>" and global taps by name, so a rule can budget one layer
 * (e.g. layer 0, where engines that share rounding points agree almost bit for bit). */
static const mla_rule_limits *rule_for(const dcmp_state *s, int layer, const char *tap)
{
    char key[64];
    if (layer >= 0)
        snprintf(key, sizeof key, "L%d/%s", layer, tap);
    else
        snprintf(key, sizeof key, "%s", tap);
    return mla_rules_match_model(s->c->rules, key, s->c->profile, s->c->check,
                                 s->c->model ? mla_model_source(s->c->model) : NULL);
}

/* The first failure is the first tap over its limit: later ones only count. */
static void note_fail(dcmp_state *s, int layer, const char *tap, const char *why)
{
    mla_dcmp_result *o = s->out;
    if (o->n_failed == 0) {
        o->over_layer = layer;
        snprintf(o->over_tap, sizeof o->over_tap, "%s", tap);
        snprintf(s->over_why, sizeof s->over_why, "%s", why);
        s->over_idx = s->idx;
    }
    o->n_failed++;
}

/* One tap in computation order, for the standing-out rule (dumpcmp.h): the earliest tap whose headroom
 * is >= MLA_DCMP_STANDOUT_MIN and >= MLA_DCMP_STANDOUT_JUMP x every headroom before it, some of which
 * is not 0: taps that agree exactly (embed, always) say nothing about the comparison's noise, and the
 * first inexact tap at 0.8x a hand-set limit is ordinary rounding, not a divergence (measured: a
 * numpy bf16 candidate's L0 attn_norm at 0.82x while its planted error sat at attn_core). Routing taps
 * are judged by margin, not by a limit, and take no part. */
static void note_noise(dcmp_state *s, int layer, const char *tap, double headroom, double rel_l2, int routing)
{
    s->idx++;
    if (routing || isnan(headroom)) return;
    if (s->so_idx == 0 && s->prior_max > 0 && headroom >= MLA_DCMP_STANDOUT_MIN &&
        headroom >= MLA_DCMP_STANDOUT_JUMP * s->prior_max) {
        s->so_idx = s->idx;
        s->so_layer = layer;
        snprintf(s->so_tap, sizeof s->so_tap, "%s", tap);
        s->so_h = headroom;
        s->so_jump = headroom / s->prior_max;
        s->so_rel_l2 = rel_l2;
    }
    if (headroom > s->prior_max) s->prior_max = headroom;
}

/* Names the first divergence once every tap is seen: the earliest standing-out tap at or before the
 * first tap over its limit, else that tap (dumpcmp.h). */
static void name_first(dcmp_state *s)
{
    mla_dcmp_result *o = s->out;
    if (o->n_failed == 0) return;
    int so = s->so_idx && s->so_idx <= s->over_idx;
    o->first_stands_out = so;
    o->first_jump = so ? s->so_jump : NAN;
    if (!so || s->so_idx == s->over_idx) {
        o->first_layer = o->over_layer;
        snprintf(o->first_tap, sizeof o->first_tap, "%s", o->over_tap);
        snprintf(o->first_why, sizeof o->first_why, "%s", s->over_why);
        return;
    }
    o->first_layer = s->so_layer;
    snprintf(o->first_tap, sizeof o->first_tap, "%s", s->so_tap);
    char over[64];
    if (o->over_layer >= 0) snprintf(over, sizeof over, "layer %d tap %s", o->over_layer, o->over_tap);
    else snprintf(over, sizeof over, "tap %s", o->over_tap);
    size_t n = (size_t)snprintf(o->first_why, sizeof o->first_why,
                                "stands out from its noise: rel_l2 %.3e at %.2fx its limit, %.3gx the largest "
                                "headroom before it; first over its limit: %s: ",
                                s->so_rel_l2, s->so_h, s->so_jump, over);
    if (n + 1 < sizeof o->first_why) { /* the over-limit reason as far as it fits */
        size_t m = strnlen(s->over_why, sizeof o->first_why - n - 1);
        memcpy(o->first_why + n, s->over_why, m);
        o->first_why[n + m] = '\0';
    }
}

static void note_worst(mla_dcmp_result *o, int layer, const char *tap, double headroom, int first)
{
    if (headroom > o->worst_headroom || first) {
        o->worst_headroom = headroom;
        if (layer < 0)
            snprintf(o->worst_tap, sizeof o->worst_tap, "%s", tap);
        else
            snprintf(o->worst_tap, sizeof o->worst_tap, "L%d/%s", layer, tap);
    }
}

static void note_result(dcmp_state *s, int layer, const char *tap, const mla_cmp_result *r, int routing)
{
    mla_dcmp_result *o = s->out;
    o->n_compared++;
    note_worst(o, layer, tap, r->headroom, o->n_compared == 1);
    note_noise(s, layer, tap, r->headroom, r->rel_l2, routing);
    if (!r->pass) note_fail(s, layer, tap, r->why);
}

/* kl: the logits' mean KL, or NULL when none was computed. */
static mla_status add_row(dcmp_state *s, int layer, const char *tap, const mla_cmp_result *r, const char *worst,
                          const double *kl)
{
    const mla_dcmp_ctx *c = s->c;
    if (!c->on_row) return MLA_OK;
    mla_dcmp_row row = {.ctx = c, .layer = layer, .tap = tap, .r = r, .worst = worst, .has_kl = kl != NULL,
                        .kl_mean = kl ? *kl : 0};
    return c->on_row(c->user, &row);
}

mla_status mla_dcmp_route_rule(mla_model *model, const mla_config *cf, int layer, double noise_k,
                               mla_cmp_route_rule *rule, double **bias, int *ok)
{
    *rule = (mla_cmp_route_rule){.n_group = cf->topk_method != MLA_TOPK_GREEDY ? cf->n_group : 1,
                                 .topk_group = cf->topk_group,
                                 .sigmoid = cf->scoring_func == MLA_SCORE_SIGMOID,
                                 .group_top2 = cf->has_e_score_correction_bias,
                                 .noise_k = noise_k};
    *bias = NULL;
    *ok = 1;
    if (!cf->has_e_score_correction_bias) return MLA_OK;
    const mla_tensor *t = NULL;
    char name[96];
    snprintf(name, sizeof name, "model.layers.%d.mlp.gate.e_score_correction_bias", layer);
    if (!model || mla_model_tensor(model, name, &t) || !t) {
        *ok = 0;
        return MLA_OK;
    }
    int64_t n = mla_tensor_numel(t);
    if (!(*bias = malloc((size_t)(n > 0 ? n : 1) * sizeof(double))))
        return mla_errorf(MLA_ERR_NOMEM, "compare: %s: %lld values", name, (long long)n);
    for (int64_t i = 0; i < n; i++) (*bias)[i] = mla_tensor_get_f64(t, i);
    rule->bias = *bias;
    rule->n_bias = n;
    return MLA_OK;
}

/* The routing rule of layer's router from the reference dump's config and the rule's route_noise_k. */
static mla_status route_rule(const dcmp_state *s, int layer, const mla_dump *a, const mla_rule_limits *rl,
                             mla_cmp_route_rule *rule, double **bias, int *ok)
{
    return mla_dcmp_route_rule(s->c->model, &a->cfg, layer, rl->lim.route_noise_k, rule, bias, ok);
}

/* The routing tap: expert sets per token; a flip fails unless the reference's decision was a near
 * tie within the observed score noise (compare.h). headroom: the worst flipped token's margin over
 * its bound (<= 1 benign, INFINITY for a clear flip). */
static mla_status cmp_routing(dcmp_state *s, int layer, const mla_dump *a, const mla_dump *b)
{
    const mla_tensor *ia = mla_dump_get(a, layer, MLA_TAP_TOPK_IDS), *ib = mla_dump_get(b, layer, MLA_TAP_TOPK_IDS);
    if (!ia || !ib) return MLA_OK;
    const mla_rule_limits *rl = rule_for(s, layer, "topk_ids");
    if (!rl)
        return mla_errorf(MLA_ERR_NOT_FOUND, "rules %s: no rule for tap topk_ids, profile %s, check %s",
                          mla_rules_origin(s->c->rules), s->c->profile, s->c->check);
    mla_tensor *xa = NULL, *xb = NULL, *sa = NULL, *sb = NULL;
    double *bias = NULL;
    mla_status st;
    if ((st = rows_subset(ia, s->lo, s->hi, s->mask, &xa)) || (st = rows_subset(ib, s->lo, s->hi, s->mask, &xb)))
        goto done;
    const mla_tensor *ra = mla_dump_get(a, layer, MLA_TAP_ROUTER_LOGITS), *rb = mla_dump_get(b, layer, MLA_TAP_ROUTER_LOGITS);
    if (ra && rb && ((st = rows_subset(ra, s->lo, s->hi, s->mask, &sa)) || (st = rows_subset(rb, s->lo, s->hi, s->mask, &sb))))
        goto done;
    mla_cmp_route_rule rule;
    int have_rule;
    if ((st = route_rule(s, layer, a, rl, &rule, &bias, &have_rule))) goto done;
    mla_cmp_routing_result rr;
    if ((st = mla_cmp_routing(xa, xb, sa, sb, have_rule ? &rule : NULL, &rr))) goto done;
    char why[400] = "";
    if (rr.n_flipped_tokens) snprintf(why, sizeof why, "routing: %s", rr.why);
    mla_cmp_result r = {.n = rr.n_tokens, .headroom = rr.worst_ratio, .pass = rr.pass};
    snprintf(r.why, sizeof r.why, "%s", why);
    if ((st = add_row(s, layer, "topk_ids", &r, "route_margin", NULL))) goto done;
    note_result(s, layer, "topk_ids", &r, 1);
    s->out->flipped_tokens += rr.n_flipped_tokens;
    /* mask the flipped tokens from here on: their expert outputs legitimately differ */
    if (rr.n_flipped_tokens) {
        const int32_t *pa = ia->data, *pb = ib->data;
        int64_t K = ia->shape[1];
        for (int64_t t = s->lo; t < s->hi; t++) {
            if (s->mask[t]) continue;
            for (int64_t i = 0; i < K; i++) {
                int found = 0;
                for (int64_t j = 0; j < K; j++) found |= pa[t * K + i] == pb[t * K + j];
                if (!found) s->mask[t] = 1;
            }
        }
    }
done:
    mla_tensor_free(xa); mla_tensor_free(xb); mla_tensor_free(sa); mla_tensor_free(sb);
    free(bias);
    return st;
}

static mla_status cmp_one(dcmp_state *s, int layer, mla_tap tap, const mla_tensor *ta, const mla_tensor *tb)
{
    const char *name = mla_tap_name(tap);
    const mla_rule_limits *rl = rule_for(s, layer, name);
    if (!rl)
        return mla_errorf(MLA_ERR_NOT_FOUND, "rules %s: no rule for tap %s, profile %s, check %s",
                          mla_rules_origin(s->c->rules), name, s->c->profile, s->c->check);
    if (!mla_tensor_same_shape(ta, tb)) {
        char sa[64], sb[64], why[200];
        snprintf(why, sizeof why, "shape %s vs %s", mla_tensor_shape_str(ta, sa, sizeof sa),
                 mla_tensor_shape_str(tb, sb, sizeof sb));
        mla_cmp_result r = {.pass = 0, .headroom = INFINITY};
        snprintf(r.why, sizeof r.why, "%s", why);
        note_result(s, layer, name, &r, 0);
        return add_row(s, layer, name, &r, "shape", NULL);
    }
    mla_tensor *xa = NULL, *xb = NULL;
    mla_status st;
    if ((st = rows_subset(ta, s->lo, s->hi, s->mask, &xa)) || (st = rows_subset(tb, s->lo, s->hi, s->mask, &xb))) {
        mla_tensor_free(xa);
        return st;
    }
    mla_cmp_result r;
    st = mla_cmp_tensor(xa, xb, &rl->lim, &r);
    if (!st) {
        note_result(s, layer, name, &r, 0);
        mla_cmp_logits_result lr;
        int has_kl = tap == MLA_TAP_LOGITS && xa->shape[0] > 0 && mla_cmp_logits(xa, xb, &lr) == MLA_OK;
        if (has_kl) s->out->kl_mean = lr.kl_ab_mean;
        st = add_row(s, layer, name, &r, NULL, has_kl ? &lr.kl_ab_mean : NULL);
    }
    mla_tensor_free(xa);
    mla_tensor_free(xb);
    return st;
}

/* What a dump of the model must hold (golden/README.md, "Completeness"): every layer's block output
 * and the logits. Every other tap is optional: an engine without MLA_FEAT_TAPS_INTERNAL, or a path
 * that does not make a tap (q_absorbed outside decode), legitimately lacks it. */
static int tap_required(mla_tap t)
{
    return t == MLA_TAP_OUT || t == MLA_TAP_LOGITS;
}

/* A required tap absent from one side: a failure in computation order, with a row like a shape
 * mismatch, so the first missing tap is the first divergence. */
static mla_status note_missing(dcmp_state *s, int layer, const char *tap, const char *why)
{
    mla_cmp_result r = {.pass = 0, .headroom = INFINITY};
    snprintf(r.why, sizeof r.why, "%s", why);
    note_worst(s->out, layer, tap, INFINITY, 0);
    note_noise(s, layer, tap, INFINITY, NAN, 0);
    note_fail(s, layer, tap, r.why);
    return add_row(s, layer, tap, &r, "missing", NULL);
}

/* Whether (layer, t) is compared: 1 both sides hold it; 0 skipped (optional and absent, noted when
 * only the candidate lacks it); a required tap absent from either side fails through *st. */
static int tap_present(dcmp_state *s, int layer, mla_tap t, const mla_tensor *ta, const mla_tensor *tb,
                       mla_status *st)
{
    *st = MLA_OK;
    if (ta && tb) return 1;
    char key[48], why[200];
    if (layer >= 0)
        snprintf(key, sizeof key, "L%d/%s", layer, mla_tap_name(t));
    else
        snprintf(key, sizeof key, "%s", mla_tap_name(t));
    if (!tap_required(t)) {
        if (ta && !tb && s->out->n_optional_missing++ == 0)
            snprintf(s->out->first_optional_missing, sizeof s->out->first_optional_missing, "%s", key);
        return 0;
    }
    if (!ta && layer >= s->ref_layers)
        snprintf(why, sizeof why, "the candidate holds %s; the reference's model has %d layers", key, s->ref_layers);
    else if (!ta)
        snprintf(why, sizeof why, "the reference lacks %s, which every dump of this model must hold", key);
    else
        snprintf(why, sizeof why, "the candidate lacks %s, which the reference holds", key);
    *st = note_missing(s, layer, mla_tap_name(t), why);
    return 0;
}

/* A tap some calls of a path did not make (mla_dump_rows: q_absorbed on the decode path holds the
 * decoded rows only) is compared on the rows both sides hold; the rows either side lacks are masked
 * for this tap only. Missing data is never a pass: rows the reference holds and the candidate lacks
 * count as an optional tap missing, and no row in common skips the tap like an absent optional one.
 * Returns 1 when rows remain (s->mask is then s->both until the caller restores it). */
static int partial_rows(dcmp_state *s, int layer, mla_tap t, const unsigned char *ha, const unsigned char *hb)
{
    int any = 0, lacks = 0;
    for (int r = s->lo; r < s->hi; r++) {
        int a = !ha || ha[r], b = !hb || hb[r];
        s->both[r] = s->mask[r] || !a || !b;
        any |= !s->both[r];
        lacks |= a && !b;
    }
    if (lacks && s->out->n_optional_missing++ == 0) {
        if (layer >= 0)
            snprintf(s->out->first_optional_missing, sizeof s->out->first_optional_missing, "L%d/%s", layer, mla_tap_name(t));
        else
            snprintf(s->out->first_optional_missing, sizeof s->out->first_optional_missing, "%s", mla_tap_name(t));
    }
    return any;
}

static mla_status dcmp_walk(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out,
                            mla_status (*one)(dcmp_state *, int, mla_tap, const mla_tensor *, const mla_tensor *),
                            int routing)
{
    memset(out, 0, sizeof *out);
    out->first_layer = out->over_layer = -1;
    out->first_jump = NAN;
    out->kl_mean = -1;
    int rows = a->tokens ? (int)a->tokens->shape[0] : 0;
    dcmp_state s = {.c = c, .out = out, .lo = c->row_lo, .hi = c->row_hi > 0 ? c->row_hi : rows,
                    .ref_layers = a->n_layers};
    s.mask = calloc((size_t)rows + 1, 1);
    s.both = calloc((size_t)rows + 1, 1);
    if (!s.mask || !s.both) {
        free(s.mask);
        free(s.both);
        return mla_errorf(MLA_ERR_NOMEM, "compare: mask");
    }
    mla_status st = MLA_OK;
    /* embed, then each layer, then final_norm and logits; layers past either side's count are
     * walked too, so a missing or extra layer fails on its block output */
    const mla_tensor *ta = mla_dump_get(a, 0, MLA_TAP_EMBED), *tb = mla_dump_get(b, 0, MLA_TAP_EMBED);
    if (tap_present(&s, -1, MLA_TAP_EMBED, ta, tb, &st) && (st = one(&s, -1, MLA_TAP_EMBED, ta, tb))) goto done;
    if (st) goto done;
    int n_layers = a->n_layers > b->n_layers ? a->n_layers : b->n_layers;
    for (int l = 0; l < n_layers; l++) {
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            if (!mla_tap_is_layer((mla_tap)t)) continue;
            ta = mla_dump_get(a, l, (mla_tap)t);
            tb = mla_dump_get(b, l, (mla_tap)t);
            if (!tap_present(&s, l, (mla_tap)t, ta, tb, &st)) {
                if (st) goto done;
                continue;
            }
            if (routing && t == MLA_TAP_TOPK_IDS) {
                if ((st = cmp_routing(&s, l, a, b))) goto done;
                continue;
            }
            if (routing && t == MLA_TAP_TOPK_WEIGHTS) {
                /* compare weights in id order */
                const mla_tensor *ia = mla_dump_get(a, l, MLA_TAP_TOPK_IDS), *ib = mla_dump_get(b, l, MLA_TAP_TOPK_IDS);
                mla_tensor *ca = NULL, *cb = NULL, *wa = NULL, *wb = NULL;
                if (ia && ib && !mla_tensor_clone(ia, &ca) && !mla_tensor_clone(ib, &cb) &&
                    !mla_tensor_clone(ta, &wa) && !mla_tensor_clone(tb, &wb)) {
                    canonical_topk(ca, wa);
                    canonical_topk(cb, wb);
                    st = one(&s, l, (mla_tap)t, wa, wb);
                }
                mla_tensor_free(ca); mla_tensor_free(cb); mla_tensor_free(wa); mla_tensor_free(wb);
                if (st) goto done;
                continue;
            }
            const unsigned char *ha = mla_dump_rows(a, l, (mla_tap)t), *hb = mla_dump_rows(b, l, (mla_tap)t);
            if (ha || hb) { /* the only partial taps are layer taps made by one form (taps.h 'Q'/'M') */
                if (!partial_rows(&s, l, (mla_tap)t, ha, hb)) continue;
                unsigned char *keep = s.mask;
                s.mask = s.both;
                s.partial = 1;
                st = one(&s, l, (mla_tap)t, ta, tb);
                s.mask = keep;
                s.partial = 0;
                if (st) goto done;
                continue;
            }
            if ((st = one(&s, l, (mla_tap)t, ta, tb))) goto done;
        }
    }
    for (int t = MLA_TAP_FINAL_NORM; t <= MLA_TAP_LOGITS; t++) {
        ta = mla_dump_get(a, 0, (mla_tap)t);
        tb = mla_dump_get(b, 0, (mla_tap)t);
        if (tap_present(&s, -1, (mla_tap)t, ta, tb, &st) && (st = one(&s, -1, (mla_tap)t, ta, tb))) goto done;
        if (st) goto done;
    }
    if (out->n_compared == 0 && out->n_failed == 0) {
        /* two dumps with nothing in common prove nothing */
        char why[160];
        snprintf(why, sizeof why, "nothing was compared: the dumps hold no tap in common (%d and %d layers)",
                 a->n_layers, b->n_layers);
        note_fail(&s, -1, "none", why);
    }
    name_first(&s);
done:
    free(s.mask);
    free(s.both);
    return st;
}

mla_status mla_dcmp(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out)
{
    return dcmp_walk(c, a, b, out, cmp_one, 1);
}

static mla_status bit_one(dcmp_state *s, int layer, mla_tap tap, const mla_tensor *ta, const mla_tensor *tb)
{
    if (s->partial && mla_tensor_same_shape(ta, tb)) { /* the rows both hold (partial_rows) */
        mla_tensor *xa = NULL, *xb = NULL;
        s->partial = 0;
        mla_status st = rows_subset(ta, s->lo, s->hi, s->mask, &xa);
        if (!st) st = rows_subset(tb, s->lo, s->hi, s->mask, &xb);
        if (!st) st = bit_one(s, layer, tap, xa, xb);
        s->partial = 1;
        mla_tensor_free(xa);
        mla_tensor_free(xb);
        return st;
    }
    const char *name = mla_tap_name(tap);
    mla_cmp_result r = {.n = mla_tensor_numel(ta), .pass = 1};
    if (!mla_tensor_same_shape(ta, tb) || ta->dtype != tb->dtype) {
        r.pass = 0;
        snprintf(r.why, sizeof r.why, "shape or dtype differs");
    } else {
        size_t es = mla_dtype_size(ta->dtype);
        const unsigned char *pa = ta->data, *pb = tb->data;
        for (int64_t i = 0; i < r.n; i++)
            if (memcmp(pa + i * es, pb + i * es, es) != 0) {
                if (r.pass) {
                    r.worst_index = i;
                    r.worst_ref = mla_load_f64(ta->dtype, pa + i * es);
                    r.worst_cand = mla_load_f64(tb->dtype, pb + i * es);
                }
                r.pass = 0;
                r.n_mismatch++;
            }
        if (!r.pass)
            snprintf(r.why, sizeof r.why, "%lld of %lld elements differ bitwise (first at %lld: %.17g vs %.17g)",
                     (long long)r.n_mismatch, (long long)r.n, (long long)r.worst_index, r.worst_ref, r.worst_cand);
    }
    r.headroom = r.pass ? 0 : INFINITY;
    note_result(s, layer, name, &r, 0);
    return add_row(s, layer, name, &r, "bitwise", NULL);
}

mla_status mla_dcmp_bitwise(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out)
{
    return dcmp_walk(c, a, b, out, bit_one, 0);
}
