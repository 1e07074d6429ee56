/* precision.c: what a lower precision costs: each fp8 profile against bf16 (fp8-vs-bf16), and the
 * candidate's error against the fp64 oracle within k times the bf16-emulated reference's own error
 * (noise-floor). */
#include "checks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void chk_fp8_vs_bf16(chk_ctx *c)
{
    chk_run *r = c->r;
    if (c->prof != MLA_PROFILE_FP8KV && c->prof != MLA_PROFILE_FP8DS && c->prof != MLA_PROFILE_FP8W) {
        chk_verdict_skip(r, c->check, "prefill", "not an fp8 profile");
        return;
    }
    mla_dump **bf;
    mla_status st = chk_dumps(r, c->engine, MLA_PROFILE_BF16, c->is_cand, c->g, &c->dp, &bf);
    if (st) chk_verdict_error(r, c->check, "prefill", st);
    else chk_compare_group(r, c->check, "prefill", bf, c->pre, c->g->n, 0);
    if (!c->dec) return;
    if ((st = chk_dumps(r, c->engine, MLA_PROFILE_BF16, c->is_cand, c->g, &c->dd, &bf)))
        chk_verdict_error(r, c->check, "decode", st);
    else
        chk_compare_group(r, c->check, "decode", bf, c->dec, c->g->n, 0);
}

/* The noise floor's routing decision at layer's topk_ids: the oracle's (a) and the candidate's (b)
 * expert sets, each flip judged by the oracle's margins under the rules' route_noise_k, as every
 * other comparison judges routing (dumpcmp.c). A missing rule, bias or router logits leaves the
 * margins unknown, and mla_cmp_routing then calls every flip clear. */
mla_status chk_noise_floor_route(const chk_run *r, const char *check, const mla_dump *a, const mla_dump *b,
                                 int layer, mla_cmp_routing_result *rr)
{
    const mla_tensor *ia = mla_dump_get(a, layer, MLA_TAP_TOPK_IDS), *ib = mla_dump_get(b, layer, MLA_TAP_TOPK_IDS);
    const mla_tensor *la = mla_dump_get(a, layer, MLA_TAP_ROUTER_LOGITS);
    const mla_tensor *lb = mla_dump_get(b, layer, MLA_TAP_ROUTER_LOGITS);
    char key[32];
    snprintf(key, sizeof key, "L%d/topk_ids", layer);
    const mla_rule_limits *rl = mla_rules_match_model(r->rules, key, r->profile, check,
                                                      r->m ? mla_model_source(r->m) : NULL);
    mla_cmp_route_rule rule;
    double *bias = NULL;
    int ok = 0;
    mla_status st = rl ? mla_dcmp_route_rule(r->m, &a->cfg, layer, rl->lim.route_noise_k, &rule, &bias, &ok) : MLA_OK;
    if (!st) st = mla_cmp_routing(ia, ib, la && lb ? la : NULL, la && lb ? lb : NULL, ok ? &rule : NULL, rr);
    free(bias);
    return st;
}

/* Records one judged tap: a metric row (when reporting) and the sequence's worst headroom. */
static void nf_row(chk_run *r, const char *check, int layer, const char *tap, int64_t n, double rel_l2,
                   double hr, const char *worst, int ok, mla_dcmp_result *res)
{
    if (r->rep) {
        mla_rep_row row = {.case_name = r->cs->name, .check = check, .profile = r->profile, .path = "prefill",
                           .layer = layer, .tap = tap, .kv_len = -1, .n = n, .rel_l2 = rel_l2, .headroom = hr,
                           .worst = worst, .pass = ok, .why = ""};
        mla_rep_add_metric(r->rep, &row);
    }
    res->n_compared++;
    if (res->n_compared == 1 || hr > res->worst_headroom) {
        res->worst_headroom = hr;
        if (layer < 0) snprintf(res->worst_tap, sizeof res->worst_tap, "%s", tap);
        else snprintf(res->worst_tap, sizeof res->worst_tap, "L%d/%s", layer, tap);
    }
}

static void nf_fail(mla_dcmp_result *res, int layer, const char *tap, const char *why)
{
    res->n_failed = 1;
    res->first_layer = res->over_layer = layer;
    snprintf(res->first_tap, sizeof res->first_tap, "%s", tap);
    snprintf(res->over_tap, sizeof res->over_tap, "%s", tap);
    snprintf(res->first_why, sizeof res->first_why, "%.*s", (int)sizeof res->first_why - 1, why); /* cut to fit */
}

/* Whether the walk visits tap t at step l of computation order: embed at l = -1, the layer taps of
 * layers 0 .. n_layers - 1, final_norm and logits at l = n_layers. */
static int nf_visits(int l, int n_layers, mla_tap t)
{
    if (l >= 0 && l < n_layers) return mla_tap_is_layer(t);
    return !mla_tap_is_layer(t) && (l < 0) == (t == MLA_TAP_EMBED);
}

/* The routing tap of layer l. Returns 1 when the walk goes on (no flip), 0 when it stops: a clear
 * flip fails the sequence; after a benign one the candidate legitimately took other experts for
 * near-tied tokens, so its later taps differ from fp64 by O(1) and the noise floor cannot judge them. */
