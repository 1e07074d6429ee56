/* precision.c: what a lower precision costs: each fp8 profile against bf16 (fp8-vs-bf16), and the
 * candidate's error against the fp64 oracle within k times the bf16-emulated reference's own error
 * (noise-floor). */
#include "checks.h"

#include <math.h>

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

/* One sequence: every tap of the candidate (b) and of the emulating reference (e) against the
 * oracle (a); the first tap over the floor fails the sequence. */
static void noise_floor_one(chk_ctx *c, double k, const mla_dump *a, const mla_dump *b, const mla_dump *e)
{
    chk_run *r = c->r;
    mla_dcmp_result res = {0};
    int bad = 0;
    char why[320] = "";
    for (int l = -1; l < b->n_layers && !bad; l++)
        for (int t = 0; t < MLA_TAP_COUNT && !bad; t++) {
            if ((l < 0) == mla_tap_is_layer((mla_tap)t) || t == MLA_TAP_TOPK_IDS) continue;
            const mla_tensor *ta = mla_dump_get(a, l < 0 ? 0 : l, (mla_tap)t);
            const mla_tensor *tb = mla_dump_get(b, l < 0 ? 0 : l, (mla_tap)t);
            const mla_tensor *te = mla_dump_get(e, l < 0 ? 0 : l, (mla_tap)t);
            if (!ta || !tb || !te) continue;
            mla_cmp_limits none = {0};
            mla_cmp_result rb, re;
            if (mla_cmp_tensor(ta, tb, &none, &rb) || mla_cmp_tensor(ta, te, &none, &re)) continue;
            int ok = mla_cmp_noise_floor(rb.rel_l2, re.rel_l2, k, 1e-12);
            res.n_compared++;
            double hr = re.rel_l2 > 0 ? rb.rel_l2 / (k * re.rel_l2) : (rb.rel_l2 > 1e-12 ? INFINITY : 0);
            if (r->rep) {
                mla_rep_row row = {.case_name = r->cs->name, .check = c->check, .profile = r->profile,
                                   .path = "prefill", .layer = l, .tap = mla_tap_name((mla_tap)t),
                                   .kv_len = -1, .n = rb.n, .rel_l2 = rb.rel_l2, .headroom = hr,
                                   .worst = "noise-floor", .pass = ok, .why = ""};
                mla_rep_add_metric(r->rep, &row);
            }
            if (!ok) {
                bad = 1;
                res.n_failed = 1;
                res.first_layer = l;
                snprintf(res.first_tap, sizeof res.first_tap, "%s", mla_tap_name((mla_tap)t));
                snprintf(why, sizeof why, "error vs fp64 %.3g > %.3g x reference's %.3g", rb.rel_l2, k, re.rel_l2);
                snprintf(res.first_why, sizeof res.first_why, "%s", why);
            }
        }
    chk_verdict_note(r, c->check, "prefill", &res, NULL);
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
    for (int i = 0; i < c->g->n; i++) noise_floor_one(c, k, oracle[i], c->pre[i], emu[i]);
}