static int nf_route(chk_run *r, const char *check, int l, const mla_dump *a, const mla_dump *b,
                    mla_dcmp_result *res, char *extra, size_t n_extra, mla_status *st)
{
    mla_cmp_routing_result rr;
    if ((*st = chk_noise_floor_route(r, check, a, b, l, &rr))) return 0;
    if (!rr.n_flipped_tokens) return 1;
    nf_row(r, check, l, "topk_ids", rr.n_tokens, 0, rr.worst_ratio, "route_margin", rr.pass, res);
    res->flipped_tokens += rr.n_flipped_tokens;
    if (!rr.pass) {
        char why[sizeof rr.why + 16];
        snprintf(why, sizeof why, "routing: %s", rr.why);
        nf_fail(res, l, "topk_ids", why);
    } else {
        snprintf(extra, n_extra,
                 "benign routing flip vs fp64 at layer %d (%lld tokens, worst margin/bound %.3g): later taps not judged",
                 l, (long long)rr.n_flipped_tokens, rr.worst_ratio);
    }
    return 0;
}

mla_status chk_noise_floor_seq(chk_run *r, const char *check, double k, const mla_dump *a, const mla_dump *b,
                               const mla_dump *e, mla_dcmp_result *res, char *extra, size_t n_extra)
{
    memset(res, 0, sizeof *res);
    res->first_layer = res->over_layer = -1;
    res->first_jump = NAN;
    res->kl_mean = -1;
    extra[0] = '\0';
    mla_status st = MLA_OK;
    int go = 1;
    for (int l = -1; l <= b->n_layers && go; l++)
        for (int t = 0; t < MLA_TAP_COUNT && go; t++) {
            if (!nf_visits(l, b->n_layers, (mla_tap)t)) continue;
            int li = l < 0 || l >= b->n_layers ? 0 : l, layer = mla_tap_is_layer((mla_tap)t) ? l : -1;
            const char *name = mla_tap_name((mla_tap)t);
            const mla_tensor *ta = mla_dump_get(a, li, (mla_tap)t);
            const mla_tensor *tb = mla_dump_get(b, li, (mla_tap)t);
            const mla_tensor *te = mla_dump_get(e, li, (mla_tap)t);
            if (!ta || !tb || !te) continue;
            if (t == MLA_TAP_TOPK_IDS) { /* expert sets, judged by margin, not by a floor */
                go = nf_route(r, check, l, a, b, res, extra, n_extra, &st);
                continue;
            }
            mla_cmp_limits none = {0};
            mla_cmp_result rb, re;
            if (mla_cmp_tensor(ta, tb, &none, &rb) || mla_cmp_tensor(ta, te, &none, &re)) continue;
            int ok = mla_cmp_noise_floor(rb.rel_l2, re.rel_l2, k, 1e-12);
            double hr = re.rel_l2 > 0 ? rb.rel_l2 / (k * re.rel_l2) : (rb.rel_l2 > 1e-12 ? INFINITY : 0);
            nf_row(r, check, layer, name, rb.n, rb.rel_l2, hr, "noise-floor", ok, res);
            if (!ok) {
                char why[sizeof res->first_why];
                snprintf(why, sizeof why, "error vs fp64 %.3g > %.3g x reference's %.3g", rb.rel_l2, k, re.rel_l2);
                nf_fail(res, layer, name, why);
                go = 0;
            }
        }
    return st;
}

void chk_noise_floor(chk_ctx *c)
{
    chk_run *r = c->r;
    if (c->prof == MLA_PROFILE_FP64) return;
    mla_dump **oracle, **emu;
    mla_status st = chk_dumps(r, "ref", MLA_PROFILE_FP64, 0, c->g, &c->dp, &oracle);
    if (!st) st = chk_dumps(r, "ref", c->prof, 0, c->g, &c->dp, &emu);
    if (st) {
        chk_verdict_error(r, c->check, "prefill", st);
        return;
    }
    const mla_rule_limits *kl = mla_rules_match(r->rules, "noise-floor-k", r->profile, c->check);
    double k = kl && kl->lim.max_rel > 0 ? kl->lim.max_rel : 3.0;
    /* failures are noted as they come (the first one names the verdict); a passing verdict names the
     * first passing sequence and the first benign flip of any, which may be a later sequence's */
    mla_dcmp_result res, pass;
    char extra[200], note[240] = "";
    int n_pass = 0, n_flip = 0;
    for (int i = 0; i < c->g->n; i++) {
        if ((st = chk_noise_floor_seq(r, c->check, k, oracle[i], c->pre[i], emu[i], &res, extra, sizeof extra))) {
            chk_verdict_error(r, c->check, "prefill", st);
            continue;
        }
        if (res.n_failed) {
            chk_verdict_note(r, c->check, "prefill", &res, NULL);
            continue;
        }
        if (!n_pass++) pass = res;
        if (extra[0] && !n_flip++) snprintf(note, sizeof note, "%s", extra);
    }
    if (n_flip > 1) {
        size_t m = strlen(note);
        snprintf(note + m, sizeof note - m, " (%d of %d sequences)", n_flip, c->g->n);
    }
    if (n_pass) chk_verdict_note(r, c->check, "prefill", &pass, note[0] ? note : NULL);
}
